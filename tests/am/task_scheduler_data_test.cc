// The scheduler's data rules: inputs of downstream tasks, lineage re-runs after lost outputs,
// fetch failures that do not count, shuffle and cached data for the allocation policy,
// locality in launches, FAIR pools and speculation. Time moves only when a test moves it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "am/scheduler/task_scheduler.h"
#include "tests/am/scheduler_fixture.h"
#include "tests/support/properties.h"

namespace tide::am {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

rest::TaskStatusUpdate finished(int64_t taskId, std::vector<int64_t> partitions = {}) {
  rest::TaskStatusUpdate update;
  update.taskId = taskId;
  update.state = rest::TaskState::kFinished;
  for (int64_t p : partitions) update.blocks.push_back(rest::BlockOutput{p, 100 + p});
  return update;
}

// A task that ended otherwise than finished (failed, killed), with the executor's reason.
rest::TaskStatusUpdate ended(int64_t taskId, rest::TaskState state, std::string reason = "") {
  rest::TaskStatusUpdate update;
  update.taskId = taskId;
  update.state = state;
  update.reason = std::move(reason);
  return update;
}

rest::BlockInput block(const std::string& stage, int64_t mapIndex, const std::string& executor) {
  rest::BlockInput input;
  input.stageId = stage;
  input.mapIndex = mapIndex;
  input.executorId = executor;
  return input;
}

rest::TaskStatusUpdate fetchFailed(int64_t taskId, const rest::BlockInput& input) {
  rest::TaskStatusUpdate update;
  update.taskId = taskId;
  update.state = rest::TaskState::kFetchFailed;
  update.reason = "fetch failed: connection refused";
  update.failedInput = input;
  return update;
}

const char* kMapReduce = R"({"name": "wc", "stages": [
    {"id": "map", "tasks": 2, "command": ["m"]},
    {"id": "reduce", "depends_on": ["map"], "tasks": 3, "command": ["r"]}]})";

class SchedulerDataTest : public testing::SchedulerFixture {
 protected:
  SchedulerDataTest() : SchedulerFixture({/*tasks=*/false, /*data=*/true}, /*offerSeed=*/7) {}
  std::vector<rest::TaskLaunch> offer(const std::string& executor, int slots,
                                      const std::string& node = "") {
    return scheduler().resourceOffers(
        {WorkerOffer{executor, node.empty() ? "node-" + executor : node, slots}});
  }
  // Runs the map stage: task 0 on e1, task 1 on e2, each writing partitions 0..2.
  void runMaps() {
    auto first = offer("e1", 1);
    auto second = offer("e2", 1);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(second.size(), 1u);
    ASSERT_TRUE(scheduler().statusUpdate(finished(first[0].taskId, {0, 1, 2}), "e1"));
    ASSERT_TRUE(scheduler().statusUpdate(finished(second[0].taskId, {0, 2}), "e2"));
  }
  // Speculation on (a task running 1.5 times the median once half the tasks finished gets a
  // copy) and one stage of `tasks` tasks, all launched on e1.
  // Of two tasks launched by launchOneStageWithSpeculation: task 1 finishes after 1 s, task 0
  // is speculatable 1 s later, and e2 is offered a slot. What e2 gets (task 0's copy); nothing,
  // with a test failure, when a step before goes otherwise.
  std::vector<rest::TaskLaunch> speculateTask0(const std::vector<rest::TaskLaunch>& launches) {
    clock.advance(1000);
    if (!scheduler().statusUpdate(finished(launches[1].taskId), "e1")) {
      ADD_FAILURE() << "task 1's success was refused";
      return {};
    }
    clock.advance(1000);
    const int speculatable = scheduler().checkSpeculatableTasks();
    EXPECT_EQ(speculatable, 1);
    if (speculatable != 1) return {};
    return offer("e2", 1);
  }

  std::vector<rest::TaskLaunch> launchOneStageWithSpeculation(int tasks) {
    config.speculation = true;
    config.speculationQuantile = 0.5;
    config.speculationMultiplier = 1.5;
    scheduler().submitJob(parseJob(R"({"stages": [{"id": "s", "tasks": )" + std::to_string(tasks) +
                                   R"(, "command": ["x"]}]})"));
    return offer("e1", tasks);
  }
  int stageReruns(const std::string& jobId, const std::string& stage) {
    const JobSummary summary = scheduler().jobSummary(jobId).value();
    for (const auto& s : summary.stages) {
      if (s.id == stage) return s.reruns;
    }
    return -1;
  }
};

