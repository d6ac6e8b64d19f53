// What the scheduler does when an executor goes, lost or released: nothing it had there is
// stranded (running tasks run again as lost attempts, queued ones pending again unstarted), the
// allocation policy's counts stay those of the scheduler (a speculative copy that will not run
// is not counted), and lineage re-runs only what a later stage still has to read (as Spark's
// DAGScheduler: a result stage's finished tasks and a finished job are left alone). Time moves
// only when a test moves it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocation/executor_allocation_manager.h"
#include "am/allocation_listener.h"
#include "am/scheduler/task_scheduler.h"
#include "tests/am/scheduler_fixture.h"

namespace tide::am {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

rest::TaskStatusUpdate finished(int64_t taskId, std::vector<int64_t> partitions = {}) {
  rest::TaskStatusUpdate update = testing::updateOf(taskId, rest::TaskState::kFinished);
  for (int64_t p : partitions) update.blocks.push_back(rest::BlockOutput{p, 100 + p});
  return update;
}

// "stage[index]#attempt" of each launch.
std::vector<std::string> describe(const std::vector<rest::TaskLaunch>& launches) {
  std::vector<std::string> out;
  for (const rest::TaskLaunch& launch : launches) {
    out.push_back(launch.stageId + "[" + std::to_string(launch.index) + "]#" +
                  std::to_string(launch.attempt));
  }
  return out;
}

class ExecutorDepartureTest : public testing::SchedulerFixture {
 protected:
  ExecutorDepartureTest() : SchedulerFixture({/*tasks=*/true, /*data=*/false}, /*offerSeed=*/3) {}

  std::vector<rest::TaskLaunch> offer(const std::string& executorId, int freeSlots,
                                      int queueRoom = 0) {
    return scheduler().resourceOffers({WorkerOffer{executorId, "host-" + executorId, freeSlots,
                                                   allocation::kDefaultProfileId, queueRoom}});
  }

  // Finishes every launch where it runs, each writing `partitions`.
  void finishAll(const std::vector<rest::TaskLaunch>& launches,
                 const std::vector<int64_t>& partitions = {}) {
    for (const rest::TaskLaunch& launch : launches) {
      const std::string executor = scheduler().executorOf(launch.taskId).value_or("?");
      ASSERT_TRUE(scheduler().statusUpdate(finished(launch.taskId, partitions), executor))
          << launch.stageId << "[" << launch.index << "]";
    }
  }

