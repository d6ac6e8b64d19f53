// Exclusion on failure in the task scheduler (excludeOnFailure.*, Spark's TaskSchedulerImpl with
// a HealthTracker): where a task failed it is not offered again, an executor where a stage's
// tasks keep failing gets none of them, a successful stage's failures exclude the executor for
// the application until the timeout, and a stage every executor is excluded for is reported
// unschedulable so that the allocation policy asks for another executor (SPARK-31418).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "allocation/executor_allocation_manager.h"
#include "am/allocation_listener.h"
#include "am/scheduler/task_scheduler.h"
#include "tests/am/scheduler_fixture.h"
#include "tests/support/errors.h"

namespace tide::am {
namespace {

constexpr DurationMs kHour = 60 * 60 * 1000;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

rest::TaskStatusUpdate ended(int64_t taskId, rest::TaskState state) {
  rest::TaskStatusUpdate update = testing::updateOf(taskId, state);
  update.exitCode = state == rest::TaskState::kFailed ? 1 : 0;
  return update;
}

class ExclusionTest : public testing::SchedulerFixture {
 protected:
  ExclusionTest() : SchedulerFixture({/*tasks=*/false, /*data=*/false}, /*offerSeed=*/42) {
    config.excludeOnFailure.enabled = true;
  }
  std::string submit(int tasks) {
    return scheduler().submitJob(parseJob(R"({"name": "t", "stages": [{"id": "s", "tasks": )" +
                                          std::to_string(tasks) + R"(, "builtin": "noop"}]})"));
  }
  // "index#attempt" of each launch for one executor offering `slots` (on host "host-<id>").
  std::vector<std::string> offer(const std::string& executorId, int slots) {
    launches_ = scheduler().resourceOffers({WorkerOffer{executorId, "host-" + executorId, slots}});
    std::vector<std::string> out;
    for (const rest::TaskLaunch& launch : launches_) {
      out.push_back(std::to_string(launch.index) + "#" + std::to_string(launch.attempt));
    }
    return out;
  }
  // Ends the i-th launch of the last offer.
  void end(size_t i, rest::TaskState state) {
    const rest::TaskLaunch& launch = launches_.at(i);
    ASSERT_TRUE(scheduler().statusUpdate(ended(launch.taskId, state),
                                         scheduler().executorOf(launch.taskId).value()));
  }
  // The position in the last offer's launches of task `index`.
  size_t launchIndexOf(int64_t index) const {
    for (size_t i = 0; i < launches_.size(); ++i) {
      if (launches_[i].index == index) return i;
    }
    ADD_FAILURE() << "task " << index << " was not launched";
    return 0;
  }
  // The ids of the executors the scheduler wants released now; their reasons in `reasons`.
  std::vector<std::string> kills(std::vector<std::string>* reasons = nullptr) {
    std::vector<std::string> ids;
    for (const ExecutorToKill& kill : scheduler().takeExcludedExecutorsToKill()) {
      ids.push_back(kill.executorId);
      if (reasons) reasons->push_back(kill.reason);
    }
    return ids;
  }
  // Task 0 fails on e1 while task 1 keeps e1 busy: every executor there is is excluded for
  // task 0, and none is idle.
  void failTaskZeroOnABusyExecutor() {
    submit(2);
    ASSERT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
    end(launchIndexOf(0), rest::TaskState::kFailed);
    listener.take();
  }
  std::vector<std::string> unschedulableEvents() {
    std::vector<std::string> out;
    for (const std::string& event : listener.take()) {
      if (event.find("schedulable") != std::string::npos) out.push_back(event);
    }
    return out;
  }