TEST_F(SchedulerDataTest, ReduceTasksGetPartitionKOfEveryMapOutput) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(kMapReduce));
  runMaps();
  EXPECT_THAT(listener.events, Contains("shuffle e1 job-1/map"));
  EXPECT_THAT(listener.events, Contains("shuffle e2 job-1/map"));
  auto launches = offer("e3", 3);
  ASSERT_EQ(launches.size(), 3u);
  std::map<int64_t, std::vector<rest::BlockInput>> inputs;
  for (const auto& launch : launches) inputs[launch.index] = launch.inputs;
  // Partition 1: only map 0 wrote one.
  ASSERT_EQ(inputs[1].size(), 1u);
  EXPECT_EQ(inputs[1][0].stageId, "map");
  EXPECT_EQ(inputs[1][0].mapIndex, 0);
  EXPECT_EQ(inputs[1][0].executorId, "e1");
  EXPECT_EQ(inputs[1][0].path, "job-1/map/0/part-1");
  EXPECT_EQ(inputs[1][0].size, 101);
  ASSERT_EQ(inputs[2].size(), 2u);
  EXPECT_EQ(inputs[2][1].executorId, "e2");
  EXPECT_EQ(inputs[2][1].path, "job-1/map/1/part-2");
}

TEST_F(SchedulerDataTest, FinalStagesCollectIntoTheOutputAndShuffleIsReleasedAtJobEnd) {
  config.localityWaits = {0, 0, 0};
  Job job = parseJob(kMapReduce);
  job.output = "/data/out";
  scheduler().submitJob(job);
  auto maps = offer("e1", 2);
  for (const auto& launch : maps) EXPECT_EQ(launch.collectDir, "");
  for (const auto& launch : maps) scheduler().statusUpdate(finished(launch.taskId, {0}), "e1");
  auto reduces = offer("e1", 3);
  ASSERT_EQ(reduces.size(), 3u);
  for (const auto& launch : reduces) EXPECT_EQ(launch.collectDir, "/data/out");
  for (const auto& launch : reduces) scheduler().statusUpdate(finished(launch.taskId, {0}), "e1");
  EXPECT_THAT(listener.events, Contains("shuffle released job-1/map"));
  EXPECT_THAT(listener.events, Contains("job job-1 succeeded"));
  // Every stage's files go from the executors that ran it.
  std::vector<std::string> drops;
  for (const auto& drop : scheduler().takeBlocksToDrop()) {
    drops.push_back(drop.executorId + " " + drop.prefix);
  }
  EXPECT_THAT(drops, ElementsAre("e1 job-1/map", "e1 job-1/reduce"));
  EXPECT_THROW(
      scheduler().submitJob(parseJob(
          R"({"output": "relative", "stages": [{"id": "a", "tasks": 1, "command": ["x"]}]})")),
      JobError);
}

// Graceful decommissioning: e1's map output is worth migrating while the reduce has to read it;
// once a peer took it, the reduce reads it there and e1's removal re-runs nothing.
TEST_F(SchedulerDataTest, AMigratedOutputIsReadFromItsPeerAndNothingRunsAgain) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(kMapReduce));
  runMaps();
  const std::vector<OutputToMigrate> outputs = scheduler().outputsToMigrate("e1");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].stageId, "job-1/map");
  EXPECT_EQ(outputs[0].index, 0);
  EXPECT_FALSE(outputs[0].cached);
  EXPECT_THAT(outputs[0].blocks,
              ElementsAre("job-1/map/0/part-0", "job-1/map/0/part-1", "job-1/map/0/part-2"));
  listener.events.clear();
  EXPECT_TRUE(scheduler().outputMigrated("job-1/map", 0, "e1", "e2", "node-e2"));
  EXPECT_THAT(listener.events, ElementsAre("shuffle e2 job-1/map"));
  EXPECT_FALSE(scheduler().outputMigrated("job-1/map", 0, "e1", "e2", "node-e2")) << "moved";
  scheduler().executorRemoved("e1");
  EXPECT_EQ(stageReruns("job-1", "map"), 0);
  auto reduces = offer("e3", 3);
  ASSERT_EQ(reduces.size(), 3u);
  for (const auto& launch : reduces) {
    for (const auto& input : launch.inputs) EXPECT_EQ(input.executorId, "e2") << input.path;
  }
  EXPECT_EQ(scheduler().outputsToMigrate("e2").size(), 2u)
      << "both map outputs are on e2 now, read until the reduce stage succeeds";
  for (const auto& launch : reduces) scheduler().statusUpdate(finished(launch.taskId), "e3");
  EXPECT_TRUE(scheduler().outputsToMigrate("e2").empty()) << "nobody reads them any more";
}

