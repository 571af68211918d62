//===- CudaProbeTest.cpp - The CUDA device probe and smoke test -----------===//
//
// Runs on every machine where the CUDA device is built. Without a GPU the
// probe must report `unavailable` cleanly (never crash) and the kernel test
// is skipped, which ctest shows as "Skipped", not "Passed".
//
//===----------------------------------------------------------------------===//

#include "cuda/Probe.h"

#include <gtest/gtest.h>

namespace trainc::cuda {
namespace {

TEST(CudaProbe, NcclIsLinkedAndReportsVersion2) {
  int version = ncclVersionCode();
  // NCCL encodes 2.x.y as 20000 + x * 100 + y (x >= 9) or 2000 + ... before.
  EXPECT_GE(version, 2000) << "ncclGetVersion failed or returned " << version;
}

TEST(CudaProbe, ReportsDeviceOrUnavailable) {
  DeviceInfo info;
  Status s = probeCuda(info);
  if (s.ok()) {
    EXPECT_GE(info.deviceCount, 1);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.computeMajor, 7);
  } else {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
    EXPECT_NE(s.message().find("no CUDA device"), std::string::npos)
        << s.toString();
  }
}

TEST(CudaProbe, KernelAndCublasGiveExpectedValues) {
  DeviceInfo info;
  Status probe = probeCuda(info);
  if (!probe.ok())
    GTEST_SKIP() << "needs a CUDA device: " << probe.toString();
  Status s = runCudaSmokeTest();
  EXPECT_TRUE(s.ok()) << s.toString();
}

} // namespace
} // namespace trainc::cuda
