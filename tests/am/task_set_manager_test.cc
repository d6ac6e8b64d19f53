// One stage's task bookkeeping: lazy indices, re-queue to the front, the success bitmap.

#include "am/scheduler/task_set_manager.h"

#include <gtest/gtest.h>

namespace tide::am {
namespace {

TEST(TaskSetManagerTest, LaunchesIndicesInOrderWithoutMaterialisingThem) {
  TaskSetManager tasks(1000000);
  EXPECT_EQ(tasks.pendingCount(), 1000000);
  for (int64_t i = 0; i < 3; ++i) {
    auto next = tasks.launchNext();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->index, i);
    EXPECT_EQ(next->attempt, 0);
  }
  EXPECT_EQ(tasks.pendingCount(), 999997);
  EXPECT_EQ(tasks.runningCount(), 3);
  EXPECT_EQ(tasks.trackedIndexCount(), 0u);
}

TEST(TaskSetManagerTest, RequeuedTaskRunsFirstWithItsNextAttempt) {
  TaskSetManager tasks(10);
  tasks.launchNext();  // 0
  tasks.launchNext();  // 1
  tasks.onAttemptEnded();
  EXPECT_EQ(tasks.recordFailure(1), 1);
  tasks.requeueFront(1, 1);
  EXPECT_EQ(tasks.pendingCount(), 9);
  auto next = tasks.launchNext();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->index, 1);
  EXPECT_EQ(next->attempt, 1);
  EXPECT_EQ(tasks.launchNext()->index, 2);
}

TEST(TaskSetManagerTest, DuplicateSuccessIsIgnored) {
  TaskSetManager tasks(2);
  tasks.launchNext();
  tasks.onAttemptEnded();
  EXPECT_TRUE(tasks.markSucceeded(0, 100));
  EXPECT_FALSE(tasks.markSucceeded(0, 5));
  EXPECT_EQ(tasks.succeededCount(), 1);
  EXPECT_EQ(tasks.durationSumMs(), 100);
  EXPECT_FALSE(tasks.allSucceeded());
  // A succeeded index is never re-queued.
  tasks.requeueFront(0, 1);
  EXPECT_EQ(tasks.pendingCount(), 1);
  EXPECT_EQ(tasks.launchNext()->index, 1);
}

TEST(TaskSetManagerTest, AbortDropsPendingWork) {
  TaskSetManager tasks(5);
  tasks.launchNext();
  tasks.abort();
  EXPECT_EQ(tasks.pendingCount(), 0);
  EXPECT_FALSE(tasks.launchNext());
  EXPECT_FALSE(tasks.markSucceeded(0, 1));
}

TEST(TaskSetManagerTest, DurationStatisticsCoverSuccessfulAttempts) {
  TaskSetManager tasks(3);
  for (int i = 0; i < 3; ++i) tasks.launchNext();
  tasks.markSucceeded(0, 30);
  tasks.markSucceeded(1, 10);
  tasks.markSucceeded(2, 20);
  EXPECT_EQ(tasks.durationSumMs(), 60);
  EXPECT_EQ(tasks.durationMinMs(), 10);
  EXPECT_EQ(tasks.durationMaxMs(), 30);
  EXPECT_TRUE(tasks.allSucceeded());
  tasks.releaseAfterSuccess();
  EXPECT_TRUE(tasks.isSucceeded(2));
}

// Delay scheduling (Spark's TaskSetManagerSuite "delay scheduling"): time passed explicitly.
class LocalityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Tasks 0, 1 prefer e1 on n1; task 2 prefers node n2; task 3 has no preference.
    tasks.setPreferences({{{"e1"}, {"n1"}}, {{"e1"}, {"n1"}}, {{}, {"n2"}}, {}},
                         LocalityWaits{3000, 2000, 1000}, 0);
  }
  TaskSetManager tasks{4};
};

