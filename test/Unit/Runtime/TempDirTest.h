//===- TempDirTest.h - A test fixture with a directory of its own -*- C++
//-*-===//
//
// Tests of files (readers, writers, exporters) each get a fresh directory
// under GoogleTest's temporary directory, removed after the test.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TEST_UNIT_RUNTIME_TEMPDIRTEST_H
#define TRAINC_TEST_UNIT_RUNTIME_TEMPDIRTEST_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace trainc::testing {

class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "trainc-test-XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

} // namespace trainc::testing

#endif // TRAINC_TEST_UNIT_RUNTIME_TEMPDIRTEST_H
