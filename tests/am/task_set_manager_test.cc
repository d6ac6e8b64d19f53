// One stage's task bookkeeping: lazy indices, re-queue to the front, the success bitmap.

#include "am/task_set_manager.h"

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

}  // namespace
}  // namespace tide::am