TEST_F(SchedulerDataTest, ALostExecutorsOutputsAreMadeAgainBeforeTheReduceGoesOn) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(kMapReduce));
  runMaps();
  auto reduce = offer("e3", 1);
  ASSERT_EQ(reduce.size(), 1u);
  listener.events.clear();
  scheduler().executorLost("e1", "killed");
  // Map task 0 runs again; the reduce stage waits for it.
  EXPECT_THAT(listener.events, ElementsAre("submitted job-1/map 1"));
  EXPECT_EQ(stageReruns("job-1", "map"), 1);
  auto next = offer("e3", 2);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].stageId, "map");
  EXPECT_EQ(next[0].index, 0);
  EXPECT_EQ(next[0].attempt, 1);
  // The running reduce task fails to fetch from e1: retried, not counted.
  ASSERT_TRUE(scheduler().statusUpdate(fetchFailed(reduce[0].taskId, block("map", 0, "e1")), "e3"));
  EXPECT_TRUE(offer("e4", 2).empty()) << "the reduce stage must wait for the map re-run";
  ASSERT_TRUE(scheduler().statusUpdate(finished(next[0].taskId, {0, 1, 2}), "e3"));
  auto reduces = offer("e4", 3);
  ASSERT_EQ(reduces.size(), 3u);
  for (const auto& launch : reduces) {
    for (const auto& input : launch.inputs) {
      EXPECT_NE(input.executorId, "e1");
      if (input.mapIndex == 0) {
        EXPECT_EQ(input.executorId, "e3");
      }
    }
  }
  for (const auto& launch : reduces) scheduler().statusUpdate(finished(launch.taskId), "e4");
  auto summary = scheduler().jobSummary("job-1");
  EXPECT_EQ(summary->state, JobState::kSucceeded) << summary->message;
  for (const auto& failure : summary->recentFailures) EXPECT_FALSE(failure.countsTowardsFailures);
}

TEST_F(SchedulerDataTest, FetchFailuresDoNotCountTowardMaxFailures) {
  config.localityWaits = {0, 0, 0};
  config.maxTaskFailures = 1;  // a single counted failure would fail the job
  config.maxStageReruns = 10;
  scheduler().submitJob(parseJob(kMapReduce));
  runMaps();
  for (int round = 0; round < 3; ++round) {
    auto reduce = offer("e3", 1);
    ASSERT_EQ(reduce.size(), 1u) << "round " << round;
    ASSERT_EQ(reduce[0].stageId, "reduce");
    ASSERT_TRUE(
        scheduler().statusUpdate(fetchFailed(reduce[0].taskId, block("map", 1, "e2")), "e3"));
    // e2's outputs are taken as lost: map 1 runs again on e3.
    auto map = offer("e3", 1);
    ASSERT_EQ(map.size(), 1u);
    EXPECT_EQ(map[0].stageId, "map");
    EXPECT_EQ(map[0].index, 1);
    ASSERT_TRUE(scheduler().statusUpdate(finished(map[0].taskId, {0, 1, 2}), "e3"));
    // The re-run landed on e3; make e2 hold it again for the next round.
    scheduler().executorLost("e3", "gone");
    auto redo = offer("e2", 1);
    ASSERT_EQ(redo.size(), 1u);
    ASSERT_TRUE(scheduler().statusUpdate(finished(redo[0].taskId, {0, 1, 2}), "e2"));
  }
  EXPECT_EQ(scheduler().jobSummary("job-1")->state, JobState::kRunning);
}

TEST_F(SchedulerDataTest, OutputsLostTooOftenFailTheJob) {
  config.localityWaits = {0, 0, 0};
  config.maxStageReruns = 1;
  scheduler().submitJob(parseJob(kMapReduce));
  runMaps();
  scheduler().executorLost("e1", "first");
  auto again = offer("e5", 1);
  ASSERT_EQ(again.size(), 1u);
  scheduler().statusUpdate(finished(again[0].taskId, {0}), "e5");
  scheduler().executorLost("e5", "second");
  auto summary = scheduler().jobSummary("job-1");
  EXPECT_EQ(summary->state, JobState::kFailed);
  EXPECT_THAT(summary->message, HasSubstr("lost its output 2 times"));
}

