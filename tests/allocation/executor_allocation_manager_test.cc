// The allocation policy's rules, one test each, in the spirit of Spark's
// ExecutorAllocationManagerSuite. Time only moves when a test moves it.

#include "allocation/executor_allocation_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "tests/allocation/policy_test.h"

namespace tide::allocation {
namespace {

using TaskEnd = ExecutorAllocationManager::TaskEnd;

class AllocationTest : public policy_testing::PolicyTest<ExecutorAllocationManager> {
 protected:
  AllocationTest() {
    config.bounds = {0, 0, 20};
    config.schedulerBacklogTimeout = 1000;
    config.sustainedSchedulerBacklogTimeout = 1000;
    config.executorIdleTimeout = 60000;
  }

  ExecutorAllocationManager& manager() { return policy(); }

  // The targets after ticks at each whole second from `from` to `to`.
  std::vector<int> targetsEverySecond(TimeMs from, TimeMs to) {
    std::vector<int> targets;
    for (TimeMs t = from; t <= to; t += 1000) targets.push_back(tickAt(t).target);
    return targets;
  }

  void addExecutors(int first, int last) {
    for (int i = first; i <= last; ++i) manager().onExecutorAdded("e" + std::to_string(i));
  }

  // A task of `stage` starts on each of `executors`, in order.
  void startTasks(const std::string& stage, std::initializer_list<std::string> executors) {
    for (const std::string& executor : executors) manager().onTaskStart(stage, executor);
  }

  // Executors e1..e<executors>, a stage "s1" of `tasks` tasks, and a task of it started on each
  // of `startedOn`.
  void startStage(int executors, int tasks, std::initializer_list<std::string> startedOn) {
    addExecutors(1, executors);
    manager().onStageSubmitted("s1", tasks);
    startTasks("s1", startedOn);
  }

