#include "allocation/executor_monitor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cases.h"

namespace tide::allocation {
namespace {

class MonitorTest : public ::testing::Test {
 protected:
  MonitorTest() { config.executorIdleTimeout = 60000; }
  AllocationConfig config;
  ManualClock clock{0};
};

TEST_F(MonitorTest, TicksWithNoDeadlineDueDoNotScan) {
  ExecutorMonitor monitor(config, clock);
  for (int i = 0; i < 10000; ++i) monitor.onExecutorAdded("e" + std::to_string(i));
  for (int i = 0; i < 10000; ++i) monitor.onTaskStart("e" + std::to_string(i));
  clock.set(1000);
  monitor.onTaskEnd("e42");  // the only deadline: 61000
  // Deadlines only ever lower the "next deadline" mark, so a stale mark (60000, from the
  // registrations) costs one scan; that scan learns the real next deadline.
  clock.set(60000);
  EXPECT_TRUE(monitor.timedOutExecutors().empty());
  const uint64_t before = monitor.scanCount();
  EXPECT_EQ(before, 1u);
  for (TimeMs t = 60000; t < 61000; t += 10) {
    clock.set(t);
    EXPECT_TRUE(monitor.timedOutExecutors().empty());
  }
  EXPECT_EQ(monitor.scanCount(), before) << "100 ticks before the deadline: no scan";
  clock.set(61000);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e42"}));
  EXPECT_EQ(monitor.scanCount(), before + 1);
  clock.set(61100);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e42"}));
  EXPECT_EQ(monitor.scanCount(), before + 1) << "the timed-out list is kept until it changes";
}

TEST_F(MonitorTest, AnExecutorBusyAgainLeavesTheTimedOutList) {
  ExecutorMonitor monitor(config, clock);
  monitor.onExecutorAdded("e1");
  monitor.onExecutorAdded("e2");
  clock.set(60000);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e1", "e2"}));
  monitor.onTaskStart("e1");
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e2"}));
  monitor.markPendingRemoval({"e2"});
  EXPECT_TRUE(monitor.timedOutExecutors().empty()) << "being removed: not proposed again";
  EXPECT_EQ(monitor.pendingRemovalCount(), 1);
  monitor.onExecutorRemoved("e2");
  EXPECT_EQ(monitor.pendingRemovalCount(), 0);
  EXPECT_EQ(monitor.executorCount(), 1);
}

// Spark's ExecutorMonitor.timedOutExecutors sorts by executor id; tide compares the numbers in
// ids by value, so e2 (an older executor) comes before e10.
TEST_F(MonitorTest, TimedOutExecutorsAreSortedById) {
  ExecutorMonitor monitor(config, clock);
  for (const char* id : {"e10", "e2", "e1"}) monitor.onExecutorAdded(id);
  clock.set(60000);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e1", "e2", "e10"}))
      << "by id (numbers by value), not registration order";
}

TEST(ExecutorIdOrder, NumbersInIdsCompareByValue) {
  testing_support::expectEachPair(executorIdLess, {{"e2", "e10", true},
                                                   {"e10", "e2", false},
                                                   {"e9", "f1", true},
                                                   {"e", "e1", true},
                                                   {"app-2-e3", "app-10-e1", true},
                                                   {"e7", "e7", false}});
  EXPECT_NE(executorIdLess("e01", "e1"), executorIdLess("e1", "e01")) << "a strict order";
}

// Spark's ExecutorMonitor.Tracker.updateTimeout: an idle executor holding data goes at
// idleStart + the smallest timeout of the kinds of data it holds; executorIdleTimeout does not
// apply to it, so a cachedExecutorIdleTimeout shorter than executorIdleTimeout wins.
TEST_F(MonitorTest, CachedExecutorGoesAtCachedTimeoutEvenBelowIdleTimeout) {
  config.cachedExecutorIdleTimeout = 30000;
  ExecutorMonitor monitor(config, clock);
  monitor.onExecutorAdded("e1");
  monitor.onExecutorAdded("e2");
  monitor.onBlocksCached("e1", "s1");
  clock.set(29999);
  EXPECT_TRUE(monitor.timedOutExecutors().empty());
  clock.set(30000);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e1"}));
  clock.set(60000);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e1", "e2"}));
}

TEST_F(MonitorTest, ExecutorHoldingCachedAndEndedShuffleDataGoesAtTheSmallerTimeout) {
  config.cachedExecutorIdleTimeout = 300000;
  config.shuffleTrackingTimeout = 120000;
  ExecutorMonitor monitor(config, clock);
  monitor.onExecutorAdded("e1");
  monitor.onBlocksCached("e1", "s1");
  monitor.onShuffleOutput("e1", "j1/map");
  monitor.onShuffleInactive("j1/map");
  EXPECT_EQ(monitor.expiryOf(*monitor.find("e1")).at, 120000);
  EXPECT_EQ(monitor.expiryOf(*monitor.find("e1")).why,
            "holds shuffle data of an ended job (shuffleTracking.timeout=2min)");
  monitor.onShuffleReleased("j1/map");  // cleaned: only the cached data holds it now
  EXPECT_EQ(monitor.expiryOf(*monitor.find("e1")).at, 300000);
}

// Spark: an executor holding shuffle data of an active job is never timed out, whatever
// shuffleTracking.timeout; once the job ends the timeout counts from when it went idle.
TEST_F(MonitorTest, ShuffleDataOfAnActiveJobNeverTimesOut) {
  config.shuffleTrackingTimeout = 120000;
  ExecutorMonitor monitor(config, clock);
  monitor.onExecutorAdded("e1");
  monitor.onShuffleOutput("e1", "j1/map");
  clock.set(36000000);
  EXPECT_TRUE(monitor.timedOutExecutors().empty());
  EXPECT_EQ(monitor.expiryOf(*monitor.find("e1")).at, kInfiniteMs);
  EXPECT_EQ(monitor.expiryOf(*monitor.find("e1")).why, "holds shuffle data of an active job");
  monitor.onShuffleInactive("j1/map");
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e1"}))
      << "idle since 0, past 0 + shuffleTracking.timeout";
}

TEST_F(MonitorTest, CleanedShuffleFallsBackToTheIdleTimeout) {
  ExecutorMonitor monitor(config, clock);  // shuffleTracking.timeout: infinity
  monitor.onExecutorAdded("e1");
  monitor.onShuffleOutput("e1", "j1/map");
  monitor.onShuffleInactive("j1/map");
  clock.set(600000);
  EXPECT_TRUE(monitor.timedOutExecutors().empty()) << "ended job's data, infinite timeout";
  monitor.onShuffleReleased("j1/map");
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e1"}));
  EXPECT_EQ(monitor.find("e1")->activeShuffles, 0);
}

TEST_F(MonitorTest, ExpiryExplainsWhichTimeoutApplies) {
  config.cachedExecutorIdleTimeout = 300000;
  ExecutorMonitor monitor(config, clock);
  monitor.onExecutorAdded("e1");
  monitor.onExecutorAdded("e2");
  monitor.onExecutorAdded("e3");
  monitor.onBlocksCached("e2", "s1");
  monitor.onTaskStart("e3");
  monitor.onTaskStart("e3");
  ExpiryInfo idle = monitor.expiryOf(*monitor.find("e1"));
  EXPECT_EQ(idle.at, 60000);
  EXPECT_EQ(idle.why, "idle (executorIdleTimeout=1min)");
  ExpiryInfo cached = monitor.expiryOf(*monitor.find("e2"));
  EXPECT_EQ(cached.at, 300000);
  EXPECT_EQ(cached.why, "holds cached data (cachedExecutorIdleTimeout=5min)");
  ExpiryInfo busy = monitor.expiryOf(*monitor.find("e3"));
  EXPECT_EQ(busy.at, kInfiniteMs);
  EXPECT_EQ(busy.why, "busy with 2 tasks");
}

TEST_F(MonitorTest, RemovingAnExecutorForgetsItsData) {
  ExecutorMonitor monitor(config, clock);
  monitor.onExecutorAdded("e1");
  monitor.onBlocksCached("e1", "s1");
  monitor.onShuffleOutput("e1", "j1");
  monitor.onExecutorRemoved("e1");
  monitor.onBlocksUncached("s1");
  monitor.onShuffleReleased("j1");
  monitor.onExecutorAdded("e1");  // the same id again starts clean
  EXPECT_TRUE(monitor.find("e1")->cachedData.empty());
  EXPECT_TRUE(monitor.find("e1")->shuffles.empty());
}

}  // namespace
}  // namespace tide::allocation