TEST_F(SchedulerDataTest, PersistedStagesAreCachedReadByLaterJobsAndUnpersisted) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(R"({"stages": [
      {"id": "words", "tasks": 1, "persist": true, "command": ["m"]}]})"));
  auto map = offer("e1", 1);
  scheduler().statusUpdate(finished(map[0].taskId, {0, 1}), "e1");
  EXPECT_THAT(listener.events, Contains("cached e1 job-1/words"));
  EXPECT_TRUE(scheduler().takeBlocksToDrop().empty()) << "persisted blocks are kept";
  ASSERT_EQ(scheduler().cachedStages().size(), 1u);
  EXPECT_EQ(scheduler().cachedStages()[0].bytes, 201);
  EXPECT_THAT(scheduler().stagesHeldBy("e1"), ElementsAre("job-1/words"));

  // A later job reads it by "<job>/<stage>"; the input dir is named the same.
  scheduler().submitJob(parseJob(R"({"unpersist": ["job-1/words"], "stages": [
      {"id": "count", "depends_on": ["job-1/words"], "tasks": 2, "command": ["r"]}]})"));
  auto counts = offer("e2", 2);
  ASSERT_EQ(counts.size(), 2u);
  ASSERT_EQ(counts[1].inputs.size(), 1u);
  EXPECT_EQ(counts[1].inputs[0].stageId, "job-1/words");
  EXPECT_EQ(counts[1].inputs[0].path, "job-1/words/0/part-1");
  for (const auto& launch : counts) scheduler().statusUpdate(finished(launch.taskId), "e2");
  // Its unpersist is carried out when it ends.
  EXPECT_THAT(listener.events, Contains("uncached job-1/words"));
  EXPECT_TRUE(scheduler().cachedStages().empty());
  bool dropped = false;
  for (const auto& drop : scheduler().takeBlocksToDrop()) {
    dropped = dropped || (drop.executorId == "e1" && drop.prefix == "job-1/words");
  }
  EXPECT_TRUE(dropped);
  // Now it can no longer be read.
  EXPECT_THROW(scheduler().submitJob(parseJob(R"({"stages": [
      {"id": "c", "depends_on": ["job-1/words"], "tasks": 1, "command": ["r"]}]})")),
               JobError);
  EXPECT_EQ(scheduler().unpersist("job-1/words"),
            Status::failedPrecondition("stage job-1/words is no longer persisted"));
  EXPECT_EQ(scheduler().unpersist("job-9/x"), Status::notFound("no stage job-9/x"));
}

TEST_F(SchedulerDataTest, ReduceTasksWaitForTheExecutorHoldingTheirInput) {
  config.localityWaits = {3000, 3000, 3000};
  scheduler().submitJob(parseJob(R"({"stages": [
      {"id": "src", "tasks": 1, "command": ["m"]},
      {"id": "use", "depends_on": ["src"], "tasks": 2, "command": ["r"]}]})"));
  auto src = offer("e1", 1, "n1");
  scheduler().statusUpdate(finished(src[0].taskId, {0, 1}), "e1");
  EXPECT_EQ(scheduler().pendingTasksByPreferredNode(), (std::map<std::string, int64_t>{{"n1", 2}}));
  EXPECT_TRUE(offer("e2", 1, "n2").empty()) << "e2 on n2 holds none of the input";
  auto local = offer("e1", 1, "n1");
  ASSERT_EQ(local.size(), 1u);
  // Spark's container placement hints keep a submitted stage's every task until it completes.
  EXPECT_EQ(scheduler().containerPlacementHints(),
            (std::map<int, LocalityHints>{{0, LocalityHints{{{"n1", 2}}, 2, 1}}}));
  auto nodeLocal = offer("e3", 1, "n1");
  EXPECT_TRUE(nodeLocal.empty()) << "NODE_LOCAL only after locality.wait.process";
  clock.advance(3000);
  nodeLocal = offer("e3", 1, "n1");
  ASSERT_EQ(nodeLocal.size(), 1u);
  const auto stages = scheduler().jobSummary("job-1")->stages;
  EXPECT_EQ(stages[1].launchesByLocality[static_cast<size_t>(TaskLocality::kProcessLocal)], 1);
  EXPECT_EQ(stages[1].launchesByLocality[static_cast<size_t>(TaskLocality::kNodeLocal)], 1);
}