 private:
  std::vector<rest::TaskLaunch> launches_;
};

TEST_F(ExclusionTest, AFailedTaskIsNotOfferedTheExecutorItFailedOnAgain) {
  submit(1);
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  EXPECT_THAT(offer("e1", 1), IsEmpty());  // maxTaskAttemptsPerExecutor = 1
  EXPECT_EQ(scheduler().pendingTaskCount(), 1);
  EXPECT_THAT(offer("e2", 1), ElementsAre("0#1"));
}

TEST_F(ExclusionTest, WithoutExclusionTheFailedTaskRunsAgainWhereItFailed) {
  config.excludeOnFailure.enabled = false;
  submit(1);
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  EXPECT_THAT(offer("e1", 1), ElementsAre("0#1"));
}

TEST_F(ExclusionTest, ATaskPreferringTheNodeItFailedOnRunsElsewhereAfterTheLocalityWait) {
  scheduler().submitJob(parseJob(R"({"name": "t", "stages": [{"id": "s", "tasks": 1,
      "builtin": "noop", "preferred_hosts": ["host-e1"]}]})"));
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  EXPECT_THAT(offer("e2", 1), IsEmpty());  // not local to e2: delay scheduling waits
  clock.advance(config.localityWaits.node);
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  EXPECT_THAT(offer("e2", 1), ElementsAre("0#1"));
}