  JobState jobState() { return scheduler().jobSummary("job-1").value().state; }
  int reruns(const std::string& stage) {
    const JobSummary job = scheduler().jobSummary("job-1").value();
    for (const StageSummary& summary : job.stages) {
      if (summary.id == stage) return summary.reruns;
    }
    return -1;
  }
};

// A released executor with tasks still on it. The policy releases only idle executors, but
// nothing else guards it: the tasks must not be left running on an executor that is gone.
TEST_F(ExecutorDepartureTest, AReleasedExecutorsRunningTasksRunAgainAsLostAttempts) {
  config.maxTaskFailures = 1;  // a counted failure would fail the job
  scheduler().submitJob(
      parseJob(R"({"name": "r", "stages": [{"id": "s", "tasks": 3, "command": ["x"]}]})"));
  auto onE1 = offer("e1", 2);
  ASSERT_THAT(describe(onE1), ElementsAre("s[0]#0", "s[1]#0"));
  listener.take();

  scheduler().executorRemoved("e1");
  EXPECT_THAT(scheduler().runningTasksOn("e1"), IsEmpty());
  EXPECT_EQ(scheduler().runningTaskCount(), 0);
  EXPECT_EQ(scheduler().pendingTaskCount(), 3);
  EXPECT_THAT(listener.take(), ElementsAre("end job-1/s e1 failed", "end job-1/s e1 failed"));
  const JobSummary summary = scheduler().jobSummary("job-1").value();
  EXPECT_EQ(summary.state, JobState::kRunning);
  EXPECT_EQ(summary.failedAttempts, 2);
  ASSERT_EQ(summary.recentFailures.size(), 2u);
  EXPECT_EQ(summary.recentFailures.back().reason, "executor e1 released");
  EXPECT_FALSE(summary.recentFailures.back().countsTowardsFailures);
  // A late report from the released executor is not the task's.
  EXPECT_FALSE(scheduler().statusUpdate(finished(onE1[0].taskId), "e1"));

  auto onE2 = offer("e2", 3);
  EXPECT_THAT(describe(onE2), ElementsAre("s[0]#1", "s[1]#1", "s[2]#0"));
  finishAll(onE2);
  EXPECT_EQ(jobState(), JobState::kSucceeded);
}

TEST_F(ExecutorDepartureTest, AReleasedExecutorsQueuedTasksArePendingAgainUnstarted) {
  config.queuedTasksPerExecutor = 2;
  config.queuedTaskWaitMs = 50;
  scheduler().submitJob(parseJob(R"({"stages": [{"id": "s", "tasks": 5, "command": ["x"]}]})"));
  auto first = offer("e1", 1, 2);
  ASSERT_EQ(first.size(), 1u);
  clock.advance(1);  // a 1 ms task: the stage is short enough to queue
  finishAll(first);
  auto onE1 = offer("e1", 1, 2);
  ASSERT_THAT(describe(onE1), ElementsAre("s[1]#0", "s[2]#0", "s[3]#0"));
  ASSERT_EQ(scheduler().queuedTasksOn("e1"), 2);
  listener.take();

  scheduler().executorRemoved("e1");
  EXPECT_EQ(scheduler().runningTaskCount(), 0);
  EXPECT_EQ(scheduler().queuedTaskCount(), 0);
  EXPECT_EQ(scheduler().pendingTaskCount(), 4);
  // Only the started task ended, as the policy knows it; the queued ones never started for it.
  EXPECT_THAT(listener.take(), ElementsAre("end job-1/s e1 failed"));
  EXPECT_EQ(scheduler().jobSummary("job-1")->failedAttempts, 1) << "queued tasks did not fail";

  // The queued tasks run with the attempt number they had: they never ran.
  auto onE2 = offer("e2", 4);
  EXPECT_THAT(describe(onE2), ElementsAre("s[1]#1", "s[2]#0", "s[3]#0", "s[4]#0"));
  finishAll(onE2);
  EXPECT_EQ(jobState(), JobState::kSucceeded);
}

// A task marked for a speculative copy whose only attempt is lost. Spark's
// ExecutorAllocationManager counts a speculative copy pending from its submission until it
// starts or its task succeeds; tide runs copies only of running attempts, so the lost task is
// pending again as itself and the copy it was marked for is dropped, and the policy must hear it
// (else it counts one executor too many until the stage ends).
class SpeculationMarkTest : public ExecutorDepartureTest {
 protected:
  SpeculationMarkTest() : manager_(allocationConfig(), clock), bridge_(manager_) {
    config.speculation = true;
    config.speculationQuantile = 0.5;
    config.speculationMultiplier = 1.5;
  }

  static allocation::AllocationConfig allocationConfig() {
    allocation::AllocationConfig allocation;
    allocation.bounds = {0, 0, 10};
    return allocation;
  }

  // Two tasks on e1; task 1 succeeds after 1 s and task 0 is marked for a copy 1 s later.
  std::vector<rest::TaskLaunch> markTask0() {
    scheduler().subscribe(bridge_);
    manager_.onExecutorAdded("e1");
    scheduler().submitJob(parseJob(R"({"stages": [{"id": "s", "tasks": 2, "command": ["x"]}]})"));
    auto launches = offer("e1", 2);
    clock.advance(1000);
    EXPECT_TRUE(scheduler().statusUpdate(finished(launches[1].taskId), "e1"));
    clock.advance(1000);
    EXPECT_EQ(scheduler().checkSpeculatableTasks(), 1);
    EXPECT_EQ(manager_.snapshot().pendingSpeculativeTasks, 1);
    return launches;
  }

