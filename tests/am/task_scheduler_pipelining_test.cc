// Pipelining (scheduler.queuedTasksPerExecutor): tasks handed to an executor ahead of a free
// slot. What each test pins down: which stages are queued at all, that a queued task is pending
// to the listeners (the allocation policy) until it starts, that every task still runs exactly
// once when queued tasks come back, are lost with their executor or are asked back for an idle
// executor, and that speculation neither queues copies nor mistakes a queued task for a slow
// one. Time moves only when a test moves it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "am/scheduler/task_scheduler.h"
#include "tests/am/scheduler_fixture.h"
#include "tests/support/properties.h"

namespace tide::am {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

rest::TaskStatusUpdate ended(int64_t taskId, rest::TaskState state = rest::TaskState::kFinished,
                             int64_t durationMs = 0) {
  rest::TaskStatusUpdate update = testing::updateOf(taskId, state);
  update.durationMs = durationMs;
  return update;
}

class PipeliningTest : public testing::SchedulerFixture {
 protected:
  PipeliningTest() : SchedulerFixture({/*tasks=*/true, /*data=*/true}, /*offerSeed=*/7) {
    config.queuedTasksPerExecutor = 2;
    config.queuedTaskWaitMs = 50;
  }

  void submit(int tasks, const std::string& kind = R"("command": ["x"])") {
    scheduler().submitJob(parseJob(R"({"stages": [{"id": "s", "tasks": )" + std::to_string(tasks) +
                                   ", " + kind + "}]}"));
  }

  std::vector<rest::TaskLaunch> offer(const std::string& executorId, int freeSlots, int queueRoom) {
    return scheduler().resourceOffers({WorkerOffer{executorId, "host-" + executorId, freeSlots,
                                                   allocation::kDefaultProfileId, queueRoom}});
  }

  // The first task runs and succeeds in `durationMs` on e1: the stage's tasks are known short
  // (or long) from then on.
  void firstTaskTakes(DurationMs durationMs) {
    auto first = offer("e1", 1, 2);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_FALSE(first[0].queued) << "nothing is queued before a task of the stage has ended";
    clock.advance(durationMs);
    ASSERT_TRUE(scheduler().statusUpdate(ended(first[0].taskId), "e1"));
    listener.take();
  }

  // Ten tasks, the first of which ran in `durationMs` on e1, which is then offered with a free
  // slot and `queueRoom`: what it gets.
  std::vector<rest::TaskLaunch> offerAfterAFirstTaskOf(DurationMs durationMs, int queueRoom) {
    submit(10);
    firstTaskTakes(durationMs);
    return offer("e1", 1, queueRoom);
  }
  std::vector<rest::TaskLaunch> offerAfterAShortFirstTask(int queueRoom) {
    return offerAfterAFirstTaskOf(1, queueRoom);
  }