TEST_F(ExclusionTest, ASpeculativeCopyDoesNotGoWhereTheTaskFailedBefore) {
  config.speculation = true;
  config.speculationQuantile = 0.5;
  submit(2);
  ASSERT_THAT(offer("e2", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  ASSERT_THAT(offer("e1", 2), UnorderedElementsAre("0#1", "1#0"));
  clock.advance(100);
  end(launchIndexOf(1), rest::TaskState::kFinished);
  clock.advance(1000);  // task 0 now runs 11 times longer than the median
  ASSERT_EQ(scheduler().checkSpeculatableTasks(), 1);
  EXPECT_THAT(offer("e2", 1), IsEmpty());
  EXPECT_THAT(offer("e3", 1), ElementsAre("0#2"));
}

TEST_F(ExclusionTest, OtherTasksStillRunWhereOneTaskFailed) {
  submit(3);
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  // Task 0 goes first elsewhere, but here the next task takes the slot.
  EXPECT_THAT(offer("e1", 1), ElementsAre("1#0"));
  EXPECT_THAT(offer("e2", 1), ElementsAre("0#1"));
}

TEST_F(ExclusionTest, AnExecutorWhereTwoTasksFailedGetsNoneOfTheStage) {
  submit(3);
  ASSERT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
  end(0, rest::TaskState::kFailed);
  end(1, rest::TaskState::kFailed);
  // maxFailedTasksPerExecutor (stage) = 2: not even the never-tried task 2 goes to e1.
  EXPECT_THAT(offer("e1", 3), IsEmpty());
  EXPECT_THAT(offer("e2", 3), UnorderedElementsAre("0#1", "1#1", "2#0"));
}

TEST_F(ExclusionTest, ASuccessfulStagesFailuresExcludeTheExecutorForLaterJobsUntilTheTimeout) {
  submit(2);
  ASSERT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
  end(0, rest::TaskState::kFailed);
  end(1, rest::TaskState::kFailed);
  ASSERT_THAT(offer("e2", 2), UnorderedElementsAre("0#1", "1#1"));
  EXPECT_FALSE(scheduler().isExecutorExcluded("e1"));  // only for that stage so far
  end(0, rest::TaskState::kFinished);
  end(1, rest::TaskState::kFinished);
  ASSERT_TRUE(scheduler().allJobsDone());

  // The stage succeeded with two failed tasks on e1: excluded for the application.
  EXPECT_TRUE(scheduler().isExecutorExcluded("e1"));
  ASSERT_EQ(scheduler().excludedExecutors().size(), 1u);
  EXPECT_EQ(scheduler().excludedExecutors()[0].executorId, "e1");
  EXPECT_EQ(scheduler().excludedExecutors()[0].untilMs, clock.nowMs() + kHour);
  submit(2);
  EXPECT_THAT(offer("e1", 2), IsEmpty());
  clock.advance(kHour + 1);
  EXPECT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
  EXPECT_FALSE(scheduler().isExecutorExcluded("e1"));
}

TEST_F(ExclusionTest, ACancelledJobsFailuresExcludeNothingBeyondIt) {
  const std::string job = submit(2);
  ASSERT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
  end(0, rest::TaskState::kFailed);
  end(1, rest::TaskState::kFailed);
  ASSERT_TRUE(scheduler().cancelJob(job, "test"));
  submit(1);
  EXPECT_FALSE(scheduler().isExecutorExcluded("e1"));
  EXPECT_THAT(offer("e1", 1), ElementsAre("0#0"));
}

TEST_F(ExclusionTest, KillExcludedExecutorsHandsTheExcludedExecutorToTheCallerOnce) {
  config.excludeOnFailure.killExcludedExecutors = true;
  submit(2);
  ASSERT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
  end(0, rest::TaskState::kFailed);
  end(1, rest::TaskState::kFailed);
  EXPECT_THAT(kills(), IsEmpty());
  ASSERT_THAT(offer("e2", 2), UnorderedElementsAre("0#1", "1#1"));
  end(0, rest::TaskState::kFinished);
  end(1, rest::TaskState::kFinished);
  std::vector<std::string> reasons;
  EXPECT_THAT(kills(&reasons), ElementsAre("e1"));
  EXPECT_THAT(reasons, ElementsAre(HasSubstr("e1 excluded for task failures")));
  EXPECT_THAT(kills(), IsEmpty());
}

TEST_F(ExclusionTest, KillExcludedExecutorsAlsoHandsOverTheOtherExecutorsOfAnExcludedNode) {
  config.excludeOnFailure.killExcludedExecutors = true;
  submit(5);
  const auto onHostA = [&](const std::string& executorId, int slots) {
    return scheduler().resourceOffers({WorkerOffer{executorId, "hostA", slots}});
  };
  const auto fail = [&](const rest::TaskLaunch& launch, const std::string& executorId) {
    ASSERT_TRUE(
        scheduler().statusUpdate(ended(launch.taskId, rest::TaskState::kFailed), executorId));
  };
  const auto first = onHostA("e1", 2);  // tasks 0 and 1 fail on e1
  ASSERT_EQ(first.size(), 2u);
  fail(first[0], "e1");
  fail(first[1], "e1");
  const auto second = onHostA("e2", 2);  // tasks 2 and 3 (0 and 1 wait for another node)
  ASSERT_EQ(second.size(), 2u);
  fail(second[0], "e2");
  fail(second[1], "e2");
  // e3 on hostA runs what the node may still run; another node runs the rest.
  std::vector<rest::TaskLaunch> rest = onHostA("e3", 5);
  for (const rest::TaskLaunch& launch :
       scheduler().resourceOffers({WorkerOffer{"e4", "hostB", 5}})) {
    rest.push_back(launch);
  }
  ASSERT_EQ(rest.size(), 5u);
  for (const rest::TaskLaunch& launch : rest) {
    ASSERT_TRUE(scheduler().statusUpdate(ended(launch.taskId, rest::TaskState::kFinished),
                                         scheduler().executorOf(launch.taskId).value()));
  }
  ASSERT_TRUE(scheduler().allJobsDone());
  // e1 and e2 are excluded, so hostA is, and e3 goes with it.
  std::vector<std::string> released = kills();
  std::sort(released.begin(), released.end());
  EXPECT_THAT(released, ElementsAre("e1", "e2", "e3"));
  EXPECT_TRUE(scheduler().isExecutorExcluded("e3"));
  EXPECT_FALSE(scheduler().isExecutorExcluded("e4"));
}

TEST_F(ExclusionTest, AStageEveryExecutorIsExcludedForIsUnschedulableUntilItLaunchesAgain) {
  ASSERT_NO_FATAL_FAILURE(failTaskZeroOnABusyExecutor());
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  EXPECT_THAT(unschedulableEvents(), ElementsAre("unschedulable job-1/s"));
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  EXPECT_THAT(unschedulableEvents(), IsEmpty());  // once, not at every offer
  EXPECT_THAT(kills(), IsEmpty()) << "no executor idles: none is killed";

  EXPECT_THAT(offer("e2", 1), ElementsAre("0#1"));
  EXPECT_THAT(unschedulableEvents(), ElementsAre("schedulable job-1/s"));
}

// Spark's killExcludedIdleExecutor: with an executor idle, the scheduler has it killed (a new
// one may take its place) instead of asking the policy for one more, and starts the abort timer.
TEST_F(ExclusionTest, AnIdleExecutorIsKilledToMakeRoomForAStageItCannotRun) {
  const std::string job = submit(1);
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  listener.take();
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  std::vector<std::string> reasons;
  EXPECT_THAT(kills(&reasons), ElementsAre("e1"));
  EXPECT_THAT(reasons, ElementsAre(AllOf(HasSubstr("e1 killed while idle"),
                                         HasSubstr("task s[0] cannot run anywhere"),
                                         HasSubstr("killExcludedIdleExecutor"))));
  EXPECT_THAT(unschedulableEvents(), IsEmpty()) << "Spark posts no unschedulable event here";
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  EXPECT_THAT(kills(), IsEmpty()) << "once per episode";
  // The executor that takes its place runs the task; the timer is over.
  scheduler().executorLost("e1", "killed");
  EXPECT_THAT(offer("e2", 1), ElementsAre("0#1"));
  clock.advance(config.excludeOnFailure.unschedulableTaskSetTimeoutMs);
  offer("e2", 1);
  EXPECT_EQ(scheduler().jobSummary(job)->state, JobState::kRunning);
}

TEST_F(ExclusionTest, AnUnschedulableStageFailsItsJobWhenNoExecutorItCanRunOnComesInTime) {
  const std::string job = submit(1);
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  offer("e1", 1);  // e1 is idle: killed, and the timer starts
  ASSERT_THAT(kills(), ElementsAre("e1"));
  clock.advance(config.excludeOnFailure.unschedulableTaskSetTimeoutMs - 1);
  offer("e1", 1);
  EXPECT_EQ(scheduler().jobSummary(job)->state, JobState::kRunning);
  clock.advance(1);
  offer("e1", 1);
  EXPECT_EQ(scheduler().jobSummary(job)->state, JobState::kFailed);
  EXPECT_THAT(scheduler().jobSummary(job)->message,
              HasSubstr("task s[0] cannot run anywhere: every executor is excluded for it"));
  EXPECT_THAT(scheduler().jobSummary(job)->message,
              HasSubstr("no executor it can run on came in 2m"));
}

TEST_F(ExclusionTest, AStageReportedUnschedulableFailsItsJobAfterTheTimeoutToo) {
  ASSERT_NO_FATAL_FAILURE(failTaskZeroOnABusyExecutor());
  offer("e1", 1);
  ASSERT_THAT(unschedulableEvents(), ElementsAre("unschedulable job-1/s"));
  clock.advance(config.excludeOnFailure.unschedulableTaskSetTimeoutMs);
  offer("e1", 1);
  EXPECT_EQ(scheduler().jobSummary("job-1")->state, JobState::kFailed);
  EXPECT_THAT(scheduler().jobSummary("job-1")->message, HasSubstr("unschedulableTaskSetTimeout"));
}

TEST_F(ExclusionTest, WithoutDynamicAllocationAndNoIdleExecutorAnUnschedulableStageFailsAtOnce) {
  config.excludeOnFailure.dynamicAllocation = false;
  ASSERT_NO_FATAL_FAILURE(failTaskZeroOnABusyExecutor());
  EXPECT_EQ(scheduler().jobSummary("job-1")->state, JobState::kRunning);
  offer("e1", 1);
  EXPECT_EQ(scheduler().jobSummary("job-1")->state, JobState::kFailed);
  EXPECT_THAT(scheduler().jobSummary("job-1")->message,
              HasSubstr("no executor is idle to make room, and dynamic allocation is off"));
}

TEST_F(ExclusionTest, WithoutDynamicAllocationAnIdleExecutorIsStillKilledToMakeRoom) {
  config.excludeOnFailure.dynamicAllocation = false;
  const std::string job = submit(1);
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  offer("e1", 1);
  EXPECT_EQ(scheduler().jobSummary(job)->state, JobState::kRunning) << "as Spark: not at once";
  EXPECT_THAT(kills(), ElementsAre("e1"));
}

TEST_F(ExclusionTest, AStageWithAnotherUsableExecutorIsNotUnschedulable) {
  submit(1);
  offer("e2", 0);  // e2 is alive, with no free slot right now
  ASSERT_THAT(offer("e1", 1), ElementsAre("0#0"));
  end(0, rest::TaskState::kFailed);
  listener.take();
  EXPECT_THAT(offer("e1", 1), IsEmpty());
  EXPECT_THAT(unschedulableEvents(), IsEmpty());
  EXPECT_THAT(kills(), IsEmpty());
}

TEST_F(ExclusionTest, AnUnschedulableStageThatEndsIsReportedSchedulable) {
  ASSERT_NO_FATAL_FAILURE(failTaskZeroOnABusyExecutor());
  offer("e1", 1);
  ASSERT_THAT(unschedulableEvents(), ElementsAre("unschedulable job-1/s"));
  ASSERT_TRUE(scheduler().cancelJob("job-1", "test"));
  EXPECT_THAT(unschedulableEvents(), ElementsAre("schedulable job-1/s"));
}

// excludeOnFailure.application.fetchFailure.enabled: the executor a fetch failed from is
// excluded for the application at once (and, with killExcludedExecutors, released).
TEST_F(ExclusionTest, AFetchFailureExcludesTheExecutorTheBlocksWereOnWhenEnabled) {
  for (const bool enabled : {false, true}) {
    SCOPED_TRACE(enabled ? "enabled" : "disabled");
    config.excludeOnFailure.fetchFailureExclusion = enabled;
    config.excludeOnFailure.killExcludedExecutors = true;
    TaskScheduler s(config, clock, 7);
    s.submitJob(parseJob(R"({"name": "t", "stages": [
        {"id": "map", "tasks": 1, "command": ["true"]},
        {"id": "red", "depends_on": ["map"], "tasks": 1, "command": ["true"]}]})"));
    const auto map = s.resourceOffers({WorkerOffer{"e1", "h1", 1}});
    ASSERT_EQ(map.size(), 1u);
    rest::TaskStatusUpdate done = ended(map[0].taskId, rest::TaskState::kFinished);
    done.blocks = {{0, 10}};
    ASSERT_TRUE(s.statusUpdate(done, "e1"));
    clock.advance(10000);  // past the reduce's locality wait for e1, where its input is
    const auto reduce = s.resourceOffers({WorkerOffer{"e2", "h2", 1}});
    ASSERT_EQ(reduce.size(), 1u);
    ASSERT_EQ(reduce[0].inputs.size(), 1u);
    rest::TaskStatusUpdate failed = ended(reduce[0].taskId, rest::TaskState::kFetchFailed);
    failed.failedInput = reduce[0].inputs[0];
    failed.reason = "connection refused";
    ASSERT_TRUE(s.statusUpdate(failed, "e2"));
    EXPECT_EQ(s.isExecutorExcluded("e1"), enabled);
    EXPECT_FALSE(s.isExecutorExcluded("e2")) << "the reader is not to blame";
    std::vector<std::string> released;
    for (const ExecutorToKill& kill : s.takeExcludedExecutorsToKill()) {
      released.push_back(kill.executorId);
      EXPECT_THAT(kill.reason, HasSubstr("excluded after a fetch failure"));
    }
    EXPECT_EQ(released, enabled ? std::vector<std::string>{"e1"} : std::vector<std::string>{});
    // The map task runs again, elsewhere than the excluded executor.
    const auto again = s.resourceOffers({WorkerOffer{"e1", "h1", 1}});
    EXPECT_EQ(again.empty(), enabled) << (again.empty() ? "" : again[0].stageId);
  }
}

TEST_F(ExclusionTest, TheAllocationPolicyAsksForAnotherExecutorAndSaysWhy) {
  allocation::AllocationConfig allocationConfig;
  allocationConfig.bounds = {0, 0, 10};
  allocationConfig.executorCores = 2;  // both tasks fit on one executor
  allocation::ExecutorAllocationManager manager(allocationConfig, clock);
  AllocationListener bridge(manager);
  TaskScheduler& s = scheduler();
  s.subscribe(bridge);
  manager.onExecutorAdded("e1");
  submit(2);
  clock.advance(allocationConfig.schedulerBacklogTimeout);
  manager.tick();
  ASSERT_EQ(manager.snapshot().target, 1);

  // Task 1 keeps e1 busy while task 0, failed there, can run nowhere.
  ASSERT_THAT(offer("e1", 2), ElementsAre("0#0", "1#0"));
  end(launchIndexOf(0), rest::TaskState::kFailed);
  offer("e1", 1);
  clock.advance(allocationConfig.sustainedSchedulerBacklogTimeout);
  const allocation::TickResult result = manager.tick();
  // Two tasks on one executor of two slots: without the exclusion the target would stay at 1.
  EXPECT_EQ(result.target, 2);
  ASSERT_FALSE(result.decisions.empty());
  EXPECT_THAT(result.decisions.back().why,
              HasSubstr("unschedulable: every executor is excluded for stage job-1/s"));

  // Once it runs on the new executor the extra one is no longer needed.
  manager.onExecutorAdded("e2");
  ASSERT_THAT(offer("e2", 1), ElementsAre("0#1"));
  clock.advance(allocationConfig.sustainedSchedulerBacklogTimeout);
  manager.tick();
  EXPECT_EQ(manager.snapshot().maxNeeded, 1);
}

TEST(ExcludeOnFailureConfigTest, ReadsTheKeysWithSparksDefaults) {
  Properties properties;
  const ExcludeOnFailureConfig defaults =
      SchedulerConfig::fromProperties(properties).excludeOnFailure;
  EXPECT_FALSE(defaults.enabled);
  EXPECT_EQ(defaults.timeoutMs, kHour);
  EXPECT_EQ(defaults.maxTaskAttemptsPerExecutor, 1);
  // Spark's default of every other count is 2.
  for (int ExcludeOnFailureConfig::*count :
       {&ExcludeOnFailureConfig::maxTaskAttemptsPerNode,
        &ExcludeOnFailureConfig::maxFailedTasksPerExecutorStage,
        &ExcludeOnFailureConfig::maxFailedExecutorsPerNodeStage,
        &ExcludeOnFailureConfig::maxFailedTasksPerExecutor,
        &ExcludeOnFailureConfig::maxFailedExecutorsPerNode}) {
    EXPECT_EQ(defaults.*count, 2);
  }
  EXPECT_FALSE(defaults.killExcludedExecutors);
  EXPECT_EQ(defaults.unschedulableTaskSetTimeoutMs, 120 * 1000);
  EXPECT_TRUE(defaults.dynamicAllocation);

  properties.set("spark.excludeOnFailure.enabled", "true");
  properties.set("excludeOnFailure.timeout", "10m");
  properties.set("excludeOnFailure.stage.maxFailedTasksPerExecutor", "3");
  const ExcludeOnFailureConfig set = SchedulerConfig::fromProperties(properties).excludeOnFailure;
  EXPECT_TRUE(set.enabled);
  EXPECT_EQ(set.timeoutMs, 10 * 60 * 1000);
  EXPECT_EQ(set.maxFailedTasksPerExecutorStage, 3);

  properties.set("excludeOnFailure.application.maxFailedTasksPerExecutor", "0");
  EXPECT_THROW(SchedulerConfig::fromProperties(properties), ConfigError);
  properties.set("excludeOnFailure.application.maxFailedTasksPerExecutor", "2");
  // As Spark: a task could not get past the nodes excluded for it before failing its job.
  properties.set("task.maxFailures", "2");
  const std::string message = testing_support::expectedMessageOf<ConfigError>(
      [&] { SchedulerConfig::fromProperties(properties); });
  EXPECT_THAT(message, HasSubstr("excludeOnFailure.task.maxTaskAttemptsPerNode"));
  EXPECT_THAT(message, HasSubstr("task.maxFailures"));
}

}  // namespace
}  // namespace tide::am