  allocation::ExecutorAllocationManager manager_;
  AllocationListener bridge_;
};

TEST_F(SpeculationMarkTest, AMarkedTaskThatLosesItsOnlyAttemptIsNoLongerCountedAsACopy) {
  markTask0();
  const TimeMs armed = manager_.snapshot().addTime;  // by the copy's submission
  ASSERT_GE(armed, 0);
  clock.advance(500);
  scheduler().executorLost("e1", "node down");
  manager_.onExecutorRemoved("e1");
  EXPECT_EQ(manager_.snapshot().pendingTasks, 1) << "task 0 is pending again";
  EXPECT_EQ(manager_.snapshot().pendingSpeculativeTasks, 0) << "no copy of a task not running";
  // Something was pending all along (the copy, then the retry): the backlog timer runs on.
  EXPECT_EQ(manager_.snapshot().addTime, armed);

  auto retry = offer("e2", 2);
  ASSERT_EQ(retry.size(), 1u) << "the retry, and no copy beside it";
  EXPECT_FALSE(retry[0].speculative);
  EXPECT_EQ(manager_.snapshot().pendingSpeculativeTasks, 0);
  EXPECT_EQ(manager_.snapshot().pendingTasks, 0);
  finishAll(retry);
  EXPECT_EQ(jobState(), JobState::kSucceeded);
}

TEST_F(SpeculationMarkTest, AMarkedTaskWhoseOnlyAttemptFailsIsNoLongerCountedAsACopy) {
  auto launches = markTask0();
  rest::TaskStatusUpdate failure = testing::updateOf(launches[0].taskId, rest::TaskState::kFailed);
  failure.exitCode = 1;
  ASSERT_TRUE(scheduler().statusUpdate(failure, "e1"));
  EXPECT_EQ(manager_.snapshot().pendingSpeculativeTasks, 0);
  EXPECT_EQ(manager_.snapshot().pendingTasks, 1);
}

// The copy itself lost while the original runs on: nothing is pending again (the original will
// do), and no copy is counted.
TEST_F(SpeculationMarkTest, ALostCopyOfATaskStillRunningLeavesNothingPending) {
  markTask0();
  auto copy = offer("e2", 1);
  ASSERT_EQ(copy.size(), 1u);
  ASSERT_TRUE(copy[0].speculative);
  EXPECT_EQ(manager_.snapshot().pendingSpeculativeTasks, 0) << "the copy started";
  scheduler().executorLost("e2", "node down");
  EXPECT_EQ(manager_.snapshot().pendingTasks, 0) << "the original still runs on e1";
  EXPECT_EQ(manager_.snapshot().pendingSpeculativeTasks, 0);
}

// Lineage and result stages. Spark re-runs only the lost shuffle map outputs that a stage
// still has to read; a result stage's finished tasks are not run again (their output is
// collected), and a finished job is not touched.
const char* kMapReduce = R"({"name": "wc", "stages": [
    {"id": "map", "tasks": 2, "command": ["m"]},
    {"id": "reduce", "depends_on": ["map"], "tasks": 2, "command": ["r"]}]})";

TEST_F(ExecutorDepartureTest, LosingAResultStagesFinishedTasksRunsNothingAgain) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(kMapReduce));
  finishAll(offer("e1", 2), {0, 1});
  auto reduces = offer("e2", 2);
  ASSERT_THAT(describe(reduces), ElementsAre("reduce[0]#0", "reduce[1]#0"));
  ASSERT_TRUE(scheduler().statusUpdate(finished(reduces[0].taskId, {0}), "e2"));
  listener.take();

  // e2 held reduce[0]'s output and ran reduce[1]: only the running one runs again.
  scheduler().executorLost("e2", "node down");
  EXPECT_THAT(listener.take(), ElementsAre("end job-1/reduce e2 failed"));
  EXPECT_EQ(reruns("reduce"), 0);
  auto again = offer("e3", 2);
  EXPECT_THAT(describe(again), ElementsAre("reduce[1]#1"));
  finishAll(again, {0});
  EXPECT_EQ(jobState(), JobState::kSucceeded);
  EXPECT_EQ(reruns("map"), 0);
}

TEST_F(ExecutorDepartureTest, LosingAnOutputNoStageReadsAnyMoreRunsNothingAgain) {
  config.localityWaits = {0, 0, 0};
  // a -> b -> c: once b has succeeded, nobody reads a's output.
  scheduler().submitJob(parseJob(R"({"stages": [
      {"id": "a", "tasks": 1, "command": ["a"]},
      {"id": "b", "depends_on": ["a"], "tasks": 1, "command": ["b"]},
      {"id": "c", "depends_on": ["b"], "tasks": 1, "command": ["c"]}]})"));
  finishAll(offer("e1", 1), {0});
  finishAll(offer("e2", 1), {0});
  listener.take();
  scheduler().executorLost("e1", "node down");
  EXPECT_THAT(listener.take(), IsEmpty()) << "nothing submitted again";
  EXPECT_EQ(reruns("a"), 0);
  auto c = offer("e3", 1);
  EXPECT_THAT(describe(c), ElementsAre("c[0]#0"));
}

TEST_F(ExecutorDepartureTest, AFinishedJobIsNotTouchedByTheLossOfItsExecutors) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(kMapReduce));
  finishAll(offer("e1", 2), {0, 1});
  finishAll(offer("e1", 2), {0});
  ASSERT_EQ(jobState(), JobState::kSucceeded);
  listener.take();
  scheduler().executorLost("e1", "node down");
  scheduler().executorRemoved("e1");
  EXPECT_THAT(listener.take(), IsEmpty());
  const JobSummary summary = scheduler().jobSummary("job-1").value();
  EXPECT_EQ(summary.state, JobState::kSucceeded);
  EXPECT_EQ(summary.succeeded, 4);
  EXPECT_EQ(summary.failedAttempts, 0);
  EXPECT_EQ(reruns("map"), 0);
  EXPECT_THAT(offer("e2", 4), IsEmpty());
  EXPECT_TRUE(scheduler().allJobsDone());
}

}  // namespace
}  // namespace tide::am
