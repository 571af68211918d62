//===- LowerFlagsTest.cpp - The lower phase's flags, read and written ----===//
//
// lowerFlags() (Pipeline.h) is the one declaration of the lower phase's
// flags: trainc makes its --NAME flags from it and the recompute pass reads
// its `lower` option with it. Each flag must reach its own LowerOptions
// field through formatLowerOptions and back through parseLowerOptions,
// and a malformed text must be refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace {

using trainc::LowerFlag;
using trainc::LowerOptions;

/// Each flag's value in `o`, in table order, as text.
std::vector<std::string> values(const LowerOptions &o) {
  std::vector<std::string> out;
  for (const LowerFlag &flag : trainc::lowerFlags())
    out.push_back(trainc::formatLowerFlag(flag, o));
  return out;
}

TEST(LowerFlags, EachFlagReachesItsOwnFieldAndBack) {
  std::set<std::string> names;
  std::vector<decltype(LowerFlag::field)> fields;
  for (const LowerFlag &flag : trainc::lowerFlags()) {
    SCOPED_TRACE(flag.name.str());
    EXPECT_TRUE(names.insert(flag.name.str()).second) << "a second entry";
    EXPECT_EQ(std::count(fields.begin(), fields.end(), flag.field), 0)
        << "a field another flag has";
    fields.push_back(flag.field);
    EXPECT_FALSE(flag.help.empty());
    // Only this flag away from its default.
    LowerOptions changed;
    if (auto *field = std::get_if<bool LowerOptions::*>(&flag.field))
      changed.**field = !(changed.**field);
    else
      changed.*std::get<int64_t LowerOptions::*>(flag.field) = 0;
    std::vector<std::string> want = values(changed);
    ASSERT_NE(want, values(LowerOptions{})) << "the change is visible";
    std::string error;
    std::optional<LowerOptions> back =
        trainc::parseLowerOptions(trainc::formatLowerOptions(changed), error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(values(*back), want);
    // Named alone, it changes only its field.
    std::string alone =
        flag.name.str() + "=" + want[&flag - trainc::lowerFlags().begin()];
    back = trainc::parseLowerOptions(alone, error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(values(*back), want);
  }
  std::string error;
  std::optional<LowerOptions> defaults = trainc::parseLowerOptions("", error);
  ASSERT_TRUE(defaults) << error;
  EXPECT_EQ(values(*defaults), values(LowerOptions{}));
}

TEST(LowerFlags, MalformedTextIsRefusedWithTheReason) {
  const std::pair<const char *, const char *> cases[] = {
      {"fuse-elementwise=false,,pad-classes=0", "an empty NAME=VALUE pair"},
      {"pad-classes=0,", "an empty NAME=VALUE pair"},
      {"pad-classes=0,pad-classes=64", "'pad-classes' is given twice"},
      {"fuse-everything=true", "'fuse-everything' is none of fuse-elementwise"},
      {"qkv-in-place", "qkv-in-place='' is not true, false, 1 or 0"},
      {"attention-stats=yes", "attention-stats='yes' is not true, false"},
      {"pad-classes=0x40", "pad-classes='0x40' is not an integer"},
      {"pad-classes=65537", "pad-classes must be in [0, 65536]"},
  };
  for (const auto &[text, reason] : cases) {
    std::string error;
    EXPECT_FALSE(trainc::parseLowerOptions(text, error)) << text;
    EXPECT_NE(error.find(reason), std::string::npos) << text << ": " << error;
  }
}

} // namespace
