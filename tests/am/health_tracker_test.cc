// Exclusion on failure, the bookkeeping alone: TaskSetExcludelist (one stage) and HealthTracker
// (the application), with the scenarios and numbers of Spark's TaskSetExcludelistSuite and
// HealthTrackerSuite. Time moves only when a test moves it.

#include "am/scheduler/health_tracker.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "am/scheduler/task_set_excludelist.h"

namespace tide::am {
namespace {

constexpr DurationMs kHour = 60 * 60 * 1000;

std::set<std::string> excludedExecutors(const HealthTracker& tracker) {
  std::set<std::string> ids;
  for (const ExcludedExecutor& e : tracker.excludedExecutors()) ids.insert(e.executorId);
  return ids;
}

std::set<std::string> excludedNodes(const HealthTracker& tracker) {
  std::set<std::string> nodes;
  for (const auto& [node, until] : tracker.excludedNodes()) nodes.insert(node);
  return nodes;
}

// Spark: TaskSetExcludelistSuite "Excluding tasks, executors, and nodes" (the defaults: one
// attempt per executor, two per node, two failed tasks exclude an executor for the stage, two
// such executors its node).
TEST(TaskSetExcludelistTest, ExcludesTasksThenExecutorsThenTheirNode) {
  ExcludeOnFailureConfig config;
  TaskSetExcludelist list(config);

  list.updateExcludedForFailedTask("hostA", "1", 0, 0);
  for (const std::string executor : {"1", "2", "3", "4"}) {
    for (int64_t index = 0; index < 10; ++index) {
      EXPECT_EQ(list.isExecutorExcludedForTask(executor, index), executor == "1" && index == 0)
          << executor << " " << index;
    }
  }
  EXPECT_FALSE(list.isExecutorExcludedForTaskSet("1"));
  EXPECT_FALSE(list.isNodeExcludedForTaskSet("hostA"));
  EXPECT_FALSE(list.isNodeExcludedForTask("hostA", 0));  // one attempt on the node so far

  // A second task failing on executor 1: the executor is excluded for the stage.
  list.updateExcludedForFailedTask("hostA", "1", 1, 0);
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("1"));
  EXPECT_FALSE(list.isNodeExcludedForTaskSet("hostA"));

  // One failure on executor 2: task 0 has now failed twice on hostA.
  list.updateExcludedForFailedTask("hostA", "2", 0, 0);
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("1"));
  EXPECT_FALSE(list.isExecutorExcludedForTaskSet("2"));
  EXPECT_FALSE(list.isNodeExcludedForTaskSet("hostA"));
  EXPECT_TRUE(list.isNodeExcludedForTask("hostA", 0));
  EXPECT_FALSE(list.isNodeExcludedForTask("hostA", 1));
  EXPECT_FALSE(list.isNodeExcludedForTask("hostB", 0));

  // Another on executor 2: both executors of hostA are excluded, so is hostA.
  list.updateExcludedForFailedTask("hostA", "2", 1, 0);
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("2"));
  EXPECT_TRUE(list.isNodeExcludedForTaskSet("hostA"));
  EXPECT_FALSE(list.isNodeExcludedForTaskSet("hostB"));
  EXPECT_FALSE(list.isExecutorExcludedForTaskSet("3"));
  EXPECT_EQ(list.failedTasks(), (std::set<int64_t>{0, 1}));
}

// Spark: TaskSetExcludelistSuite "multiple attempts for the same task count once" (executors
// are excluded for the stage by different tasks failing, not by one task failing again).
TEST(TaskSetExcludelistTest, MultipleAttemptsOfOneTaskCountOnceTowardTheExecutor) {
  ExcludeOnFailureConfig config;
  config.maxTaskAttemptsPerExecutor = 3;
  config.maxTaskAttemptsPerNode = 3;
  config.maxFailedTasksPerExecutorStage = 2;
  config.maxFailedExecutorsPerNodeStage = 3;
  TaskSetExcludelist list(config);

  list.updateExcludedForFailedTask("hostA", "1", 0, 0);
  list.updateExcludedForFailedTask("hostA", "1", 0, 0);
  EXPECT_FALSE(list.isExecutorExcludedForTask("1", 0));  // 2 of 3 attempts
  EXPECT_FALSE(list.isNodeExcludedForTask("hostA", 0));
  EXPECT_FALSE(list.isExecutorExcludedForTaskSet("1"));  // one task, however often

  list.updateExcludedForFailedTask("hostA", "2", 0, 0);
  EXPECT_TRUE(list.isNodeExcludedForTask("hostA", 0));  // third attempt on the node
  EXPECT_FALSE(list.isExecutorExcludedForTask("2", 0));
  EXPECT_FALSE(list.isExecutorExcludedForTaskSet("2"));

  list.updateExcludedForFailedTask("hostA", "1", 1, 0);
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("1"));
  list.updateExcludedForFailedTask("hostA", "2", 1, 0);
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("2"));
  EXPECT_FALSE(list.isNodeExcludedForTaskSet("hostA"));  // 2 of 3 executors

  list.updateExcludedForFailedTask("hostA", "3", 2, 0);
  list.updateExcludedForFailedTask("hostA", "3", 3, 0);
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("3"));
  EXPECT_TRUE(list.isNodeExcludedForTaskSet("hostA"));
}