TEST_F(SchedulerDataTest, PreferredHostsFromTheJobFile) {
  config.localityWaits = {1000, 1000, 1000};
  scheduler().submitJob(parseJob(R"({"stages": [
      {"id": "a", "tasks": 2, "preferred_hosts": ["n2"], "command": ["m"]}]})"));
  EXPECT_TRUE(offer("e1", 2, "n1").empty());
  EXPECT_EQ(offer("e2", 2, "n2").size(), 2u);
}

// Spark's ExecutorAllocationManager keeps hostToLocalTaskCount and numLocalityAwareTasks per
// ResourceProfile, and YarnAllocator places each profile's requests from its own.
TEST_F(SchedulerDataTest, ContainerPlacementHintsAreKeptPerResourceProfile) {
  config.executorCores = 2;
  scheduler().submitJob(parseJob(R"({"stages": [
      {"id": "narrow", "tasks": 3, "preferred_hosts": ["n1"], "command": ["m"]},
      {"id": "wide", "tasks": 4, "preferred_hosts": ["n2", "n3"], "command": ["m"], "cpus": 2,
       "executor": {"cores": 8}},
      {"id": "anywhere", "tasks": 5, "command": ["m"], "executor": {"cores": 8}}]})"));
  // The default profile: 2 cores / 1 cpu; profile 1: 8 cores / the wide stage's 2 cpus. The
  // stage without preferences adds no locality-aware task to its profile.
  EXPECT_EQ(scheduler().containerPlacementHints(),
            (std::map<int, LocalityHints>{{0, LocalityHints{{{"n1", 3}}, 3, 2}},
                                          {1, LocalityHints{{{"n2", 4}, {"n3", 4}}, 4, 4}}}));
}

TEST_F(SchedulerDataTest, FairPoolsSplitSlotsByWeight) {
  config.mode = SchedulingMode::kFair;
  config.pools = {PoolConfig{"light", SchedulingMode::kFifo, 1, 0},
                  PoolConfig{"heavy", SchedulingMode::kFifo, 3, 0}};
  scheduler().submitJob(parseJob(
      R"({"name": "l", "pool": "light", "stages": [{"id": "s", "tasks": 100, "builtin": "noop"}]})"));
  scheduler().submitJob(parseJob(
      R"({"name": "h", "pool": "heavy", "stages": [{"id": "s", "tasks": 100, "builtin": "noop"}]})"));
  std::map<std::string, int> byJob;
  for (int i = 0; i < 8; ++i) {
    for (const auto& launch : offer("e" + std::to_string(i), 1)) ++byJob[launch.jobId];
  }
  EXPECT_EQ(byJob["job-1"], 2);
  EXPECT_EQ(byJob["job-2"], 6);
}

TEST_F(SchedulerDataTest, FifoIsTheDefaultBetweenJobs) {
  scheduler().submitJob(
      parseJob(R"({"pool": "light", "stages": [{"id": "s", "tasks": 4, "builtin": "noop"}]})"));
  scheduler().submitJob(
      parseJob(R"({"pool": "heavy", "stages": [{"id": "s", "tasks": 4, "builtin": "noop"}]})"));
  for (const auto& launch : offer("e1", 4)) EXPECT_EQ(launch.jobId, "job-1");
}

TEST_F(SchedulerDataTest, ASlowTaskGetsASecondCopyAndTheLoserIsKilled) {
  auto launches = launchOneStageWithSpeculation(4);
  ASSERT_EQ(launches.size(), 4u);
  clock.advance(1000);
  scheduler().statusUpdate(finished(launches[1].taskId), "e1");
  scheduler().statusUpdate(finished(launches[2].taskId), "e1");
  clock.advance(1000);  // tasks 0 and 3 have run 2000 > 1.5 x 1000
  EXPECT_EQ(scheduler().checkSpeculatableTasks(), 2);
  clock.advance(config.speculationIntervalMs);
  EXPECT_EQ(scheduler().checkSpeculatableTasks(), 0) << "marked once";
  EXPECT_THAT(listener.events, Contains("speculative job-1/s"));
  // Never on the executor running the first copy.
  EXPECT_TRUE(offer("e1", 2).empty());
  auto copies = offer("e2", 2);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_TRUE(copies[0].speculative);
  EXPECT_EQ(copies[0].attempt, 1);
  EXPECT_THAT(listener.events, Contains("speculative start job-1/s e2"));
  // The copy of task 0 wins; the original is killed.
  const rest::TaskLaunch& copyOf0 = copies[0].index == 0 ? copies[0] : copies[1];
  ASSERT_TRUE(scheduler().statusUpdate(finished(copyOf0.taskId), "e2"));
  auto kills = scheduler().takeTasksToKill();
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].taskId, launches[0].taskId);
  EXPECT_EQ(kills[0].executorId, "e1");
  ASSERT_TRUE(scheduler().statusUpdate(ended(launches[0].taskId, rest::TaskState::kKilled), "e1"));
  EXPECT_EQ(scheduler().pendingTaskCount(), 0) << "a killed loser is not run again";
  EXPECT_EQ(scheduler().jobSummary("job-1")->stages[0].speculativeLaunches, 2);
}