TEST_F(LocalityTest, ValidLevelsFollowThePendingTasks) {
  EXPECT_EQ(tasks.validLocalityLevels(),
            (std::vector<TaskLocality>{TaskLocality::kProcessLocal, TaskLocality::kNodeLocal,
                                       TaskLocality::kNoPref, TaskLocality::kAny}));
  EXPECT_EQ(tasks.pendingCount(), 4);
  EXPECT_EQ(tasks.pendingTasksByNode(), (std::map<std::string, int64_t>{{"n1", 2}, {"n2", 1}}));
  // Spark's placement hints: every task, launched or not; task 3 prefers no node.
  ASSERT_TRUE(tasks.launchNext());
  int64_t preferring = 0;
  EXPECT_EQ(tasks.tasksByNode(&preferring), (std::map<std::string, int64_t>{{"n1", 2}, {"n2", 1}}));
  EXPECT_EQ(preferring, 3);
}

TEST_F(LocalityTest, AnExecutorWithoutTheDataWaitsOutEachLevel) {
  // e9 on n9 holds nothing: refused until PROCESS_LOCAL (3s) and NODE_LOCAL (2s) waits pass.
  EXPECT_FALSE(tasks.resourceOffer("e9", "n9", TaskLocality::kAny, 0));
  EXPECT_FALSE(tasks.resourceOffer("e9", "n9", TaskLocality::kAny, 2999));
  EXPECT_EQ(tasks.allowedLocality(3000), TaskLocality::kNodeLocal);
  EXPECT_FALSE(tasks.resourceOffer("e9", "n9", TaskLocality::kAny, 4999));
  // At NO_PREF (5s) the task without preference goes; then there is no wait at NO_PREF.
  auto next = tasks.resourceOffer("e9", "n9", TaskLocality::kAny, 5000);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->attempt.index, 3);
  EXPECT_EQ(next->locality, TaskLocality::kNoPref);
  next = tasks.resourceOffer("e9", "n9", TaskLocality::kAny, 5000);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->locality, TaskLocality::kAny);
}

TEST_F(LocalityTest, LocalOffersGoFirstAndALaunchResetsTheWait) {
  auto first = tasks.resourceOffer("e1", "n1", TaskLocality::kAny, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->attempt.index, 0);
  EXPECT_EQ(first->locality, TaskLocality::kProcessLocal);
  // 2.5s later a PROCESS_LOCAL launch restarts the 3s wait...
  auto second = tasks.resourceOffer("e1", "n1", TaskLocality::kAny, 2500);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->attempt.index, 1);
  // ... but no task is left for e1, so the level is skipped at once: task 2 on n2, NODE_LOCAL.
  auto third = tasks.resourceOffer("e2", "n2", TaskLocality::kAny, 2600);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->attempt.index, 2);
  EXPECT_EQ(third->locality, TaskLocality::kNodeLocal);
}

TEST_F(LocalityTest, NodeLocalOfferOnAnotherExecutorOfTheNode) {
  auto next = tasks.resourceOffer("e5", "n1", TaskLocality::kAny, 0);
  EXPECT_FALSE(next);  // PROCESS_LOCAL is still allowed only
  next = tasks.resourceOffer("e5", "n1", TaskLocality::kAny, 3000);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->locality, TaskLocality::kNodeLocal);
  EXPECT_EQ(next->attempt.index, 0);
}

TEST_F(LocalityTest, AFailedTaskIsFiledAgainUnderItsPlacesFirst) {
  auto first = tasks.resourceOffer("e1", "n1", TaskLocality::kAny, 0);
  ASSERT_TRUE(first);
  tasks.onAttemptEnded();
  tasks.requeueFront(first->attempt.index, 1);
  auto again = tasks.resourceOffer("e1", "n1", TaskLocality::kAny, 10);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempt.index, 0);
  EXPECT_EQ(again->attempt.attempt, 1);
}

TEST_F(LocalityTest, LosingThePreferredExecutorLeavesTheNode) {
  tasks.executorLost("e1");
  // Nothing is PROCESS_LOCAL any more: NODE_LOCAL at once on n1.
  auto next = tasks.resourceOffer("e7", "n1", TaskLocality::kAny, 0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->locality, TaskLocality::kNodeLocal);
}