class HealthTrackerTest : public ::testing::Test {
 protected:
  ExcludeOnFailureConfig config;
  ManualClock clock{0};
  HealthTracker tracker{config, clock};
};

// Spark: HealthTrackerSuite "executors can be excluded with only a few failures per stage".
TEST_F(HealthTrackerTest, ExecutorsCanBeExcludedWithOnlyAFewFailuresPerStage) {
  const int failuresUntilExcluded = config.maxFailedTasksPerExecutor;  // 2
  int failuresSoFar = 0;
  for (int stage = 0; stage < failuresUntilExcluded * 10; ++stage) {
    TaskSetExcludelist list(config);
    if (stage % 2 == 0) {
      // One task fails in every other stage: never enough to exclude within a stage.
      list.updateExcludedForFailedTask("hostA", "1", 0, clock.nowMs());
      ++failuresSoFar;
    }
    EXPECT_FALSE(list.isExecutorExcludedForTaskSet("1"));
    tracker.updateExcludedForSuccessfulTaskSet(std::to_string(stage), list.failuresByExecutor());
    EXPECT_EQ(failuresSoFar, stage / 2 + 1);
    if (failuresSoFar < failuresUntilExcluded) {
      EXPECT_TRUE(excludedExecutors(tracker).empty()) << stage;
    } else {
      EXPECT_EQ(excludedExecutors(tracker), std::set<std::string>{"1"}) << stage;
    }
  }
}

// Spark: HealthTrackerSuite "executors aren't excluded as a result of tasks in failed task
// sets": a stage that did not succeed never reports its failures, so nothing counts.
TEST_F(HealthTrackerTest, FailuresOfAFailedStageDoNotCount) {
  TaskSetExcludelist list(config);
  for (int64_t index = 0; index < 4; ++index) {
    list.updateExcludedForFailedTask("hostA", "1", index, 0);
  }
  EXPECT_TRUE(list.isExecutorExcludedForTaskSet("1"));  // for that stage only
  EXPECT_TRUE(excludedExecutors(tracker).empty());
  EXPECT_FALSE(tracker.isExecutorExcluded("1"));
}

// Spark: HealthTrackerSuite "only exclude nodes for the application when enough executors have
// failed on that specific host".
TEST_F(HealthTrackerTest, OnlyExcludesANodeWhenEnoughOfItsOwnExecutorsAreExcluded) {
  TaskSetExcludelist stage0(config);
  stage0.updateExcludedForFailedTask("hostA", "1", 0, 0);
  stage0.updateExcludedForFailedTask("hostA", "1", 1, 0);
  NewlyExcluded newly =
      tracker.updateExcludedForSuccessfulTaskSet("0", stage0.failuresByExecutor());
  EXPECT_EQ(newly.executors, std::vector<std::string>{"1"});
  EXPECT_EQ(excludedExecutors(tracker), std::set<std::string>{"1"});
  EXPECT_TRUE(excludedNodes(tracker).empty());

  TaskSetExcludelist stage1(config);
  stage1.updateExcludedForFailedTask("hostB", "2", 0, 0);
  stage1.updateExcludedForFailedTask("hostB", "2", 1, 0);
  tracker.updateExcludedForSuccessfulTaskSet("1", stage1.failuresByExecutor());
  EXPECT_EQ(excludedExecutors(tracker), (std::set<std::string>{"1", "2"}));
  EXPECT_TRUE(excludedNodes(tracker).empty());  // one on each host

  TaskSetExcludelist stage2(config);
  stage2.updateExcludedForFailedTask("hostA", "3", 0, 0);
  stage2.updateExcludedForFailedTask("hostA", "3", 1, 0);
  newly = tracker.updateExcludedForSuccessfulTaskSet("2", stage2.failuresByExecutor());
  EXPECT_EQ(excludedExecutors(tracker), (std::set<std::string>{"1", "2", "3"}));
  EXPECT_EQ(excludedNodes(tracker), std::set<std::string>{"hostA"});
  EXPECT_EQ(newly.nodes, std::vector<std::string>{"hostA"});
  EXPECT_TRUE(tracker.isNodeExcluded("hostA"));
  EXPECT_FALSE(tracker.isNodeExcluded("hostB"));
}

