// The adaptive policy's rules, one test each. Time only moves when a test moves it; every
// expected number is worked out by hand from the rules in adaptive_allocation_policy.h.

#include "allocation/adaptive_allocation_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/allocation/policy_test.h"

namespace tide::allocation {
namespace {

using ::testing::HasSubstr;

class AdaptiveTest : public policy_testing::PolicyTest<AdaptiveAllocationPolicy> {
 protected:
  AdaptiveTest() {
    config.policy = PolicyKind::kAdaptive;
    config.bounds = {0, 0, 8};
    config.targetBacklogDuration = 5000;
    config.executorIdleTimeout = 60000;
  }

  // Runs `n` tasks of stage `stage` on executors e1..en, from `start` for `ms` each.
  void runWave(const std::string& stage, int n, TimeMs start, DurationMs ms) {
    clock.set(start);
    for (int i = 1; i <= n; ++i) policy().onTaskStart(stage, "e" + std::to_string(i));
    clock.set(start + ms);
    for (int i = 1; i <= n; ++i) {
      policy().onTaskEnd(stage, "e" + std::to_string(i), TaskEnd::kSuccess);
    }
  }
};

TEST_F(AdaptiveTest, TheFactoryBuildsThePolicyTheConfigNames) {
  EXPECT_STREQ(makeAllocationPolicy(config, clock)->name(), "adaptive");
  config.policy = PolicyKind::kSpark;
  EXPECT_STREQ(makeAllocationPolicy(config, clock)->name(), "spark");
}

// Shuffle output holds its executor while its job runs; once the job has ended
// (onShuffleInactive) only for shuffleTracking.timeout, as under Spark's policy.
TEST_F(AdaptiveTest, ShuffleOutputWhoseJobEndedHoldsItsExecutorForTheTrackingTimeoutOnly) {
  config.shuffleTrackingTimeout = 120000;
  policy().onExecutorAdded("e1");
  policy().onShuffleOutput("e1", "j1");
  EXPECT_TRUE(tickAt(3600000).toRemove.empty()) << "its job still runs";
  policy().onShuffleInactive("j1");
  EXPECT_EQ(tickAt(3600100).toRemove, (std::vector<ExecutorId>{"e1"}));
}

TEST_F(AdaptiveTest, AsksAtOnceForWhatFinishesTheBacklogWithinTheTarget) {
  // 200 tasks of unknown duration: 500 ms each is assumed, 100 s of work / 5 s = 20, max 8.
  policy().onStageSubmitted("s1", 200);
  expectDecision(tickAt(0), 8, Decision::Action::kRaiseTarget,
                 "backlog 100.0s of work / target 5.0s → 8 executors (maxExecutors); start latency "
                 "1.0s; target 0 → 8");
}

TEST_F(AdaptiveTest, NeverAboveTheTasksParallelism) {
  config.executorCores = 2;
  policy().onStageSubmitted("s1", 3);  // 3 tasks of (assumed) 500 ms: 2 executors of 2 slots
  policy().onStageSubmitted("s2", 0);
  config.targetBacklogDuration = 100;  // not read: the policy copied the config
  EXPECT_EQ(tickAt(0).target, 1);      // 1.5 s of work / 5 s on 2 slots -> 1
  // A deep backlog of 3 long tasks: the work asks for many, the tasks can use 2.
  clock.set(100);
  policy().onExecutorAdded("e1");
  policy().onTaskStart("s1", "e1");
  policy().onTaskStart("s1", "e1");
  const TickResult later = tickAt(60000);  // running 60 s, nothing finished: 2 x 60 s each
  EXPECT_EQ(later.target, 2);
  EXPECT_THAT(whyOf(later, Decision::Action::kRaiseTarget), HasSubstr("(all the tasks can use)"));
}

// Issue 13 item 5: a stage's tasks fill executors at executor.cores / its own cpus per task.
TEST_F(AdaptiveTest, WideTasksFillAnExecutorEach) {
  config.executorCores = 4;
  policy().onStageSubmitted("wide", 6, 4);  // 6 x 500 ms assumed = 3 s of work, one per executor
  const AdaptiveAllocationPolicy::Estimate e = policy().estimate();
  EXPECT_EQ(e.byParallelism, 6);
  EXPECT_DOUBLE_EQ(e.executorWorkMs, 3000.0);
  EXPECT_EQ(e.byWork, 1) << "3 s of executor time / 5 s target";
  policy().onStageSubmitted("wide2", 40, 4);  // 20 s more: 23 s / 5 s -> 5
  EXPECT_EQ(policy().estimate().byWork, 5);
  EXPECT_EQ(tickAt(0).target, 5);
}

TEST_F(AdaptiveTest, LearnsTaskDurationsAndStartLatency) {
  policy().onStageSubmitted("s1", 100);
  EXPECT_EQ(tickAt(0).target, 8);
  clock.set(400);
  for (int i = 1; i <= 8; ++i) policy().onExecutorAdded("e" + std::to_string(i));
  EXPECT_EQ(policy().startLatencyMs(), 400);  // every one of the 8 waited 400 ms
  runWave("s1", 8, 400, 200);
  EXPECT_DOUBLE_EQ(policy().expectedTaskMs("s1"), 200.0);
  // 92 tasks of 200 ms left: 18.4 s / 5 s -> 4; 8 live executors stay until idle.
  const AdaptiveAllocationPolicy::Estimate e = policy().estimate();
  EXPECT_DOUBLE_EQ(e.workMs, 92 * 200.0);
  EXPECT_EQ(e.desired, 4);
}

TEST_F(AdaptiveTest, ReleasesIdleExecutorsAtOnceWhenNoWorkIsExpected) {
  policy().onStageSubmitted("s1", 8);
  tickAt(0);
  clock.set(300);
  for (int i = 1; i <= 8; ++i) policy().onExecutorAdded("e" + std::to_string(i));
  runWave("s1", 8, 300, 200);
  policy().onStageCompleted("s1");
  const TickResult result = tickAt(500);
  EXPECT_EQ(result.target, 0);
  EXPECT_EQ(result.toRemove.size(), 8u);
  EXPECT_EQ(whyOf(result, Decision::Action::kRemove),
            "removing e1: idle for 0.0s with no task pending; the work needs 0 executors; no "
            "further stage expected");
}

TEST_F(AdaptiveTest, KeepsExecutorsTheNextStageOfAStreamWillWant) {
  // Two executors from the start, registered 100 ms after the request; then stages of 2 tasks
  // of 100 ms every 200 ms.
  config.bounds = {0, 2, 8};
  EXPECT_EQ(policy().initialTarget(), 2);  // asked for at 0
  clock.set(100);
  policy().onExecutorAdded("e1");
  policy().onExecutorAdded("e2");
  EXPECT_EQ(policy().startLatencyMs(), 100);
  for (int k = 0; k < 5; ++k) {
    const TimeMs t = 100 + 200 * k;
    const std::string stage = "s" + std::to_string(k);
    clock.set(t);
    policy().onStageSubmitted(stage, 2);
    runWave(stage, 2, t, 100);
    policy().onStageCompleted(stage);
    if (k == 0) continue;  // one stage is no stream yet
    // Idle until the next stage, due in 100 ms: sooner than twice the 100 ms start latency.
    const TickResult idle = tickAt(t + 100);
    EXPECT_TRUE(idle.toRemove.empty()) << "stage " << k;
    EXPECT_THAT(whyOf(idle, Decision::Action::kKeep),
                HasSubstr("next stage expected in 0.1s (stages every 0.2s)"))
        << "stage " << k;
  }
  // The stream stops: past twice its interval nothing is expected and both go.
  const TickResult after = tickAt(100 + 200 * 4 + 100 + 500);
  EXPECT_EQ(after.toRemove.size(), 2u);
}

TEST_F(AdaptiveTest, NotAddingWhenTheLiveExecutorsFinishFirst) {
  // Only when starting an executor takes longer than the target can the live ones be faster.
  config.targetBacklogDuration = 500;
  policy().onStageSubmitted("s1", 1);
  tickAt(0);
  clock.set(1000);  // start latency 1 s
  policy().onExecutorAdded("e1");
  runWave("s1", 1, 1000, 100);  // tasks of 100 ms
  policy().onStageSubmitted("s2", 9);
  clock.set(1100);
  policy().onTaskStart("s2", "e1");
  // 8 pending + 1 running of 100 ms: 0.9 s of work / 0.5 s asks for 2, but e1 finishes it
  // before a new executor could start (1 s): no raise.
  expectDecision(tickAt(1100), 1, Decision::Action::kNotAdding,
                 "not adding: 1 executor finish 0.9s of work before a new one could start (start "
                 "latency 1.0s)");
}

TEST_F(AdaptiveTest, ExecutorsWithCachedDataWaitForTheirDeadline) {
  config.cachedExecutorIdleTimeout = 30000;
  policy().onStageSubmitted("s1", 2);
  tickAt(0);
  clock.set(100);
  policy().onExecutorAdded("e1");
  policy().onExecutorAdded("e2");
  runWave("s1", 2, 100, 200);
  policy().onBlocksCached("e1", "s1");
  policy().onStageCompleted("s1");
  const TickResult now = tickAt(400);
  EXPECT_EQ(now.toRemove, std::vector<ExecutorId>({"e2"}));
  EXPECT_TRUE(tickAt(30200).toRemove.empty());
  const TickResult later = tickAt(30300);
  EXPECT_EQ(later.toRemove, std::vector<ExecutorId>({"e1"}));
}

TEST_F(AdaptiveTest, NeverBelowMinExecutorsAndTheInitialTargetHoldsUntilTheFirstStage) {
  config.bounds = {2, 4, 8};
  EXPECT_EQ(policy().initialTarget(), 4);
  clock.set(100);
  for (int i = 1; i <= 4; ++i) policy().onExecutorAdded("e" + std::to_string(i));
  const TickResult waiting = tickAt(1000);
  EXPECT_EQ(waiting.target, 4);  // initializing: nothing lowered, nothing removed
  EXPECT_TRUE(waiting.toRemove.empty());
  policy().onStageSubmitted("s1", 1);
  runWave("s1", 1, 1000, 100);
  policy().onStageCompleted("s1");
  const TickResult done = tickAt(1200);
  EXPECT_EQ(done.target, 2);
  EXPECT_EQ(done.toRemove.size(), 2u);
}

TEST_F(AdaptiveTest, SetBoundsClipsTheTarget) {
  policy().onStageSubmitted("s1", 200);
  EXPECT_EQ(tickAt(0).target, 8);
  EXPECT_TRUE(policy().setBounds({0, 0, 3}).ok());
  const TickResult result = tickAt(100);
  EXPECT_EQ(result.target, 3);
  ASSERT_NE(find(result, Decision::Action::kBoundsChanged), nullptr);
  EXPECT_FALSE(policy().setBounds({5, 0, 3}).ok());
}

}  // namespace
}  // namespace tide::allocation