  static bool hasDecision(const TickResult& result, Decision::Action action) {
    return find(result, action) != nullptr;
  }
};

TEST_F(AllocationTest, RampsOneThreeSevenFifteenUnderADeepBacklog) {
  manager().onStageSubmitted("s1", 1000);
  EXPECT_EQ(tickAt(0).target, 0);
  EXPECT_EQ(tickAt(999).target, 0) << "the backlog timer has not fired yet";
  EXPECT_EQ(targetsEverySecond(1000, 5000), (std::vector<int>{1, 3, 7, 15, 20}));
  TickResult atMax = tickAt(6000);
  EXPECT_EQ(atMax.target, 20);
  ASSERT_TRUE(hasDecision(atMax, Decision::Action::kNotAdding));
  EXPECT_EQ(atMax.decisions.back().why, "not adding: at maxExecutors=20 with 1000 pending tasks");
  EXPECT_EQ(manager().snapshot().numExecutorsToAdd, 1) << "reset at max";
}

TEST_F(AllocationTest, TheSustainedTimeoutPacesLaterSteps) {
  config.schedulerBacklogTimeout = 500;
  config.sustainedSchedulerBacklogTimeout = 2000;
  manager().onStageSubmitted("s1", 1000);
  EXPECT_EQ(tickAt(500).target, 1);
  EXPECT_EQ(tickAt(2400).target, 1);
  EXPECT_EQ(tickAt(2500).target, 3);
  EXPECT_EQ(tickAt(4500).target, 7);
}

TEST_F(AllocationTest, RaiseDecisionExplainsTheBacklog) {
  manager().onStageSubmitted("s1", 120);
  TickResult result = tickAt(1000);
  ASSERT_EQ(result.decisions.size(), 1u);
  EXPECT_EQ(result.decisions[0].action, Decision::Action::kRaiseTarget);
  EXPECT_EQ(result.decisions[0].why, "added 1 (backlog of 120 tasks for 1.0s), target 1");
  EXPECT_TRUE(result.targetChanged());
  EXPECT_EQ(result.previousTarget, 0);
}

TEST_F(AllocationTest, CapsAtMaxNeededAndResetsTheStep) {
  manager().onStageSubmitted("s1", 5);
  EXPECT_EQ(targetsEverySecond(1000, 4000), (std::vector<int>{1, 3, 5, 5}));
  EXPECT_EQ(manager().snapshot().numExecutorsToAdd, 1)
      << "a partial step (2 of 4) resets the step to 1";
}

TEST_F(AllocationTest, CapsAtMaxExecutors) {
  config.bounds.maxExecutors = 8;
  manager().onStageSubmitted("s1", 200);
  EXPECT_EQ(targetsEverySecond(1000, 5000), (std::vector<int>{1, 3, 7, 8, 8}));
}

TEST_F(AllocationTest, AddsOnTopOfTheExecutorsAlreadyRunning) {
  addExecutors(1, 5);  // e.g. registered from an earlier burst, target since lowered
  manager().onStageSubmitted("s1", 100);
  EXPECT_EQ(tickAt(1000).target, 6) << "max(target 0, live 5) + 1";
  EXPECT_EQ(tickAt(2000).target, 7) << "a jump of 6 is not a whole step of 1: the step stays 1";
}

TEST_F(AllocationTest, BacklogDrainedResetsTheTimerAndTheStep) {
  manager().onStageSubmitted("s1", 100);
  targetsEverySecond(1000, 3000);  // 1, 3, 7
  EXPECT_EQ(manager().snapshot().numExecutorsToAdd, 8);
  addExecutors(1, 7);
  for (int i = 0; i < 100; ++i) manager().onTaskStart("s1", "e" + std::to_string(i % 7 + 1));
  AllocationSnapshot s = manager().snapshot();
  EXPECT_EQ(s.numExecutorsToAdd, 1);
  EXPECT_EQ(s.addTime, -1);
  EXPECT_EQ(tickAt(10000).target, 7) << "100 running tasks still need 100 executors; no add";
}

TEST_F(AllocationTest, LoweringTheTargetOnlyCancelsRequests) {
  config.bounds.minExecutors = 2;
  manager().onStageSubmitted("s1", 10);
  EXPECT_EQ(targetsEverySecond(1000, 3000), (std::vector<int>{3, 5, 9})) << "starting from min";
  addExecutors(1, 7);
  for (int i = 1; i <= 7; ++i) manager().onTaskStart("s1", "e" + std::to_string(i));
  for (int i = 1; i <= 7; ++i)
    manager().onTaskEnd("s1", "e" + std::to_string(i), TaskEnd::kSuccess);
  // 3 tasks still pending: maxNeeded 3 < 7.
  TickResult lowered = tickAt(3100);
  EXPECT_EQ(lowered.target, 3);
  EXPECT_TRUE(lowered.toRemove.empty()) << "lowering never kills an executor";
  ASSERT_TRUE(hasDecision(lowered, Decision::Action::kLowerTarget));
  manager().onStageCompleted("s1");
  EXPECT_EQ(tickAt(3200).target, 2) << "never below minExecutors";
  EXPECT_TRUE(tickAt(3300).toRemove.empty());
}

TEST_F(AllocationTest, IdleExecutorsGoAfterTheTimeoutOldestFirstNeverBelowMin) {
  config.bounds.minExecutors = 1;
  config.bounds.initialExecutors = 1;
  addExecutors(1, 3);
  EXPECT_TRUE(tickAt(59999).toRemove.empty());
  TickResult result = tickAt(60000);
  EXPECT_EQ(result.toRemove, (std::vector<ExecutorId>{"e1", "e2"}));
  ASSERT_TRUE(hasDecision(result, Decision::Action::kKeep));
  EXPECT_EQ(result.decisions.back().why, "keeping e3: idle for 60.0s but at minExecutors=1");
  // Once gone, the survivor is still kept, and the removed ones are not proposed again.
  manager().onExecutorRemoved("e1");
  manager().onExecutorRemoved("e2");
  EXPECT_TRUE(tickAt(60100).toRemove.empty());
}

TEST_F(AllocationTest, IdleRemovalNeverGoesBelowTheTarget) {
  manager().onStageSubmitted("s1", 4);
  targetsEverySecond(1000, 3000);  // 1, 3, 4
  addExecutors(1, 6);              // two more than needed, e.g. granted late
  for (int i = 1; i <= 4; ++i) manager().onTaskStart("s1", "e" + std::to_string(i));
  // e5 and e6 idle since t=3000; the target stays 4 while the 4 tasks run.
  TickResult result = tickAt(63000);
  EXPECT_EQ(result.target, 4);
  EXPECT_EQ(result.toRemove, (std::vector<ExecutorId>{"e5", "e6"}));
  for (int i = 1; i <= 4; ++i)
    manager().onTaskEnd("s1", "e" + std::to_string(i), TaskEnd::kSuccess);
  manager().onStageCompleted("s1");
  manager().onExecutorRemoved("e5");
  manager().onExecutorRemoved("e6");
  // The target drops to 0 as the work is done; the four go a timeout after their last task.
  EXPECT_EQ(tickAt(64000).target, 0);
  EXPECT_TRUE(tickAt(122999).toRemove.empty());
  EXPECT_EQ(tickAt(123000).toRemove.size(), 4u);
}

TEST_F(AllocationTest, ABusyExecutorNeverTimesOut) {
  startStage(/*executors=*/1, /*tasks=*/1, /*startedOn=*/{"e1"});
  EXPECT_TRUE(tickAt(600000).toRemove.empty());
  manager().onTaskEnd("s1", "e1", TaskEnd::kSuccess);
  EXPECT_TRUE(tickAt(659999).toRemove.empty()) << "idle from the end of its last task";
  EXPECT_EQ(tickAt(660000).toRemove, (std::vector<ExecutorId>{"e1"}));
}

TEST_F(AllocationTest, CachedDataKeepsAnExecutorUntilTheCachedTimeout) {
  config.cachedExecutorIdleTimeout = 300000;
  addExecutors(1, 2);
  manager().onBlocksCached("e1", "s1");
  EXPECT_EQ(tickAt(60000).toRemove, (std::vector<ExecutorId>{"e2"}));
  EXPECT_TRUE(tickAt(299999).toRemove.empty());
  EXPECT_EQ(tickAt(300000).toRemove, (std::vector<ExecutorId>{"e1"}));
}

TEST_F(AllocationTest, UncachingDoesNotRestartTheIdleClock) {
  addExecutors(1, 1);
  manager().onBlocksCached("e1", "s1");  // cachedExecutorIdleTimeout: infinity
  EXPECT_TRUE(tickAt(90000).toRemove.empty());
  manager().onBlocksUncached("s1");
  EXPECT_EQ(tickAt(90100).toRemove, (std::vector<ExecutorId>{"e1"}))
      << "idle 90s > executorIdleTimeout 60s: goes at the next tick";
}

TEST_F(AllocationTest, ShuffleOutputOfAnActiveJobHoldsTheExecutor) {
  addExecutors(1, 1);
  manager().onShuffleOutput("e1", "j1");
  EXPECT_TRUE(tickAt(3600000).toRemove.empty());
  EXPECT_EQ(manager().monitor().expiryOf(*manager().monitor().find("e1")).why,
            "holds shuffle data of an active job");
  manager().onShuffleReleased("j1");
  EXPECT_EQ(tickAt(3600100).toRemove, (std::vector<ExecutorId>{"e1"}));
}

// Spark: shuffleTracking.timeout applies only to shuffle data whose job has ended.
TEST_F(AllocationTest, ShuffleTrackingTimeoutAppliesOnlyAfterTheJobEnds) {
  config.shuffleTrackingTimeout = 120000;
  addExecutors(1, 1);
  manager().onShuffleOutput("e1", "j1");
  EXPECT_TRUE(tickAt(120000).toRemove.empty()) << "its job still runs";
  EXPECT_TRUE(tickAt(3600000).toRemove.empty()) << "its job still runs";
  manager().onShuffleInactive("j1");
  EXPECT_EQ(tickAt(3600100).toRemove, (std::vector<ExecutorId>{"e1"}));
}

// decommission.enabled: an idle executor the policy lets go is decommissioned, not killed, and
// the decision says so; while it decommissions it is neither timed out again nor counted among
// the executors that can go (Spark's removeExecutors with decommissioning).
TEST_F(AllocationTest, DecommissionedRatherThanKilledWithDecommissioning) {
  config.decommissionEnabled = true;
  config.bounds.minExecutors = 1;
  addExecutors(1, 3);
  const TickResult result = tickAt(60000);
  EXPECT_TRUE(result.toRemove.empty());
  EXPECT_EQ(result.toDecommission, (std::vector<ExecutorId>{"e1", "e2"})) << "min 1 keeps e3";
  expectDecision(result, 1, Decision::Action::kDecommission, "decommissioning e1: idle for 60.0s");
  EXPECT_EQ(manager().snapshot().decommissioning, 2);
  EXPECT_EQ(manager().monitor().expiryOf(*manager().monitor().find("e1")).why, "decommissioning");
  EXPECT_TRUE(tickAt(120000).toDecommission.empty()) << "e3 is the last one not decommissioning";
  manager().onExecutorAdded("e4");
  EXPECT_EQ(tickAt(180000).toDecommission, (std::vector<ExecutorId>{"e3"}));
}

// Without shuffle tracking (allowed with decommissioning and shuffle block migration, as in
// Spark), shuffle data of a running job no longer holds an idle executor: it goes at
// executorIdleTimeout, to be decommissioned and its blocks migrated.
TEST_F(AllocationTest, WithoutShuffleTrackingShuffleDataOfARunningJobDoesNotHoldAnExecutor) {
  config.decommissionEnabled = true;
  config.shuffleTrackingEnabled = false;
  addExecutors(1, 1);
  manager().onShuffleOutput("e1", "job-1/map");
  EXPECT_EQ(manager().monitor().expiryOf(*manager().monitor().find("e1")).why,
            "idle (executorIdleTimeout=1min)");
  EXPECT_EQ(tickAt(60000).toDecommission, (std::vector<ExecutorId>{"e1"}));
}

// Spark's ExecutorAllocationManager: with several tasks per executor, one executor needed and
// a speculative copy pending, one more executor (the copy may not run beside its original).
TEST_F(AllocationTest, SpeculativeCopyNeedsASecondExecutorWhenOneHoldsEveryTask) {
  config.executorCores = 4;
  startStage(/*executors=*/1, /*tasks=*/2, /*startedOn=*/{"e1", "e1"});
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 1);
  manager().onSpeculativeTaskSubmitted("s1");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 2) << "ceil(3 / 4) = 1, +1 for the copy";
  EXPECT_EQ(tickAt(1000).target, 2);
}