// Spark: HealthTrackerSuite "expiry of excluded executors".
TEST_F(HealthTrackerTest, ExcludedExecutorsAndNodesExpireAfterTheTimeout) {
  TaskSetExcludelist stage0(config);
  for (int64_t index = 0; index < 4; ++index) {
    stage0.updateExcludedForFailedTask("hostA", "1", index, clock.nowMs());
  }
  tracker.updateExcludedForSuccessfulTaskSet("0", stage0.failuresByExecutor());
  EXPECT_EQ(excludedExecutors(tracker), std::set<std::string>{"1"});

  TaskSetExcludelist stage1(config);
  for (int64_t index = 0; index < 4; ++index) {
    stage1.updateExcludedForFailedTask("hostA", "2", index, clock.nowMs());
  }
  tracker.updateExcludedForSuccessfulTaskSet("1", stage1.failuresByExecutor());
  EXPECT_EQ(excludedExecutors(tracker), (std::set<std::string>{"1", "2"}));
  EXPECT_EQ(excludedNodes(tracker), std::set<std::string>{"hostA"});
  EXPECT_EQ(tracker.excludedExecutors().front().untilMs, kHour);

  clock.advance(kHour);  // not past it yet
  tracker.applyExcludeOnFailureTimeout();
  EXPECT_EQ(excludedExecutors(tracker).size(), 2u);

  clock.advance(1);
  tracker.applyExcludeOnFailureTimeout();
  EXPECT_TRUE(excludedExecutors(tracker).empty());
  EXPECT_TRUE(excludedNodes(tracker).empty());

  // The failures that excluded executor 1 were forgotten with the exclusion: one more is not
  // enough to exclude it again.
  TaskSetExcludelist stage2(config);
  stage2.updateExcludedForFailedTask("hostA", "1", 0, clock.nowMs());
  tracker.updateExcludedForSuccessfulTaskSet("2", stage2.failuresByExecutor());
  EXPECT_TRUE(excludedExecutors(tracker).empty());
  EXPECT_EQ(tracker.failureCount("1"), 1);
}

// Spark: HealthTrackerSuite "task failure timeout works as expected for long-running tasksets":
// a failure counts for the timeout from when it happened, not from when its stage ended.
TEST_F(HealthTrackerTest, AFailureExpiresTheTimeoutAfterItHappenedNotAfterItsStageEnded) {
  TaskSetExcludelist stage0(config);
  TaskSetExcludelist stage1(config);
  stage0.updateExcludedForFailedTask("hostA", "1", 0, 0);
  clock.set(kHour + 1);
  stage1.updateExcludedForFailedTask("hostA", "1", 0, clock.nowMs());
  tracker.updateExcludedForSuccessfulTaskSet("0", stage0.failuresByExecutor());
  tracker.updateExcludedForSuccessfulTaskSet("1", stage1.failuresByExecutor());
  // Two stages each saw one failure, but the first expired before the second.
  EXPECT_TRUE(excludedExecutors(tracker).empty());
  EXPECT_EQ(tracker.failureCount("1"), 1);

  // A failure within the timeout of the second one excludes the executor.
  TaskSetExcludelist stage2(config);
  clock.advance(kHour - 1);
  stage2.updateExcludedForFailedTask("hostA", "1", 5, clock.nowMs());
  tracker.updateExcludedForSuccessfulTaskSet("2", stage2.failuresByExecutor());
  EXPECT_EQ(excludedExecutors(tracker), std::set<std::string>{"1"});
}

// A removed executor's failures no longer count (Spark's handleRemovedExecutor).
TEST_F(HealthTrackerTest, ARemovedExecutorsFailuresAreForgotten) {
  TaskSetExcludelist stage0(config);
  stage0.updateExcludedForFailedTask("hostA", "1", 0, 0);
  tracker.updateExcludedForSuccessfulTaskSet("0", stage0.failuresByExecutor());
  EXPECT_EQ(tracker.failureCount("1"), 1);
  tracker.handleRemovedExecutor("1");
  EXPECT_EQ(tracker.failureCount("1"), 0);
}

}  // namespace
}  // namespace tide::am