  static int countQueued(const std::vector<rest::TaskLaunch>& launches) {
    int queued = 0;
    for (const auto& launch : launches) queued += launch.queued ? 1 : 0;
    return queued;
  }
};

TEST_F(PipeliningTest, ShortTasksAreQueuedBeyondTheFreeSlotsUpToTheRoomGiven) {
  auto launches = offerAfterAShortFirstTask(/*queueRoom=*/2);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_FALSE(launches[0].queued);
  EXPECT_TRUE(launches[1].queued);
  EXPECT_TRUE(launches[2].queued);
  EXPECT_EQ(scheduler().queuedTasksOn("e1"), 2);
  EXPECT_EQ(scheduler().queuedTaskCount(), 2);
  // Queued tasks are assigned: neither pending nor offered again.
  EXPECT_EQ(scheduler().pendingTaskCount(), 6);
  EXPECT_EQ(scheduler().runningTaskCount(), 3);
  // A full queue takes no more.
  EXPECT_THAT(offer("e1", 0, 0), IsEmpty());
}

TEST_F(PipeliningTest, StagesWhoseTasksOutlastTheQueueWaitAreNotQueued) {
  // 200 ms per task: a queued task would wait longer than 50 ms.
  auto launches = offerAfterAFirstTaskOf(200, /*queueRoom=*/2);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_FALSE(launches[0].queued);
}

TEST_F(PipeliningTest, NothingIsQueuedWithPipeliningOff) {
  config.queuedTasksPerExecutor = 0;
  submit(10);
  auto first = offer("e1", 1, 2);
  ASSERT_TRUE(scheduler().statusUpdate(ended(first[0].taskId), "e1"));
  EXPECT_EQ(countQueued(offer("e1", 1, 2)), 0);
}

TEST_F(PipeliningTest, AQueuedTaskStartsForTheListenersOnlyWhenTheExecutorStartsIt) {
  auto launches = offerAfterAShortFirstTask(/*queueRoom=*/1);
  ASSERT_EQ(launches.size(), 2u);
  ASSERT_TRUE(launches[1].queued);
  // The policy hears of the free-slot launch only: the queued one is still pending to it.
  EXPECT_THAT(listener.take(), ElementsAre("start job-1/s e1"));
  ASSERT_TRUE(scheduler().statusUpdate(ended(launches[0].taskId), "e1"));
  scheduler().taskStarted(launches[1].taskId, "e1");
  EXPECT_THAT(listener.take(), ElementsAre("end job-1/s e1 succeeded", "start job-1/s e1"));
  EXPECT_EQ(scheduler().queuedTasksOn("e1"), 0);
  scheduler().taskStarted(launches[1].taskId, "e1");  // reported running again: nothing new
  EXPECT_THAT(listener.take(), IsEmpty());
}

TEST_F(PipeliningTest, AQueuedTaskThatEndedBeforeItWasSeenRunningStartsThenEnds) {
  submit(10, R"("builtin": "noop")");
  firstTaskTakes(0);
  auto launches = offer("e1", 1, 2);
  ASSERT_EQ(launches.size(), 3u);
  listener.take();
  for (const auto& launch : launches) {
    ASSERT_TRUE(scheduler().statusUpdate(ended(launch.taskId), "e1"));
  }
  EXPECT_THAT(listener.take(), ElementsAre("end job-1/s e1 succeeded", "start job-1/s e1",
                                           "end job-1/s e1 succeeded", "start job-1/s e1",
                                           "end job-1/s e1 succeeded"));
  EXPECT_EQ(scheduler().queuedTaskCount(), 0);
}

TEST_F(PipeliningTest, EveryTaskRunsExactlyOnceThroughQueuedLaunches) {
  submit(200, R"("builtin": "noop")");
  std::map<int64_t, int> succeeded;  // index -> successes
  std::map<std::string, std::vector<rest::TaskLaunch>> held;
  int queuedLaunches = 0;
  for (int round = 0; round < 1000 && !scheduler().allJobsDone(); ++round) {
    const std::string executor = round % 2 == 0 ? "e1" : "e2";
    auto& mine = held[executor];
    // Its running (unqueued or started) task ends; then its queued ones in order; a returned
    // one now and then (it waited too long for its slot).
    if (!mine.empty()) {
      ASSERT_TRUE(scheduler().statusUpdate(ended(mine.front().taskId, rest::TaskState::kFinished),
                                           executor));
      ++succeeded[mine.front().index];
      mine.erase(mine.begin());
    }
    if (mine.size() > 1 && round % 7 == 0) {
      ASSERT_TRUE(scheduler().queuedTaskReturned(mine.back().taskId, executor));
      mine.pop_back();
    }
    if (!mine.empty()) scheduler().taskStarted(mine.front().taskId, executor);
    const int free = mine.empty() ? 1 : 0;
    const int room = 2 - scheduler().queuedTasksOn(executor);
    for (auto& launch : offer(executor, free, room)) {
      queuedLaunches += launch.queued ? 1 : 0;
      mine.push_back(launch);
    }
  }
  ASSERT_TRUE(scheduler().allJobsDone());
  EXPECT_GT(queuedLaunches, 100) << "the test must exercise queued launches";
  ASSERT_EQ(succeeded.size(), 200u);
  for (const auto& [index, count] : succeeded) EXPECT_EQ(count, 1) << "task " << index;
  EXPECT_TRUE(scheduler().jobSummary("job-1")->recentFailures.empty())
      << "a returned queued task is not a failed attempt";
}

TEST_F(PipeliningTest, AReturnedTaskIsPendingAgainWithItsAttemptNumberAndNoFailure) {
  submit(4);
  firstTaskTakes(1);
  auto launches = offer("e1", 1, 1);
  ASSERT_EQ(launches.size(), 2u);
  const rest::TaskLaunch queued = launches[1];
  EXPECT_FALSE(scheduler().queuedTaskReturned(launches[0].taskId, "e1")) << "it was not queued";
  EXPECT_FALSE(scheduler().queuedTaskReturned(queued.taskId, "e2")) << "not queued on e2";
  ASSERT_TRUE(scheduler().queuedTaskReturned(queued.taskId, "e1"));
  EXPECT_FALSE(scheduler().queuedTaskReturned(queued.taskId, "e1")) << "returned once";
  EXPECT_EQ(scheduler().pendingTaskCount(), 2);
  EXPECT_THAT(listener.take(), ElementsAre("start job-1/s e1")) << "the returned one: no events";
  // It runs next, elsewhere, as the same attempt (it never ran).
  auto again = offer("e2", 1, 0);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].index, queued.index);
  EXPECT_EQ(again[0].attempt, queued.attempt);
  EXPECT_NE(again[0].taskId, queued.taskId);
  EXPECT_EQ(scheduler().jobSummary("job-1")->failedAttempts, 0);
}