TEST_F(AllocationTest, NoExtraExecutorForSpeculationWithOneTaskPerExecutor) {
  startStage(/*executors=*/1, /*tasks=*/1, /*startedOn=*/{"e1"});
  manager().onSpeculativeTaskSubmitted("s1");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 2) << "2 tasks, 1 per executor: no +1";
}

// Spark: when an original task succeeds before its speculative copy launched, the pending copy
// is dropped, so the target does not ramp for executors nobody needs.
TEST_F(AllocationTest, PendingSpeculativeTaskDroppedWhenTheOriginalSucceeds) {
  startStage(/*executors=*/2, /*tasks=*/2, /*startedOn=*/{"e1", "e2"});
  manager().onTaskEnd("s1", "e1", ExecutorAllocationManager::TaskEnd::kSuccess);
  manager().onSpeculativeTaskSubmitted("s1");
  EXPECT_EQ(manager().snapshot().pendingSpeculativeTasks, 1);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 2);
  manager().onTaskEnd("s1", "e2", ExecutorAllocationManager::TaskEnd::kSuccess);
  manager().onPendingSpeculativeTaskDropped("s1");
  EXPECT_EQ(manager().snapshot().pendingSpeculativeTasks, 0);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 0);
  EXPECT_EQ(manager().snapshot().addTime, -1) << "no backlog left";
  manager().onPendingSpeculativeTaskDropped("s1");  // nothing left to drop: no underflow
  EXPECT_EQ(manager().snapshot().pendingSpeculativeTasks, 0);
}

