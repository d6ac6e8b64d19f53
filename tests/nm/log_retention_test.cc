// nm.logRetention's loop (deploy/nm/log_retention.h): a sweep at start and then every interval,
// on the wall clock it is given, never deleting an application that still runs here.

#include "deploy/nm/log_retention.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>

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
  retention.start();  // sweeps on its thread, at once
  EXPECT_TRUE(testing_support::eventually([&] { return !fs::exists(logs / "app_1"); }, 10s));
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

// A sweep with much to do must not hold up the node manager's start: start() returns while its
// first sweep has not ended.
TEST(LogRetentionTest, StartDoesNotWaitForTheFirstSweep) {
  testing_support::TempDir dir;
  const fs::path logs = dir.path() / "logs";
  testing_support::writeFile(logs / "app_1" / "c_1" / "stderr", "x");
  ManualClock wall(SystemClock().nowMs() + 8 * kDayMs);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> sweepBegan{false};
  std::atomic<bool> heldUntilTimeout{false};
  LogRetentionOptions options;
  options.logDir = logs.string();
  options.retention = 7 * kDayMs;
  options.wallClock = &wall;
  options.activeApplications = [&] {
    sweepBegan = true;
    if (released.wait_for(5s) != std::future_status::ready) heldUntilTimeout = true;
    return std::set<std::string>{};
  };
  LogRetention retention(options);
  retention.start();
  EXPECT_TRUE(testing_support::eventually([&] { return sweepBegan.load(); }, 10s));
  release.set_value();
  EXPECT_FALSE(heldUntilTimeout) << "start() waited for its sweep";
  EXPECT_TRUE(testing_support::eventually([&] { return !fs::exists(logs / "app_1"); }, 10s));
}

}  // namespace
}  // namespace tide::nm