TEST_F(PipeliningTest, QueuedTasksOfALostExecutorRunAgainWithoutCountingAFailure) {
  config.maxTaskFailures = 1;  // a failure counted would fail the job
  submit(6);
  firstTaskTakes(1);
  auto launches = offer("e1", 1, 2);
  ASSERT_EQ(countQueued(launches), 2);
  listener.take();
  scheduler().executorLost("e1", "killed", /*exitCausedByApp=*/true);
  // The running one is a failed attempt (its container's exit was the application's doing);
  // the queued ones never ran: pending again, no events for them.
  EXPECT_THAT(listener.take(),
              ElementsAre("end job-1/s e1 failed", "completed job-1/s", "job job-1 failed"));
}

TEST_F(PipeliningTest, QueuedTasksOfAnExecutorLostByTheClusterComeBackInOrder) {
  submit(6);
  firstTaskTakes(1);
  auto launches = offer("e1", 1, 2);
  ASSERT_EQ(launches.size(), 3u);
  scheduler().executorLost("e1", "node lost");
  EXPECT_EQ(scheduler().queuedTaskCount(), 0);
  EXPECT_EQ(scheduler().pendingTaskCount(), 5);
  auto rerun = offer("e2", 3, 0);
  ASSERT_EQ(rerun.size(), 3u);
  std::vector<int64_t> indices;
  for (const auto& launch : rerun) indices.push_back(launch.index);
  EXPECT_THAT(indices, ElementsAre(launches[0].index, launches[1].index, launches[2].index));
  EXPECT_EQ(rerun[1].attempt, launches[1].attempt) << "a queued task that never ran keeps it";
  EXPECT_EQ(scheduler().jobSummary("job-1")->failedAttempts, 1) << "only the running one";
}

TEST_F(PipeliningTest, AnIdleExecutorAsksBackQueuedTasksOfOthersOnce) {
  submit(4);
  firstTaskTakes(1);
  auto launches = offer("e1", 1, 2);  // tasks 1 (running), 2 and 3 (queued): nothing pending
  ASSERT_EQ(countQueued(launches), 2);
  EXPECT_FALSE(scheduler().hasPendingTasks());
  EXPECT_THAT(scheduler().takeBackQueuedTasksFor("e1"), IsEmpty()) << "not its own";
  auto back = scheduler().takeBackQueuedTasksFor("e2");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].taskId, launches[1].taskId);
  EXPECT_EQ(back[0].executorId, "e1");
  EXPECT_THAT(scheduler().takeBackQueuedTasksFor("e2"), IsEmpty()) << "asked once";
  // e1 had started one of them meanwhile; the other comes back and goes to e2.
  scheduler().taskStarted(launches[1].taskId, "e1");
  EXPECT_FALSE(scheduler().queuedTaskReturned(launches[1].taskId, "e1"));
  ASSERT_TRUE(scheduler().queuedTaskReturned(launches[2].taskId, "e1"));
  auto moved = offer("e2", 1, 0);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].index, launches[2].index);
}

// Graceful decommissioning: the leaving executor's queued tasks are all asked back, once, and
// each one it hands back runs exactly once, elsewhere; one it had started runs on there.
TEST_F(PipeliningTest, ADecommissioningExecutorsQueuedTasksAreAskedBackAndRunElsewhereOnce) {
  submit(5);
  firstTaskTakes(1);
  auto e1 = offer("e1", 1, 2);  // one running, two queued
  ASSERT_EQ(countQueued(e1), 2);
  auto e2 = offer("e2", 1, 0);  // the other executor is busy
  ASSERT_EQ(e2.size(), 1u);
  EXPECT_FALSE(scheduler().hasPendingTasks());
  const auto back = scheduler().takeBackQueuedTasksOn("e1");
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].taskId, e1[i + 1].taskId);
    EXPECT_EQ(back[i].executorId, "e1");
  }
  EXPECT_THAT(scheduler().takeBackQueuedTasksOn("e1"), IsEmpty()) << "asked once";
  EXPECT_THAT(scheduler().takeBackQueuedTasksFor("e2"), IsEmpty())
      << "not asked again for an idle executor";
  // e1 had started the first one before it heard; it hands back the other.
  scheduler().taskStarted(e1[1].taskId, "e1");
  EXPECT_FALSE(scheduler().queuedTaskReturned(e1[1].taskId, "e1")) << "started: it runs there";
  ASSERT_TRUE(scheduler().queuedTaskReturned(e1[2].taskId, "e1"));
  EXPECT_EQ(scheduler().pendingTaskCount(), 1);
  EXPECT_EQ(scheduler().queuedTaskCount(), 0);
  ASSERT_TRUE(scheduler().statusUpdate(ended(e2[0].taskId), "e2"));
  auto moved = offer("e2", 1, 2);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].index, e1[2].index);
  EXPECT_EQ(moved[0].attempt, e1[2].attempt) << "it never ran: the same attempt";
  ASSERT_TRUE(scheduler().statusUpdate(ended(moved[0].taskId), "e2"));
  ASSERT_TRUE(scheduler().statusUpdate(ended(e1[0].taskId), "e1"));
  ASSERT_TRUE(scheduler().statusUpdate(ended(e1[1].taskId), "e1"));
  const auto summary = scheduler().jobSummary("job-1");
  EXPECT_EQ(summary->succeeded, 5) << "every task once";
  EXPECT_EQ(summary->failedAttempts, 0);
}