// SPARK-31418: a stage whose tasks every executor is excluded for asks for executors beyond
// those there are, until it is schedulable again or completes.
TEST_F(AllocationTest, AnUnschedulableStageAsksForExecutorsBeyondThoseThereAre) {
  startStage(/*executors=*/2, /*tasks=*/3, /*startedOn=*/{"e1", "e2"});
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 3);
  manager().onUnschedulableTaskSetAdded("s1");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 3) << "max(3 tasks, 2 executors + 1)";
  manager().onExecutorAdded("e3");
  manager().onExecutorAdded("e4");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 5) << "4 executors, all excluded, + 1";
  manager().onUnschedulableTaskSetAdded("unknown");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 5) << "a stage the policy does not know counts 0";
  manager().onStageCompleted("s1");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 2) << "completed: only its 2 running tasks";
  manager().onStageSubmitted("s2", 1);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 3);
}

TEST_F(AllocationTest, WithoutShuffleTrackingShuffleDataHoldsNothing) {
  config.shuffleTrackingEnabled = false;
  addExecutors(1, 1);
  manager().onShuffleOutput("e1", "j1");
  EXPECT_EQ(tickAt(60000).toRemove, (std::vector<ExecutorId>{"e1"}));
}

TEST_F(AllocationTest, InitializingKeepsTheInitialTargetUntilAStageArrives) {
  config.bounds.initialExecutors = 3;
  EXPECT_EQ(manager().initialTarget(), 3);
  EXPECT_EQ(tickAt(1000).target, 3) << "nothing needed, but still initializing";
  EXPECT_TRUE(manager().snapshot().initializing);
  manager().onStageSubmitted("s1", 1);
  EXPECT_FALSE(manager().snapshot().initializing);
  EXPECT_EQ(tickAt(1100).target, 1) << "one task needs one executor";
}

