// `tide simulate` with speculation=true: slow tasks get a copy by the AM's rule (Spark's
// TaskSetManager.checkSpeculatableTasks), the copy runs on another executor, the first attempt to
// finish is the task's, and the allocation policy sees the pending copies (Spark's
// ExecutorAllocationManager, with its +1 executor for a copy when one executor holds every
// task). Every number is worked out by hand from the order of steps within an instant.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/simulator.h"
#include "allocation/workload_trace.h"

namespace tide::allocation {
namespace {

// Executors of 4 one-cpu slots, at most 8, that come 100 ms after the backlog timeout (1 s, the
// default, as is the 100 ms interval) and go after 5 s idle.
AllocationConfig fourCoreConfig() {
  AllocationConfig config;
  config.bounds.maxExecutors = 8;
  config.executorIdleTimeout = 5000;
  config.executorCores = 4;
  return config;
}

// Spark 4's defaults: quantile 0.9, multiplier 3, minTaskRuntime 100ms, interval 100ms.
SimulationOptions speculationOn(int64_t slotsPerExecutor = 4) {
  SimulationOptions options;
  options.speculation.enabled = true;
  options.speculation.rule.slotsPerExecutor = slotsPerExecutor;
  return options;
}

struct SpecRun {
  std::vector<SimulationLine> lines;
  SimulationSummary summary;