TEST_F(PipeliningTest, KillingAJobKillsItsQueuedTasksToo) {
  submit(6);
  firstTaskTakes(1);
  auto launches = offer("e1", 1, 2);
  ASSERT_EQ(launches.size(), 3u);
  ASSERT_TRUE(scheduler().cancelJob("job-1", "cancelled"));
  std::set<int64_t> kills;
  for (const auto& kill : scheduler().takeTasksToKill()) kills.insert(kill.taskId);
  EXPECT_EQ(kills, (std::set<int64_t>{launches[0].taskId, launches[1].taskId, launches[2].taskId}));
  for (const auto& launch : launches) {
    ASSERT_TRUE(scheduler().statusUpdate(ended(launch.taskId, rest::TaskState::kKilled), "e1"));
  }
  EXPECT_EQ(scheduler().queuedTaskCount(), 0);
  EXPECT_EQ(scheduler().runningTaskCount(), 0);
}

TEST_F(PipeliningTest, SpeculationNeverQueuesACopyNorTakesAQueuedTaskForASlowOne) {
  config.speculation = true;
  config.speculationQuantile = 0.5;
  config.speculationMultiplier = 1.5;
  config.speculationMinThresholdMs = 0;
  config.queuedTaskWaitMs = 10000;  // long enough to queue 1 s tasks
  submit(4);
  firstTaskTakes(1000);
  auto e1 = offer("e1", 1, 1);  // task 1 runs on e1, task 2 is queued behind it
  auto e2 = offer("e2", 1, 0);  // task 3 on e2
  ASSERT_EQ(e1.size(), 2u);
  ASSERT_TRUE(e1[1].queued);
  ASSERT_EQ(e2.size(), 1u);
  clock.advance(1000);
  ASSERT_TRUE(scheduler().statusUpdate(ended(e2[0].taskId), "e2"));
  clock.advance(5000);  // task 1 has run 6 s against a median of 1 s; task 2 has not started
  EXPECT_EQ(scheduler().checkSpeculatableTasks(), 1) << "only the straggler, not the queued one";
  // The straggler's copy starts on e2, in a free slot, never queued.
  auto copy = offer("e2", 1, 2);
  ASSERT_GE(copy.size(), 1u);
  EXPECT_EQ(copy[0].index, e1[0].index);
  EXPECT_TRUE(copy[0].speculative);
  EXPECT_FALSE(copy[0].queued);
  for (const auto& launch : copy) EXPECT_FALSE(launch.speculative && launch.queued);
  // The task queued behind the straggler is asked back once e2 idles, and runs there.
  ASSERT_TRUE(scheduler().statusUpdate(ended(copy[0].taskId), "e2"));
  auto back = scheduler().takeBackQueuedTasksFor("e2");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].taskId, e1[1].taskId);
  ASSERT_TRUE(scheduler().queuedTaskReturned(e1[1].taskId, "e1"));
  auto moved = offer("e2", 1, 0);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].index, e1[1].index);
  EXPECT_FALSE(moved[0].queued);
}

TEST_F(PipeliningTest, TheKeysAreReadAndChecked) {
  const SchedulerConfig defaults = testing::schedulerConfigOf({});
  EXPECT_EQ(defaults.queuedTasksPerExecutor, 32);
  EXPECT_EQ(defaults.queuedTaskWaitMs, 50);
  const SchedulerConfig off = testing::schedulerConfigOf(
      {{"scheduler.queuedTasksPerExecutor", "0"}, {"scheduler.queuedTaskWait", "200ms"}});
  EXPECT_EQ(off.queuedTasksPerExecutor, 0);
  EXPECT_EQ(off.queuedTaskWaitMs, 200);
  EXPECT_THROW(testing::schedulerConfigOf({{"scheduler.queuedTasksPerExecutor", "-1"},
                                           {"scheduler.queuedTaskWait", "200ms"}}),
               ConfigError);
  EXPECT_THROW(testing::schedulerConfigOf(
                   {{"scheduler.queuedTasksPerExecutor", "1"}, {"scheduler.queuedTaskWait", "0"}}),
               ConfigError);
}

}  // namespace
}  // namespace tide::am