TEST_F(AllocationTest, AnExecutorIdlingOutEndsInitializing) {
  config.bounds.initialExecutors = 3;
  addExecutors(1, 3);
  EXPECT_EQ(tickAt(59900).target, 3);
  TickResult result = tickAt(60000);
  EXPECT_FALSE(manager().snapshot().initializing);
  EXPECT_EQ(result.target, 0);
  EXPECT_EQ(result.toRemove, (std::vector<ExecutorId>{"e1", "e2", "e3"}));
}

TEST_F(AllocationTest, AllocationRatioBelowOneNeedsFewerExecutors) {
  config.executorAllocationRatio = 0.5;
  manager().onStageSubmitted("s1", 9);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 5) << "ceil(9 * 0.5)";
  EXPECT_EQ(targetsEverySecond(1000, 4000), (std::vector<int>{1, 3, 5, 5}));
}

TEST_F(AllocationTest, SeveralTasksPerExecutor) {
  config.executorCores = 4;
  config.taskCpus = 1;
  manager().onStageSubmitted("s1", 10);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 3) << "ceil(10 / 4)";
  config.executorCores = 4;
  config.taskCpus = 2;
  ExecutorAllocationManager twoCpuTasks(config, clock);
  twoCpuTasks.onStageSubmitted("s1", 10);
  EXPECT_EQ(twoCpuTasks.maxNumExecutorsNeeded(), 5) << "ceil(10 / (4 / 2))";
}

// Spark's maxNumExecutorsNeededPerResourceProfile divides a profile's tasks by its
// maxTasksPerExecutor; tide divides each stage's tasks by executor.cores / the stage's own cpus
// per task, so a stage of 4-cpu tasks on 4-core executors asks for one executor per task.
TEST_F(AllocationTest, MaxNeededCountsEachStageAtItsOwnTasksPerExecutor) {
  config.executorCores = 4;
  config.taskCpus = 1;
  config.bounds.maxExecutors = 100;
  manager().onStageSubmitted("wide", 8, 4);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 8) << "8 tasks / (4 cores / 4 cpus)";
  EXPECT_EQ(targetsEverySecond(1000, 5000), (std::vector<int>{1, 3, 7, 8, 8}));
  manager().onStageSubmitted("narrow", 10);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 11) << "ceil(8 / 1 + 10 / 4)";
  manager().onStageSubmitted("half", 3, 2);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 12) << "ceil(8 + 2.5 + 3 / 2)";
}