// --- The output commit coordinator (Spark's OutputCommitCoordinator) and attempt numbers.

TEST_F(SchedulerDataTest, TheFirstAttemptToAskCommitsAndASpeculativeLoserIsDenied) {
  auto launches = launchOneStageWithSpeculation(2);
  ASSERT_EQ(launches.size(), 2u);
  auto copies = speculateTask0(launches);
  ASSERT_EQ(copies.size(), 1u);
  const int64_t original = launches[0].taskId;
  const int64_t copy = copies[0].taskId;
  // Both exit 0 at about the same time; the copy asks first and wins.
  EXPECT_EQ(scheduler().canCommit(copy, "e2"), "");
  EXPECT_EQ(scheduler().canCommit(copy, "e2"), "") << "asking again gets the same answer";
  EXPECT_THAT(scheduler().canCommit(original, "e1"), HasSubstr("is committing"));
  EXPECT_THAT(scheduler().canCommit(copy, "e1"), HasSubstr("runs on e2"));
  // The loser, denied, reports KILLED: not a failure, not run again.
  ASSERT_TRUE(scheduler().statusUpdate(
      ended(original, rest::TaskState::kKilled, "commit denied: attempt 3 of s[0] is committing"),
      "e1"));
  ASSERT_TRUE(scheduler().statusUpdate(finished(copy), "e2"));
  EXPECT_EQ(scheduler().pendingTaskCount(), 0);
  EXPECT_TRUE(scheduler().allJobsDone());
  EXPECT_EQ(scheduler().jobSummary("job-1")->state, JobState::kSucceeded);
  EXPECT_EQ(scheduler().jobSummary("job-1")->stages[0].failedAttempts, 0);
}

TEST_F(SchedulerDataTest, ALostExecutorsAttemptIsDeniedAndItsRetryCommits) {
  scheduler().submitJob(parseJob(R"({"stages": [{"id": "s", "tasks": 1, "command": ["x"]}]})"));
  auto first = offer("e1", 1);
  ASSERT_EQ(first.size(), 1u);
  scheduler().executorLost("e1", "killed");
  // The zombie on the lost executor still finishes and asks: denied.
  EXPECT_THAT(scheduler().canCommit(first[0].taskId, "e1"), HasSubstr("is not running"));
  auto retry = offer("e2", 1);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].attempt, 1);
  EXPECT_EQ(scheduler().canCommit(retry[0].taskId, "e2"), "");
  ASSERT_TRUE(scheduler().statusUpdate(finished(retry[0].taskId), "e2"));
  EXPECT_THAT(scheduler().canCommit(retry[0].taskId, "e2"), HasSubstr("is not running"));
}

TEST_F(SchedulerDataTest, AnAuthorisedAttemptThatFailsFreesTheTaskForTheNext) {
  scheduler().submitJob(parseJob(R"({"stages": [{"id": "s", "tasks": 1, "command": ["x"]}]})"));
  auto first = offer("e1", 1);
  ASSERT_EQ(scheduler().canCommit(first[0].taskId, "e1"), "");
  ASSERT_TRUE(scheduler().statusUpdate(
      ended(first[0].taskId, rest::TaskState::kFailed, "cannot keep its output: disk full"), "e1"));
  auto retry = offer("e2", 1);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(scheduler().canCommit(retry[0].taskId, "e2"), "");
}

