//===- StatusTest.cpp - trainc::Status ------------------------------------===//

#include "base/Status.h"

#include <gtest/gtest.h>

namespace trainc {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.toString(), "ok");
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  Status s = notFound("tensor 'wte' is not in the checkpoint");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.toString(), "not found: tensor 'wte' is not in the checkpoint");
}

Status failsAtSecond(int &reached) {
  reached = 1;
  TRAINC_RETURN_IF_ERROR(okStatus());
  reached = 2;
  TRAINC_RETURN_IF_ERROR(invalidArgument("second"));
  reached = 3;
  return okStatus();
}

TEST(Status, ReturnIfErrorStopsAtTheFirstError) {
  int reached = 0;
  Status s = failsAtSecond(reached);
  EXPECT_EQ(reached, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "second");
}

TEST(Status, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c)
    EXPECT_STRNE(statusCodeName(static_cast<StatusCode>(c)),
                 "unknown status code");
}

} // namespace
} // namespace trainc