TEST(TaskSetManagerTest, ResubmitRunsSucceededTasksAgain) {
  TaskSetManager tasks(3);
  for (int i = 0; i < 3; ++i) tasks.launchNext();
  for (int i = 0; i < 3; ++i) tasks.markSucceeded(i, 10);
  tasks.releaseAfterSuccess();
  EXPECT_EQ(tasks.resubmit({2, 0, 9}), 2);
  EXPECT_EQ(tasks.succeededCount(), 1);
  EXPECT_TRUE(tasks.isSucceeded(1));
  EXPECT_FALSE(tasks.isSucceeded(0));
  EXPECT_EQ(tasks.pendingCount(), 2);
  auto next = tasks.launchNext();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->index, 2);
  EXPECT_EQ(next->attempt, 1);
  EXPECT_EQ(tasks.resubmit({2}), 0);  // running: its output will come
}

// docs/jobs.md: a stage of up to 10^9 tasks costs the AM counters, not objects. Its done set
// grows by how scattered the done indices are, not by how many there are.
TEST(TaskSetManagerTest, ABillionTaskStageKeepsItsDoneTasksInAFewKilobytes) {
  TaskSetManager tasks(1000000000);
  const size_t empty = tasks.indexSetBytes();
  EXPECT_LT(empty, 256u * 1024) << "a counter per 65,536 tasks, not a bit per task";
  for (int64_t i = 0; i < 300000; ++i) {
    const std::optional<TaskAttempt> next = tasks.launchNext();
    ASSERT_TRUE(next);
    ASSERT_EQ(next->index, i);
    tasks.onAttemptEnded();
    ASSERT_TRUE(tasks.markSucceeded(i, 1));
  }
  EXPECT_EQ(tasks.succeededCount(), 300000);
  EXPECT_TRUE(tasks.isSucceeded(299999));
  EXPECT_FALSE(tasks.isSucceeded(300000));
  EXPECT_EQ(tasks.pendingCount(), 1000000000 - 300000);
  EXPECT_LE(tasks.indexSetBytes(), empty + 8192) << "only the chunk at the front is partial";
  // Lineage takes done tasks back out of the set; they run again first, as their next attempt.
  EXPECT_EQ(tasks.resubmit({5, 70000, 5}), 2);
  EXPECT_FALSE(tasks.isSucceeded(70000));
  EXPECT_EQ(tasks.succeededCount(), 299998);
  EXPECT_EQ(tasks.launchNext()->index, 5);
  EXPECT_EQ(tasks.launchNext()->index, 70000);
  EXPECT_EQ(tasks.launchNext()->index, 300000);
  EXPECT_EQ(tasks.trackedIndexCount(), 0u);
}

// Recovery took indices out without launching them; once the stage is done and its sets are
// released, a lineage re-run still launches only what was lost.
TEST(TaskSetManagerTest, ARestoredStageReleasedAfterSuccessReRunsOnlyWhatWasLost) {
  TaskSetManager tasks(4);
  tasks.markRestored(2, /*running=*/false);
  tasks.markRestored(3, /*running=*/false);
  ASSERT_TRUE(tasks.markSucceeded(2, 1));
  ASSERT_TRUE(tasks.markSucceeded(3, 1));
  for (int64_t expected : {0, 1}) {
    const std::optional<TaskAttempt> next = tasks.launchNext();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->index, expected);
    tasks.onAttemptEnded();
    ASSERT_TRUE(tasks.markSucceeded(expected, 1));
  }
  ASSERT_TRUE(tasks.allSucceeded());
  tasks.releaseAfterSuccess();
  EXPECT_EQ(tasks.pendingCount(), 0);
  EXPECT_EQ(tasks.resubmit({3}), 1);
  EXPECT_EQ(tasks.pendingCount(), 1);
  const std::optional<TaskAttempt> again = tasks.launchNext();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->index, 3);
  EXPECT_EQ(again->attempt, 1);
  EXPECT_FALSE(tasks.launchNext());
}

}  // namespace
}  // namespace tide::am