TEST_F(SchedulerDataTest, AttemptNumbersNeverRepeatWithinATask) {
  auto launches = launchOneStageWithSpeculation(2);
  auto copy = speculateTask0(launches);
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(copy[0].attempt, 1);
  // The copy fails (the original still runs: no retry), then the original fails: its retry
  // would be "attempt 0 + 1" again, and takes 2 instead.
  ASSERT_TRUE(scheduler().statusUpdate(
      ended(copy[0].taskId, rest::TaskState::kFailed, "exited with code 1"), "e2"));
  ASSERT_TRUE(scheduler().statusUpdate(
      ended(launches[0].taskId, rest::TaskState::kFailed, "exited with code 1"), "e1"));
  auto retry = offer("e3", 1);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].index, 0);
  EXPECT_EQ(retry[0].attempt, 2);
  ASSERT_FALSE(retry[0].argv.empty());
}

// Spark: an original that succeeds before its speculative copy launched drops the pending copy.
TEST_F(SchedulerDataTest, PendingSpeculativeCopyIsDroppedWhenTheOriginalSucceeds) {
  auto launches = launchOneStageWithSpeculation(2);
  ASSERT_EQ(launches.size(), 2u);
  clock.advance(1000);
  scheduler().statusUpdate(finished(launches[0].taskId), "e1");
  clock.advance(1000);
  EXPECT_EQ(scheduler().checkSpeculatableTasks(), 1);
  ASSERT_TRUE(scheduler().statusUpdate(finished(launches[1].taskId), "e1"));
  EXPECT_THAT(listener.events, Contains("speculative dropped job-1/s"));
  EXPECT_TRUE(offer("e2", 1).empty()) << "no copy of a finished task";
}

TEST(SchedulerConfigDataTest, ReadsLocalityFairAndSpeculationKeys) {
  Properties props = testing_support::propertiesOf({{"locality.wait", "2s"},
                                                    {"locality.wait.node", "500ms"},
                                                    {"scheduler.mode", "FAIR"},
                                                    {"speculation", "true"},
                                                    {"speculation.quantile", "0.9"}});
  const SchedulerConfig config = SchedulerConfig::fromProperties(props);
  EXPECT_EQ(config.localityWaits.process, 2000);
  EXPECT_EQ(config.localityWaits.node, 500);
  EXPECT_EQ(config.localityWaits.rack, 2000);
  EXPECT_EQ(config.mode, SchedulingMode::kFair);
  EXPECT_TRUE(config.speculation);
  EXPECT_DOUBLE_EQ(config.speculationQuantile, 0.9);
  props.set("speculation.quantile", "1.5");
  EXPECT_THROW(SchedulerConfig::fromProperties(props), ConfigError);
}

// Lineage with the compact registry: in a stage of a million map tasks, the outputs without
// blocks are only bits, and losing an executor re-runs exactly the tasks whose blocks it held.
TEST_F(SchedulerDataTest, LosingAnExecutorReRunsExactlyItsOutputsOfAMillionTaskStage) {
  config.localityWaits = {0, 0, 0};
  scheduler().submitJob(parseJob(R"({"name": "wide", "stages": [
      {"id": "map", "tasks": 1000000, "command": ["m"]},
      {"id": "reduce", "depends_on": ["map"], "tasks": 1, "command": ["r"]}]})"));
  // Tasks alternate between e1 and e2; every 1000th task writes a block, the rest nothing.
  std::vector<int64_t> lostWithE1;
  const auto writesBlock = [](int64_t index) { return index % 1000 == 7; };
  for (int round = 0; round < 500; ++round) {
    for (const char* executor : {"e1", "e2"}) {
      const auto launches = offer(executor, 1000);
      ASSERT_EQ(launches.size(), 1000u);
      for (const auto& launch : launches) {
        const bool block = writesBlock(launch.index);
        if (block && std::string(executor) == "e1") lostWithE1.push_back(launch.index);
        ASSERT_TRUE(scheduler().statusUpdate(
            finished(launch.taskId, block ? std::vector<int64_t>{0} : std::vector<int64_t>{}),
            executor));
      }
    }
  }
  std::sort(lostWithE1.begin(), lostWithE1.end());
  ASSERT_EQ(lostWithE1.size(), 500u);
  // The reduce task reads only the outputs holding blocks, not a million map outputs.
  const auto reduce = offer("e3", 1);
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(reduce[0].stageId, "reduce");
  EXPECT_EQ(reduce[0].inputs.size(), 1000u);

  scheduler().executorLost("e1", "killed");
  EXPECT_EQ(stageReruns("job-1", "map"), 1);
  EXPECT_EQ(scheduler().jobSummary("job-1")->stages[0].pending, 500);
  ASSERT_TRUE(scheduler().statusUpdate(fetchFailed(reduce[0].taskId, block("map", 7, "e1")), "e3"));
  std::vector<int64_t> reRun;
  for (const auto& launch : offer("e3", 2000)) {
    EXPECT_EQ(launch.stageId, "map");
    EXPECT_EQ(launch.attempt, 1);
    reRun.push_back(launch.index);
    ASSERT_TRUE(scheduler().statusUpdate(finished(launch.taskId, {0}), "e3"));
  }
  std::sort(reRun.begin(), reRun.end());
  EXPECT_EQ(reRun, lostWithE1);
  const auto again = offer("e4", 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].stageId, "reduce");
  ASSERT_EQ(again[0].inputs.size(), 1000u);
  for (const auto& input : again[0].inputs) {
    EXPECT_TRUE(writesBlock(input.mapIndex)) << input.mapIndex;
    EXPECT_NE(input.executorId, "e1");
  }
  EXPECT_EQ(scheduler().materializedTaskRecords(), 1u) << "the running reduce task only";
}

