#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"

using namespace llmbench;

namespace {
constexpr const char* kVar = "LLMBENCH_TEST_SWITCH";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Switch, ValueIndexWithTheFirstAsDefault) {
  unsetenv(kVar);
  EXPECT_EQ(env_switch(kVar, {"auto", "simt", "mma"}), 0u);
  setenv(kVar, "", 1);
  EXPECT_EQ(env_switch(kVar, {"auto", "simt", "mma"}), 0u);
  setenv(kVar, "mma", 1);
  EXPECT_EQ(env_switch(kVar, {"auto", "simt", "mma"}), 2u);
  setenv(kVar, "auto", 1);
  EXPECT_EQ(env_switch(kVar, {"auto", "simt", "mma"}), 0u);
  setenv(kVar, "MMA", 1);  // exact text only
  EXPECT_EQ(message_of([] { env_switch(kVar, {"auto", "simt", "mma"}); }),
            "LLMBENCH_TEST_SWITCH must be auto, simt or mma, got 'MMA'");
  setenv(kVar, "2", 1);
  EXPECT_EQ(message_of([] { env_switch(kVar, {"1", "0"}); }), "LLMBENCH_TEST_SWITCH must be 1 or 0, got '2'");
  unsetenv(kVar);
}

TEST(Switch, IntegerInItsRange) {
  unsetenv(kVar);
  EXPECT_EQ(env_int(kVar, 0, 8), 0);
  EXPECT_EQ(env_int(kVar, 0, 8, -1), -1);
  setenv(kVar, "8", 1);
  EXPECT_EQ(env_int(kVar, 0, 8), 8);
  setenv(kVar, "9", 1);
  EXPECT_EQ(message_of([] { env_int(kVar, 0, 8); }), "LLMBENCH_TEST_SWITCH must be 0 … 8, got '9'");
  setenv(kVar, "4x", 1);
  EXPECT_THROW(env_int(kVar, 0, 8), UsageError);
  setenv(kVar, "-1", 1);
  EXPECT_THROW(env_int(kVar, 0, 8), UsageError);
  unsetenv(kVar);
}