TEST_F(AllocationTest, SpeculativeCopyOfAOneTaskPerExecutorStageNeedsNoOffset) {
  config.executorCores = 4;
  addExecutors(1, 1);
  manager().onStageSubmitted("wide", 1, 4);
  manager().onTaskStart("wide", "e1");
  manager().onSpeculativeTaskSubmitted("wide");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 2) << "2 tasks of 4 cpus: 2, no +1";
}

TEST_F(AllocationTest, SpeculativeTasksCountAndArmTheBacklog) {
  manager().onStageSubmitted("s1", 2);
  addExecutors(1, 2);
  startTasks("s1", {"e1", "e2"});
  EXPECT_EQ(manager().snapshot().addTime, -1);
  clock.set(5000);
  manager().onSpeculativeTaskSubmitted("s1");
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 3);
  EXPECT_EQ(manager().snapshot().addTime, 6000);
  EXPECT_EQ(tickAt(6000).target, 3) << "max(target 0, live 2) + 1";
  manager().onTaskStart("s1", "e3", /*speculative=*/true);
  EXPECT_EQ(manager().snapshot().pendingSpeculativeTasks, 0);
  EXPECT_EQ(manager().snapshot().runningTasks, 3);
}

TEST_F(AllocationTest, AFailedTaskIsPendingAgainAndReArmsTheBacklog) {
  manager().onStageSubmitted("s1", 1);
  addExecutors(1, 1);
  manager().onTaskStart("s1", "e1");
  EXPECT_EQ(manager().snapshot().addTime, -1);
  clock.set(2000);
  manager().onTaskEnd("s1", "e1", TaskEnd::kFailed);
  EXPECT_EQ(manager().snapshot().pendingTasks, 1);
  EXPECT_EQ(manager().snapshot().addTime, 3000);
  clock.set(2500);
  manager().onTaskStart("s1", "e1");
  manager().onTaskEnd("s1", "e1", TaskEnd::kFailed);
  EXPECT_EQ(manager().snapshot().addTime, 3500) << "re-armed from the second failure";
  clock.set(2600);
  manager().onExecutorAdded("e2");
  manager().onStageSubmitted("s2", 1);
  EXPECT_EQ(manager().snapshot().addTime, 3500) << "an armed timer is not pushed back";
}

TEST_F(AllocationTest, AKilledTaskIsNotRetried) {
  manager().onStageSubmitted("s1", 1);
  addExecutors(1, 2);
  manager().onTaskStart("s1", "e1");
  manager().onSpeculativeTaskSubmitted("s1");
  manager().onTaskStart("s1", "e2", true);
  manager().onTaskEnd("s1", "e2", TaskEnd::kSuccess, true);
  manager().onTaskEnd("s1", "e1", TaskEnd::kKilled);
  AllocationSnapshot s = manager().snapshot();
  EXPECT_EQ(s.pendingTasks, 0);
  EXPECT_EQ(s.runningTasks, 0);
}

TEST_F(AllocationTest, RuntimeBoundsClipTheTargetAtOnce) {
  manager().onStageSubmitted("s1", 100);
  targetsEverySecond(1000, 4000);  // 1, 3, 7, 15
  EXPECT_TRUE(manager().setBounds({0, 0, 5}).ok());
  EXPECT_EQ(manager().snapshot().target, 5);
  TickResult result = tickAt(4100);
  EXPECT_TRUE(result.targetChanged());
  EXPECT_EQ(result.previousTarget, 15);
  EXPECT_EQ(result.target, 5);
  ASSERT_TRUE(hasDecision(result, Decision::Action::kBoundsChanged));
  EXPECT_EQ(result.decisions[0].why, "bounds changed from [0, 20] to [0, 5]; target 15 -> 5");
  EXPECT_TRUE(manager().setBounds({9, 9, 12}).ok());
  EXPECT_EQ(tickAt(4200).target, 9) << "raised to the new min";
}

