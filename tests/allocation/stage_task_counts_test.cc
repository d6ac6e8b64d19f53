// StageTaskCounts, the per-stage task counts both allocation policies keep: what each event
// counts and when a stage is forgotten.

#include "allocation/stage_task_counts.h"

#include <gtest/gtest.h>

namespace tide::allocation {
namespace {

using Change = StageTaskCounts::Change;

TEST(StageTaskCounts, TasksMoveFromPendingToRunningAndTheStageGoesWhenDone) {
  StageTaskCounts counts;
  counts.onStageSubmitted("s1", 3);
  EXPECT_EQ(counts.pending(), 3);
  EXPECT_TRUE(counts.hasPending());
  counts.onTaskStart("s1", false);
  counts.onTaskStart("s1", false);
  EXPECT_EQ(counts.pending(), 1);
  EXPECT_EQ(counts.running(), 2);
  EXPECT_EQ(counts.total(), 3);
  EXPECT_EQ(counts.onTaskEnd("s1", false), Change::kCounted) << "still active";
  // Completed with a task still running: its pending task no longer counts, the running one
  // does until it ends.
  EXPECT_EQ(counts.onStageCompleted("s1"), Change::kCounted);
  EXPECT_EQ(counts.pending(), 0);
  EXPECT_EQ(counts.running(), 1);
  EXPECT_EQ(counts.onTaskEnd("s1", false), Change::kForgotten);
  EXPECT_TRUE(counts.stages().empty());
  EXPECT_EQ(counts.total(), 0);
  EXPECT_EQ(counts.onTaskEnd("s1", false), Change::kUnknownStage);
  EXPECT_EQ(counts.onStageCompleted("s1"), Change::kUnknownStage);
}

TEST(StageTaskCounts, ARetriedTaskIsPendingAgainOnlyWhileItsStageIsActive) {
  StageTaskCounts counts;
  counts.onStageSubmitted("s1", 2);
  counts.onTaskStart("s1", false);
  counts.onTaskStart("s1", false);
  EXPECT_EQ(counts.onTaskEnd("s1", /*retried=*/true), Change::kCounted);
  EXPECT_EQ(counts.pending(), 1);
  EXPECT_EQ(counts.onStageCompleted("s1"), Change::kCounted);
  EXPECT_EQ(counts.onTaskEnd("s1", /*retried=*/true), Change::kForgotten);
  EXPECT_EQ(counts.pending(), 0);
}

TEST(StageTaskCounts, SpeculativeCopiesArePendingUntilStartedOrDropped) {
  StageTaskCounts counts;
  counts.onStageSubmitted("s1", 1);
  counts.onTaskStart("s1", false);
  counts.onSpeculativeTaskSubmitted("s1");
  counts.onSpeculativeTaskSubmitted("s1");
  EXPECT_EQ(counts.pendingSpeculative(), 2);
  EXPECT_TRUE(counts.hasPending());
  counts.onTaskStart("s1", /*speculative=*/true);
  EXPECT_EQ(counts.pendingSpeculative(), 1);
  EXPECT_EQ(counts.running(), 2);
  EXPECT_TRUE(counts.dropPendingSpeculative("s1"));
  EXPECT_FALSE(counts.dropPendingSpeculative("s1")) << "none left";
  EXPECT_FALSE(counts.dropPendingSpeculative("s2")) << "unknown stage";
  EXPECT_FALSE(counts.hasPending());
}

TEST(StageTaskCounts, AStartOfAnUnseenStageCountsIt) {
  // A stage is known from its first event, whichever it is.
  StageTaskCounts counts;
  counts.onTaskStart("s9", false);
  EXPECT_EQ(counts.running(), 1);
  EXPECT_EQ(counts.pending(), 0);
  ASSERT_EQ(counts.stages().count("s9"), 1u);
  EXPECT_TRUE(counts.stages().at("s9").active);
}

// Spark's maxTasksPerExecutor per stage (issue 13 item 5): each stage's tasks are packed at
// executor.cores / its own cpus per task; stages of one width share executors as one Spark
// profile's tasks do.
TEST(StageTaskCounts, EachStageFillsExecutorsAtItsOwnTasksPerExecutor) {
  EXPECT_EQ(StageTaskCounts::tasksPerExecutor(4, 1), 4);
  EXPECT_EQ(StageTaskCounts::tasksPerExecutor(4, 3), 1) << "a 3-cpu task leaves 1 core unused";
  EXPECT_EQ(StageTaskCounts::tasksPerExecutor(4, 8), 1) << "never 0";
  StageTaskCounts counts;
  counts.onStageSubmitted("wide", 8, 4);  // 8 tasks of 4 cpus on 4-core executors: 8
  counts.onStageSubmitted("narrow", 10);  // task.cpus=1: 10 / 4 = 2.5
  counts.onStageSubmitted("half", 3, 2);  // 3 / 2 = 1.5
  EXPECT_DOUBLE_EQ(counts.executorsFilled(4, 1), 12.0);
  counts.onTaskStart("wide", false);  // running tasks count as pending ones do
  EXPECT_DOUBLE_EQ(counts.executorsFilled(4, 1), 12.0);
  counts.onStageCompleted("narrow");
  EXPECT_DOUBLE_EQ(counts.executorsFilled(4, 1), 9.5);
  // Resubmitted tasks keep the stage's cpus.
  counts.onStageSubmitted("half", 1, 2);
  EXPECT_DOUBLE_EQ(counts.executorsFilled(4, 1), 10.0);
}

TEST(StageTaskCounts, SpeculationLocalityOffsetOnlyForStagesSharingAnExecutor) {
  StageTaskCounts counts;
  counts.onStageSubmitted("wide", 1, 4);
  counts.onSpeculativeTaskSubmitted("wide");
  EXPECT_FALSE(counts.speculativePendingOnSharedExecutor(4, 1)) << "one 4-cpu task per executor";
  counts.onStageSubmitted("narrow", 1);
  EXPECT_FALSE(counts.speculativePendingOnSharedExecutor(4, 1)) << "no copy of a narrow task";
  counts.onSpeculativeTaskSubmitted("narrow");
  EXPECT_TRUE(counts.speculativePendingOnSharedExecutor(4, 1));
}

}  // namespace
}  // namespace tide::allocation