// The status of a huge stage is counts and a bounded sample of failures, never per-task lists;
// failure counts are kept only for the tasks that failed.
TEST_F(SchedulerDataTest, AHugeStagesStatusIsCountsAndABoundedSampleOfFailures) {
  config.maxTaskFailures = 2;
  scheduler().submitJob(parseJob(
      R"({"name": "huge", "stages": [{"id": "s", "tasks": 1000000000, "builtin": "noop"}]})"));
  int64_t failedOnce = 0;
  for (int round = 0; round < 100; ++round) {
    for (const auto& launch : offer("e1", 100)) {
      // A tenth of the first attempts fail once; their retries succeed.
      if (launch.attempt == 0 && launch.index % 10 == 3) {
        ++failedOnce;
        ASSERT_TRUE(scheduler().statusUpdate(ended(launch.taskId, rest::TaskState::kFailed), "e1"));
      } else {
        ASSERT_TRUE(scheduler().statusUpdate(finished(launch.taskId), "e1"));
      }
    }
  }
  const JobSummary summary = *scheduler().jobSummary("job-1");
  EXPECT_EQ(summary.state, JobState::kRunning) << summary.message;
  EXPECT_EQ(summary.numTasks, 1000000000);
  EXPECT_EQ(summary.failedAttempts, failedOnce);
  EXPECT_EQ(summary.succeeded + summary.pending + summary.running, 1000000000);
  EXPECT_EQ(summary.succeeded, 10000 - failedOnce) << "10,000 attempts launched";
  EXPECT_EQ(summary.recentFailures.size(), config.failedAttemptsKeptPerJob);
  EXPECT_EQ(summary.recentFailures.back().attempt, 0);
  // A failure count per task that failed (and a queue entry for the last round's retries),
  // nothing for the tasks that only succeeded.
  EXPECT_LE(scheduler().materializedTaskRecords(), static_cast<size_t>(failedOnce) + 20u);
  EXPECT_GE(scheduler().materializedTaskRecords(), static_cast<size_t>(failedOnce));
}

// Spark 4's speculation defaults: quantile 0.9, multiplier 3, minTaskRuntime 100ms.
TEST(SchedulerConfigDataTest, SpeculationDefaultsAreSpark4s) {
  const SchedulerConfig defaults = testing::schedulerConfigOf({});
  EXPECT_DOUBLE_EQ(defaults.speculationQuantile, 0.9);
  EXPECT_DOUBLE_EQ(defaults.speculationMultiplier, 3.0);
  EXPECT_EQ(defaults.speculationMinThresholdMs, 100);
  EXPECT_EQ(defaults.speculationTaskDurationThresholdMs, -1);
  const SchedulerConfig set =
      testing::schedulerConfigOf({{"speculation.minTaskRuntime", "2s"},
                                  {"speculation.task.duration.threshold", "30s"},
                                  {"executor.cores", "4"}});
  EXPECT_EQ(set.speculationMinThresholdMs, 2000);
  EXPECT_EQ(set.speculationTaskDurationThresholdMs, 30000);
  EXPECT_EQ(set.slotsPerExecutor, 4);
  EXPECT_THROW(testing::schedulerConfigOf({{"speculation.minTaskRuntime", "2s"},
                                           {"speculation.task.duration.threshold", "30s"},
                                           {"executor.cores", "4"},
                                           {"speculation.quantile", "1.5"}}),
               ConfigError);
}

}  // namespace
}  // namespace tide::am
