// nm.logRetention's loop (deploy/nm/log_retention.h): a sweep at start and then every interval,
// on the wall clock it is given, never deleting an application that still runs here.

#include "deploy/nm/log_retention.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::nm {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int64_t kDayMs = 24 * 3600 * 1000LL;

TEST(LogRetentionTest, SweepsAtStartAndThenEveryIntervalButKeepsRunningApplications) {
  testing_support::TempDir dir;
  const fs::path logs = dir.path() / "logs";
  testing_support::writeFile(logs / "app_1" / "c_1" / "stderr", "x");
  testing_support::writeFile(logs / "app_running" / "c_1" / "stderr", "y");
  // Files written now, seen from a clock 8 days ahead: older than the 7 days kept.
  ManualClock wall(SystemClock().nowMs() + 8 * kDayMs);
  LogRetentionOptions options;
  options.logDir = logs.string();
  options.retention = 7 * kDayMs;
  options.interval = 20;
  options.wallClock = &wall;
  options.activeApplications = [] { return std::set<std::string>{"app_running"}; };
  LogRetention retention(options);
  retention.start();
  EXPECT_FALSE(fs::exists(logs / "app_1"));  // at start, before start() returns
  EXPECT_TRUE(fs::exists(logs / "app_running"));

  // Later: an application that ended meanwhile goes at a periodic sweep.
  testing_support::writeFile(logs / "app_2" / "c_1" / "stderr", "z");
  EXPECT_TRUE(testing_support::eventually([&] { return !fs::exists(logs / "app_2"); }, 10s));
  EXPECT_TRUE(fs::exists(logs / "app_running"));
  retention.stop();

  // Within the retention nothing goes.
  wall.set(SystemClock().nowMs());
  testing_support::writeFile(logs / "app_3" / "c_1" / "stderr", "fresh");
  EXPECT_EQ(LogRetention(options).sweep(), 0u);
  EXPECT_TRUE(fs::exists(logs / "app_3"));
}

}  // namespace
}  // namespace tide::nm