  // "t event stage/task@executor" for every speculation event, in order.
  std::vector<std::string> events() const {
    std::vector<std::string> all;
    for (const auto& line : lines) {
      for (const auto& e : line.speculation) {
        all.push_back(std::to_string(e.t) + " " + speculationEventName(e.kind) + " " + e.stage +
                      "/" + std::to_string(e.task) + (e.executor.empty() ? "" : "@" + e.executor));
      }
    }
    return all;
  }
  int peakTarget() const {
    int peak = 0;
    for (const auto& line : lines) peak = std::max(peak, line.target);
    return peak;
  }
  TimeMs stageEnd(const std::string& stage) const {
    for (const auto& timing : summary.stages) {
      if (timing.stage == stage) return timing.finishedAt;
    }
    return -2;
  }
};

SpecRun simulateText(const std::string& text, const AllocationConfig& config,
                     const SimulationOptions& options) {
  std::istringstream in(text);
  const Trace trace = parseTrace(in, "trace.jsonl");
  SpecRun run;
  SimulationObserver observer;
  observer.onLine = [&run](const SimulationLine& line) { run.lines.push_back(line); };
  run.summary = simulate(config, trace, options, observer);
  return run;
}

using Events = std::vector<std::string>;

// 4 tasks of 1 s, task 0's first attempt 20 s: e1 (granted at 1100) runs all four; three end at
// 2100; the median of their durations is 1000, so the threshold is max(3 x 1000, 100) = 3000 and
// task 0, started at 1100, is slow at the first check after 4100 (strictly longer): 4200.
const char* kOneStraggler =
    R"({"t": 0, "type": "stage", "stage": "scan", "tasks": 4, "task_ms": 1000, "stragglers": [{"task": 0, "ms": 20000}]})";

TEST(SpeculationSimulationTest, ATaskSlowerThanMultiplierTimesTheMedianGetsACopy) {
  const SpecRun run = simulateText(kOneStraggler, fourCoreConfig(), speculationOn());
  ASSERT_FALSE(run.events().empty());
  EXPECT_EQ(run.events().front(), "4200 submitted scan/0");
  ASSERT_TRUE(run.summary.speculation.has_value());
  EXPECT_EQ(run.summary.speculation->submitted, 1);
}

// ExecutorAllocationManager's speculation locality offset: 1 running + 1 pending copy fill one
// 4-slot executor (maxNeeded 1), but the copy may not run beside its original, so Spark asks
// for one more. The backlog timer armed at 4200 fires at 5200; e2 comes at 5300 and runs the
// copy (1000 ms: a copy is not a straggler), which wins at 6300 and kills the original on e1.
TEST(SpeculationSimulationTest, OneMoreExecutorIsAskedForWhenAllTasksFitOneAndACopyIsPending) {
  const SpecRun run = simulateText(kOneStraggler, fourCoreConfig(), speculationOn());
  EXPECT_EQ(run.peakTarget(), 2);
  EXPECT_EQ(run.events(), (Events{"4200 submitted scan/0", "5300 launched scan/0@e2",
                                  "6300 copy_won scan/0@e2"}));
  EXPECT_EQ(run.stageEnd("scan"), 6300);
  EXPECT_EQ(run.summary.makespanMs, 6300);
  EXPECT_EQ(run.summary.tasks, 4) << "the killed original is not a completed task";
  EXPECT_EQ(run.summary.peakLive, 2);
  // e1 busy 1100..6300, e2 5300..6300.
  EXPECT_EQ(run.summary.busyExecutorMs, 5200 + 1000);
}

TEST(SpeculationSimulationTest, WithoutSpeculationTheStragglerRunsItsFullTime) {
  const SpecRun run = simulateText(kOneStraggler, fourCoreConfig(), SimulationOptions{});
  EXPECT_TRUE(run.events().empty());
  EXPECT_FALSE(run.summary.speculation.has_value()) << "the summary has no speculation counts";
  EXPECT_EQ(run.summary.makespanMs, 21100);
  EXPECT_EQ(run.peakTarget(), 1);
}

// TaskSetManager: a copy never goes to an executor that runs an attempt of the task, however
// many slots it has free. At maxExecutors=1 the +1 cannot be granted: the copy waits until the
// original ends at 21100, and is then dropped (the stale pending copy no longer counts).
TEST(SpeculationSimulationTest, ACopyNeverRunsOnItsOriginalsExecutor) {
  AllocationConfig config = fourCoreConfig();
  config.bounds.maxExecutors = 1;
  const SpecRun run = simulateText(kOneStraggler, config, speculationOn());
  EXPECT_EQ(run.events(), (Events{"4200 submitted scan/0", "21100 dropped scan/0"}));
  EXPECT_EQ(run.summary.makespanMs, 21100);
  EXPECT_EQ(run.summary.speculation->launched, 0);
  EXPECT_EQ(run.summary.speculation->dropped, 1);
}

// Spark drops a pending speculative task when its original succeeds first: the copy is not
// launched and the policy stops counting it (here before its backlog timer, armed at 4200, fires
// at 5200), so no executor is asked for. Task 3 runs 3500 ms: slow at 4200, done at 4600.
TEST(SpeculationSimulationTest, APendingCopyIsDroppedWhenTheOriginalFinishesFirst) {
  const SpecRun run = simulateText(
      R"({"t": 0, "type": "stage", "stage": "agg", "tasks": 4, "task_ms": 1000, "stragglers": [{"task": 3, "ms": 3500}]})",
      fourCoreConfig(), speculationOn());
  EXPECT_EQ(run.events(), (Events{"4200 submitted agg/3", "4600 dropped agg/3"}));
  EXPECT_EQ(run.peakTarget(), 1) << "a stale copy must not raise the target";
  EXPECT_EQ(run.summary.peakLive, 1);
  const SimulationLine* dropped = nullptr;
  for (const auto& line : run.lines) {
    if (line.t == 4600) dropped = &line;
  }
  ASSERT_NE(dropped, nullptr);
  EXPECT_EQ(dropped->tasksPending, 0);
  EXPECT_EQ(dropped->target, 0);
}

// The original finishing while its copy runs: the copy is killed (TaskEnd kKilled, not a failure
// that would be retried). Task 2 runs 4500 ms from 1100: the copy starts on e2 at 5300 (due at
// 6300) and the original ends first, at 5600.
TEST(SpeculationSimulationTest, TheOriginalFinishingFirstKillsTheRunningCopy) {
  const SpecRun run = simulateText(
      R"({"t": 0, "type": "stage", "stage": "join", "tasks": 4, "task_ms": 1000, "stragglers": [{"task": 2, "ms": 4500}]})",
      fourCoreConfig(), speculationOn());
  EXPECT_EQ(run.events(), (Events{"4200 submitted join/2", "5300 launched join/2@e2",
                                  "5600 original_won join/2@e1"}));
  EXPECT_EQ(run.summary.makespanMs, 5600);
  EXPECT_EQ(run.summary.tasks, 4);
  // The killed copy leaves nothing running or pending behind: the executors idle out.
  EXPECT_EQ(run.lines.back().tasksRunning, 0);
  EXPECT_EQ(run.lines.back().live, 0);
}

// Spark's ExecutorAllocationListener drops a pending speculative task only when a copy of it
// starts or an attempt of it succeeds, and TaskSetManager keeps the task marked. When the
// straggler's executor is lost at 6000 before its copy could start (maxExecutors=1), the task
// runs again as a retry (no straggler this time), and the marked copy still counts as pending
// (2 pending: the retry and the copy) until the retry, on e2 from 6100, succeeds at 7100. The
// copy never runs beside the retry on e2.
TEST(SpeculationSimulationTest, APendingCopyOfALostTaskCountsUntilTheTaskSucceeds) {
  AllocationConfig config = fourCoreConfig();
  config.bounds.maxExecutors = 1;
  const SpecRun run =
      simulateText(std::string(kOneStraggler) + "\n" + R"({"t": 6000, "type": "executor_lost"})",
                   config, speculationOn());
  EXPECT_EQ(run.events(), (Events{"4200 submitted scan/0", "7100 dropped scan/0"}));
  const SimulationLine* lost = nullptr;
  for (const auto& line : run.lines) {
    if (line.t == 6000) lost = &line;
  }
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->tasksPending, 2);
  EXPECT_EQ(run.summary.makespanMs, 7100);
  EXPECT_EQ(run.summary.speculation->launched, 0);
}

// minFinishedForSpeculation = max(floor(quantile x numTasks), 1): with 10 tasks and the default
// quantile 0.9, 9 must have succeeded. Two stragglers of 30 s (task 0 on e1 from 1100, task 1
// on e2 from 2100) leave 8 for half a minute: no copy, however slow they are, until task 0 ends
// at 31100 and makes it 9; only then is task 1 speculated (its copy on idle e1 loses at 32100).
// With quantile 0.8 the 8 suffice and both get a copy early.
TEST(SpeculationSimulationTest, NoCopyBeforeTheQuantileOfTasksHasSucceeded) {
  const std::string trace =
      R"({"t": 0, "type": "stage", "stage": "s", "tasks": 10, "task_ms": 1000, "stragglers": [{"task": 0, "ms": 30000}, {"task": 1, "ms": 30000}]})";
  AllocationConfig config = fourCoreConfig();
  config.executorCores = 1;
  const SpecRun strict = simulateText(trace, config, speculationOn(1));
  EXPECT_EQ(strict.events(),
            (Events{"31100 submitted s/1", "31100 launched s/1@e1", "32100 original_won s/1@e2"}));
  EXPECT_EQ(strict.summary.makespanMs, 32100);

  SimulationOptions looser = speculationOn(1);
  looser.speculation.rule.quantile = 0.8;
  const SpecRun loose = simulateText(trace, config, looser);
  EXPECT_EQ(loose.summary.speculation->submitted, 2);
  EXPECT_EQ(loose.summary.speculation->copiesWon, 2);
  EXPECT_LT(loose.summary.makespanMs, 10000);
}

// The threshold is max(multiplier x median, speculation.minTaskRuntime): tasks of 100 ms make
// it 300 ms by the multiplier, but minTaskRuntime 2s holds the copy back until the straggler has
// run longer than 2000 ms: started at 1100, submitted at 3200.
TEST(SpeculationSimulationTest, MinTaskRuntimeIsTheShortestRunThatMaySpeculate) {
  SimulationOptions options = speculationOn();
  options.speculation.rule.minThresholdMs = 2000;
  const SpecRun run = simulateText(
      R"({"t": 0, "type": "stage", "stage": "s", "tasks": 4, "task_ms": 100, "stragglers": [{"task": 0, "ms": 9000}]})",
      fourCoreConfig(), options);
  ASSERT_FALSE(run.events().empty());
  EXPECT_EQ(run.events().front(), "3200 submitted s/0");
  options.speculation.rule.minThresholdMs = 100;
  const SpecRun fast = simulateText(
      R"({"t": 0, "type": "stage", "stage": "s", "tasks": 4, "task_ms": 100, "stragglers": [{"task": 0, "ms": 9000}]})",
      fourCoreConfig(), options);
  EXPECT_EQ(fast.events().front(), "1500 submitted s/0") << "3 x 100 ms: slow after 1400";
}

// speculation.task.duration.threshold: a stage with no more tasks than one executor has slots
// speculates tasks running longer than it before the quantile is reached. A stage of one task
// (never speculated by the median rule) gets its copy after 2 s: at 3200.
TEST(SpeculationSimulationTest, TaskDurationThresholdSpeculatesASmallStageBeforeTheQuantile) {
  const std::string trace =
      R"({"t": 0, "type": "stage", "stage": "one", "tasks": 1, "task_ms": 1000, "stragglers": [{"task": 0, "ms": 20000}]})";
  const SpecRun without = simulateText(trace, fourCoreConfig(), speculationOn());
  EXPECT_EQ(without.summary.speculation->submitted, 0);
  SimulationOptions options = speculationOn();
  options.speculation.rule.taskDurationThresholdMs = 2000;
  const SpecRun with = simulateText(trace, fourCoreConfig(), options);
  ASSERT_FALSE(with.events().empty());
  EXPECT_EQ(with.events().front(), "3200 submitted one/0");
  EXPECT_EQ(with.summary.speculation->copiesWon, 1);
}

// The example trace and the numbers docs/configuration.md quotes for it (executor.cores=4,
// demo.conf's other settings): "scan" ends at 6.3 s instead of 21.1 s, "join"'s original wins,
// "agg"'s stale copy is dropped; 3 submitted, 2 launched, 1 copy won, 1 original won, 1 dropped.
TEST(SpeculationSimulationTest, TheExampleTraceGivesTheDocumentedNumbers) {
  std::ifstream in(std::string(TIDE_SOURCE_DIR) + "/examples/traces/speculation.jsonl");
  std::stringstream text;
  text << in.rdbuf();
  AllocationConfig demo = fourCoreConfig();  // demo.conf with executor.cores=4
  const SpecRun on = simulateText(text.str(), demo, speculationOn());
  const SpecRun off = simulateText(text.str(), demo, SimulationOptions{});
  EXPECT_EQ(on.stageEnd("scan"), 6300);
  EXPECT_EQ(off.stageEnd("scan"), 21100);
  EXPECT_EQ(on.stageEnd("join"), 35600);
  EXPECT_EQ(on.stageEnd("agg"), 64600);
  ASSERT_TRUE(on.summary.speculation.has_value());
  EXPECT_EQ(on.summary.speculation->submitted, 3);
  EXPECT_EQ(on.summary.speculation->launched, 2);
  EXPECT_EQ(on.summary.speculation->copiesWon, 1);
  EXPECT_EQ(on.summary.speculation->originalsWon, 1);
  EXPECT_EQ(on.summary.speculation->dropped, 1);
  EXPECT_EQ(on.summary.peakLive, 2);
  EXPECT_EQ(off.summary.peakLive, 1);
  EXPECT_EQ(on.summary.executorMs, 39500);
  EXPECT_EQ(off.summary.executorMs, 43000);
}

TEST(SpeculationSimulationTest, SpeculationEventsAndCountsHaveTheDocumentedJsonShape) {
  SimulationLine line;
  line.t = 5300;
  line.speculation = {{5300, SpeculationEvent::Kind::kLaunched, "scan", 0, "e2"},
                      {5300, SpeculationEvent::Kind::kSubmitted, "scan", 1, ""}};
  EXPECT_EQ(toJsonLine(line),
            R"({"t":5300,"target":0,"live":0,"pending":0,"busy":0,"tasks_pending":0,)"
            R"("tasks_running":0,"added":[],"removed":[],"speculation":[)"
            R"({"t":5300,"event":"launched","stage":"scan","task":0,"executor":"e2"},)"
            R"({"t":5300,"event":"submitted","stage":"scan","task":1}],"why":""})");
  SimulationSummary summary;
  summary.tasks = 4;
  summary.speculation = SpeculationCounts{3, 2, 1, 1, 1};
  EXPECT_EQ(toJsonLine(summary),
            R"({"summary":{"makespan_ms":0,"executor_ms":0,"busy_executor_ms":0,"peak_live":0,)"
            R"("tasks":4,"speculation":{"submitted":3,"launched":2,"copies_won":1,)"
            R"("originals_won":1,"dropped":1}}})");
}

}  // namespace
}  // namespace tide::allocation