TEST_F(AllocationTest, InvalidRuntimeBoundsAreRefusedAndChangeNothing) {
  EXPECT_EQ(manager().setBounds({5, 5, 2}), Status::invalidArgument("min=5 is greater than max=2"));
  EXPECT_EQ(manager().setBounds({-1, 0, 4}), Status::invalidArgument("min: must not be negative"));
  EXPECT_EQ(manager().snapshot().bounds.maxExecutors, 20);
  std::string warning;
  EXPECT_TRUE(manager().setBounds({3, 1, 4}, &warning).ok());
  EXPECT_EQ(warning, "initial=1 is less than min=3; using min");
  EXPECT_EQ(manager().snapshot().bounds.initialExecutors, 3);
  // As Spark accepts initialExecutors > maxExecutors, it is clipped with a warning.
  EXPECT_TRUE(manager().setBounds({0, 7, 4}, &warning).ok());
  EXPECT_EQ(warning, "initial=7 is greater than max=4; using max");
  EXPECT_EQ(manager().snapshot().bounds.initialExecutors, 4);
}

TEST_F(AllocationTest, DisabledAllocationHoldsAFixedNumber) {
  config.enabled = false;
  config.executorInstances = 4;
  EXPECT_EQ(manager().initialTarget(), 4);
  addExecutors(1, 4);
  manager().onStageSubmitted("s1", 1000);
  EXPECT_EQ(tickAt(10000).target, 4);
  EXPECT_TRUE(tickAt(600000).toRemove.empty());
}

TEST_F(AllocationTest, ACompletedStageStopsCountingItsTasks) {
  manager().onStageSubmitted("s1", 50);
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 50);
  manager().onStageCompleted("s1");  // e.g. aborted after a task failed four times
  EXPECT_EQ(manager().maxNumExecutorsNeeded(), 0);
  EXPECT_EQ(manager().snapshot().addTime, -1);
}

TEST_F(AllocationTest, SnapshotCountsExecutorsByState) {
  startStage(/*executors=*/3, /*tasks=*/5, /*startedOn=*/{"e1", "e1"});
  AllocationSnapshot s = manager().snapshot();
  EXPECT_EQ(s.live, 3);
  EXPECT_EQ(s.busy, 1);
  EXPECT_EQ(s.idle, 2);
  EXPECT_EQ(s.pendingTasks, 3);
  EXPECT_EQ(s.runningTasks, 2);
  EXPECT_EQ(s.maxNeeded, 5);
}

// Spark's maxTasksPerExecutor per ResourceProfile: a stage of 2-cpu tasks on a profile of
// 8-core executors needs tasks / 4 of that profile's executors and none of the default's; the
// decision names the profile.
TEST_F(AllocationTest, EachProfileIsSizedAtItsOwnCoresAndItsDecisionsNameIt) {
  config.executorCores = 2;
  ResourceProfile wide;
  wide.id = 1;
  wide.executorCores = 8;
  wide.executorMemoryMb = 4096;
  policy().addResourceProfile(wide);
  policy().onStageSubmitted("fit", 16, 2, wide.id);
  policy().onStageSubmitted("prepare", 3);
  EXPECT_EQ(policy().maxNumExecutorsNeeded(wide.id), 4);
  EXPECT_EQ(policy().maxNumExecutorsNeeded(kDefaultProfileId), 2);
  const TickResult result = tickAt(1000);
  EXPECT_EQ(result.targets, (std::map<int, int>{{kDefaultProfileId, 1}, {wide.id, 1}}));
  EXPECT_EQ(result.target, 2);
  bool named = false;
  for (const Decision& d : result.decisions) {
    if (d.profileId != wide.id) continue;
    named = true;
    EXPECT_EQ(d.why,
              "profile 1 (8 cores, 4096 MB): added 1 (backlog of 16 tasks for 1.0s), target 1, "
              "total 2");
  }
  EXPECT_TRUE(named);
  // An executor of profile 1 counts toward its own profile only.
  policy().onExecutorAdded("w1", wide.id);
  EXPECT_EQ(policy().snapshot().profiles.at(1).live, 1);
  EXPECT_EQ(policy().snapshot().profiles.at(0).live, 0);
}

}  // namespace
}  // namespace tide::allocation
