#include "allocation/executor_monitor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST_F(MonitorTest, TimedOutExecutorsComeOldestFirst) {
  ExecutorMonitor monitor(config, clock);
  for (const char* id : {"e10", "e2", "e1"}) monitor.onExecutorAdded(id);
  clock.set(60000);
  EXPECT_EQ(monitor.timedOutExecutors(), (std::vector<ExecutorId>{"e10", "e2", "e1"}))
      << "registration order, not string order";
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
