// The simulator drives the real allocation engine; every expectation here is worked out by hand
// from DESIGN.md ("Allocation semantics", "The simulator's model") and the order of steps within
// an instant: trace events, task completions, grants, placement, tick, removals, requests.

#include "allocation/simulator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/workload_trace.h"

namespace tide::allocation {
namespace {

// Fast timeouts so that each effect shows within seconds of virtual time.
AllocationConfig fastConfig() {
  AllocationConfig config;
  config.bounds.minExecutors = 0;
  config.bounds.initialExecutors = 0;
  config.bounds.maxExecutors = 20;
  config.schedulerBacklogTimeout = 1000;
  config.sustainedSchedulerBacklogTimeout = 1000;
  config.executorIdleTimeout = 60000;
  config.interval = 100;
  config.executorCores = 1;
  config.taskCpus = 1;
  return config;
}

// fastConfig() keeping one executor at minExecutors (also the initial one) after a 5 s idle
// timeout.
AllocationConfig keepingOneConfig() {
  AllocationConfig config = fastConfig();
  config.bounds.minExecutors = 1;
  config.bounds.initialExecutors = 1;
  config.executorIdleTimeout = 5000;
  return config;
}

// fastConfig() whose idle executors go after 2 s (cachedExecutorIdleTimeout stays infinite).
AllocationConfig twoSecondIdleConfig() {
  AllocationConfig config = fastConfig();
  config.executorIdleTimeout = 2000;
  return config;
}

// A map stage of two 1 s tasks writing shuffle output, whose job ends at 12 s.
constexpr const char* kMapJobEndingAt12s =
    R"({"t": 0, "type": "stage", "stage": "map", "tasks": 2, "task_ms": 1000, "shuffle": true, "job": "j1"}
{"t": 12000, "type": "job_end", "job": "j1"})";

struct SimRun {
  std::vector<SimulationLine> lines;
  SimulationSummary summary;
  std::vector<std::string> diagnostics;

  // The last line printed at or before `t`: the state the output shows at that time.
  const SimulationLine& at(TimeMs t) const {
    const SimulationLine* found = nullptr;
    for (const auto& line : lines) {
      if (line.t <= t) found = &line;
    }
    if (found == nullptr) throw std::runtime_error("no line at or before " + std::to_string(t));
    return *found;
  }
  const SimulationLine* exactly(TimeMs t) const {
    for (const auto& line : lines) {
      if (line.t == t) return &line;
    }
    return nullptr;
  }
  // (time, new target) for every line whose target differs from the line before.
  std::vector<std::pair<TimeMs, int>> targetChanges() const {
    std::vector<std::pair<TimeMs, int>> changes;
    int previous = 0;
    for (const auto& line : lines) {
      if (line.target != previous) changes.emplace_back(line.t, line.target);
      previous = line.target;
    }
    return changes;
  }
  // (time, executor) for every removal, in order.
  std::vector<std::pair<TimeMs, std::string>> removals() const {
    std::vector<std::pair<TimeMs, std::string>> all;
    for (const auto& line : lines) {
      for (const auto& id : line.removed) all.emplace_back(line.t, id);
    }
    return all;
  }
  std::vector<std::pair<TimeMs, std::string>> grants() const {
    std::vector<std::pair<TimeMs, std::string>> all;
    for (const auto& line : lines) {
      for (const auto& id : line.added) all.emplace_back(line.t, id);
    }
    return all;
  }
};

SimRun simulateTrace(const std::string& traceText, const AllocationConfig& config,
                     const SimulationOptions& options = {}) {
  std::istringstream in(traceText);
  const Trace trace = parseTrace(in, "trace.jsonl");
  SimRun run;
  SimulationObserver observer;
  observer.onLine = [&run](const SimulationLine& line) { run.lines.push_back(line); };
  observer.onDiagnostic = [&run](const std::string& message) {
    run.diagnostics.push_back(message);
  };
  run.summary = simulate(config, trace, options, observer);
  return run;
}

using Changes = std::vector<std::pair<TimeMs, int>>;
using Events = std::vector<std::pair<TimeMs, std::string>>;

// A backlog far deeper than any target, of tasks that outlast the ramp.
const char* kDeepBacklog =
    R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1000, "task_ms": 100000})"
    "\n";

TEST(SimulatorTest, DeepBacklogRampsUpExponentiallyToMaxExecutors) {
  SimulationOptions options;
  options.until = 20000;
  const SimRun run = simulateTrace(kDeepBacklog, fastConfig(), options);
  // addTime = 0 + 1s; each rise re-arms it 1s later; the step doubles while taken whole:
  // 0+1, 1+2, 3+4, 7+8, then 15+16 clipped to maxExecutors=20.
  EXPECT_EQ(run.targetChanges(),
            (Changes{{1000, 1}, {2000, 3}, {3000, 7}, {4000, 15}, {5000, 20}}));
  // With no grant delay a request is granted at the next instant processed: the next tick.
  const Events grants = run.grants();
  ASSERT_EQ(grants.size(), 20u);
  EXPECT_EQ(grants[0], std::make_pair(TimeMs{1100}, std::string("e1")));
  EXPECT_EQ(grants[1], std::make_pair(TimeMs{2100}, std::string("e2")));
  EXPECT_EQ(grants[19], std::make_pair(TimeMs{5100}, std::string("e20")));
  EXPECT_EQ(run.summary.peakLive, 20);
  EXPECT_EQ(run.at(5100).live, 20);
  EXPECT_EQ(run.at(5100).busy, 20);
  EXPECT_EQ(run.at(5100).tasksRunning, 20);
  EXPECT_EQ(run.at(5100).tasksPending, 980);
}

TEST(SimulatorTest, RepeatedNonActionDecisionsAreNotReprinted) {
  SimulationOptions options;
  options.until = 20000;
  const SimRun run = simulateTrace(kDeepBacklog, fastConfig(), options);
  // From 6s on every tick says "not adding: at maxExecutors=20 with 980 pending tasks" and
  // nothing else changes until the first tasks end at 101.1s: one line says it, once.
  int notAdding = 0;
  for (const auto& line : run.lines) {
    if (line.why.find("not adding: at maxExecutors=20") != std::string::npos) ++notAdding;
  }
  EXPECT_EQ(notAdding, 1);
  EXPECT_EQ(run.lines.back().t, 6000);
}

TEST(SimulatorTest, GrantDelayDefersEachGrant) {
  SimulationOptions options;
  options.until = 4000;
  options.grantDelay = 250;
  const SimRun run = simulateTrace(kDeepBacklog, fastConfig(), options);
  // Requested at 1000 and 2000, granted 250ms later, at instants of their own.
  const Events grants = run.grants();
  ASSERT_GE(grants.size(), 3u);
  EXPECT_EQ(grants[0], std::make_pair(TimeMs{1300}, std::string("e1")));  // line of the next tick
  EXPECT_EQ(run.at(1000).pending, 1);
  EXPECT_EQ(run.at(1300).live, 1);
  // executor_ms counts from the grant itself (1250), not from the tick that printed it.
  EXPECT_EQ(run.summary.executorMs, (4000 - 1250) + 2 * (4000 - 2250) + 4 * (4000 - 3250));
}

TEST(SimulatorTest, TargetStopsAtWhatTheTasksNeed) {
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 5, "task_ms": 10000})", fastConfig());
  // maxNeeded = 5 tasks / 1 slot: 1, 3, then min(7, 5).
  const Changes changes = run.targetChanges();
  ASSERT_GE(changes.size(), 3u);
  EXPECT_EQ(Changes(changes.begin(), changes.begin() + 3),
            (Changes{{1000, 1}, {2000, 3}, {3000, 5}}));
  EXPECT_EQ(run.summary.peakLive, 5);
  EXPECT_EQ(run.summary.tasks, 5);

  // With two slots per executor the same tasks need ceil(5 / 2) = 3.
  AllocationConfig twoCores = fastConfig();
  twoCores.executorCores = 2;
  const SimRun wide = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 5, "task_ms": 10000})", twoCores);
  EXPECT_EQ(wide.summary.peakLive, 3);
  for (const auto& line : wide.lines) EXPECT_LE(line.target, 3) << "at t=" << line.t;
}

TEST(SimulatorTest, IdleExecutorsGoOldestFirstAfterTheTimeoutButNeverBelowMin) {
  const AllocationConfig config = keepingOneConfig();
  // The initial request (t=0) is granted at the next instant, 100: e1 runs T1 100..2100.
  // 1000: target max(1, 1 live)+1 = 2 -> e2 at 1100 runs T2 until 3100.
  // 2000: max(2,2)+2 = 4, clipped to maxNeeded ceil(3 tasks) = 3 -> e3 at 2100. At 2100 T1
  //       ends and e3 arrives: T3 goes to the oldest free executor, e1 (until 4100); e3 idles.
  // Idle since: e3 2100, e2 3100, e1 4100; deadlines 7100, 8100, 9100.
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 3, "task_ms": 2000})", config);
  EXPECT_EQ(run.grants(), (Events{{100, "e1"}, {1100, "e2"}, {2100, "e3"}}));
  // e1's deadline (9100) finds it at minExecutors=1: kept, and the run has settled.
  EXPECT_EQ(run.removals(), (Events{{7100, "e3"}, {8100, "e2"}}));
  EXPECT_EQ(run.lines.back().t, 9100);
  EXPECT_EQ(run.lines.back().live, 1);
  EXPECT_EQ(run.lines.back().why, "keeping e1: idle for 5.0s but at minExecutors=1");
  EXPECT_EQ(run.summary.makespanMs, 4100);
  EXPECT_EQ(run.summary.tasks, 3);
  EXPECT_EQ(run.summary.peakLive, 3);
  // e1 100..9100 (the end), e2 1100..8100, e3 2100..7100.
  EXPECT_EQ(run.summary.endMs, 9100);
  EXPECT_EQ(run.summary.executorMs, 9000 + 7000 + 5000);
  // e1 busy 100..2100 and 2100..4100; e2 1100..3100; e3 never.
  EXPECT_EQ(run.summary.busyExecutorMs, 4000 + 2000);
}

TEST(SimulatorTest, ExecutorKeptAtMinIsReportedOnceNotEveryTick) {
  const AllocationConfig config = keepingOneConfig();
  SimulationOptions options;
  options.until = 15000;
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 3, "task_ms": 2000})", config, options);
  // e1 times out at 9100 and is kept; its "idle for" grows every tick after that.
  int keeping = 0;
  for (const auto& line : run.lines) {
    if (line.why.find("keeping e1") != std::string::npos) {
      ++keeping;
      EXPECT_EQ(line.t, 9100);
    }
  }
  EXPECT_EQ(keeping, 1);
  EXPECT_EQ(run.summary.endMs, 15000);
  EXPECT_EQ(run.summary.executorMs, (15000 - 100) + 7000 + 5000);
}

TEST(SimulatorTest, CachedDataKeepsAnExecutorUntilUncache) {
  AllocationConfig config = twoSecondIdleConfig();
  // 1000: target 1 -> e1 at 1100 runs T1 until 2100. 2000: target min(3, 2 needed) = 2 ->
  // e2 at 2100, the instant T1 ends on e1: T2 goes to e1 (oldest) until 3100; e2 never runs a
  // task, holds no cache and idles out at 2100 + 2000. e1 holds cached blocks from 2100 on.
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "c", "tasks": 2, "task_ms": 1000, "cache": true}
{"t": 10000, "type": "uncache", "stage": "c"})",
      config);
  // Uncache does not restart the idle clock: e1, idle since 3100, goes at the same instant's tick.
  EXPECT_EQ(run.removals(), (Events{{4100, "e2"}, {10000, "e1"}}));
  // The uncache came first in the instant: by the tick e1 holds nothing.
  EXPECT_EQ(run.exactly(10000)->why, "removing e1: idle for 6.9s");

  // Without the cache, e1 goes two seconds after its last task.
  const SimRun uncached = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "c", "tasks": 2, "task_ms": 1000}
{"t": 10000, "type": "uncache", "stage": "c"})",
      config);
  EXPECT_EQ(uncached.removals(), (Events{{4100, "e2"}, {5100, "e1"}}));
}

TEST(SimulatorTest, CachedExecutorsWithoutUncacheEndTheRunStillHeld) {
  AllocationConfig config = twoSecondIdleConfig();
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "c", "tasks": 2, "task_ms": 1000, "cache": true})",
      config);
  // Nothing will ever release e1: the run ends (it does not wait forever) with e1 live.
  EXPECT_EQ(run.removals(), (Events{{4100, "e2"}}));
  EXPECT_EQ(run.lines.back().live, 1);
  EXPECT_EQ(run.summary.endMs, 4200);
  EXPECT_EQ(run.summary.executorMs, (4200 - 1100) + 2000);
}

TEST(SimulatorTest, ShuffleOutputHoldsAnExecutorUntilItsJobEnds) {
  AllocationConfig config = twoSecondIdleConfig();
  const SimRun run = simulateTrace(kMapJobEndingAt12s, config);
  EXPECT_EQ(run.removals(), (Events{{4100, "e2"}, {12000, "e1"}}));

  // With shuffle tracking off the output holds nothing.
  config.shuffleTrackingEnabled = false;
  const SimRun untracked = simulateTrace(kMapJobEndingAt12s, config);
  EXPECT_EQ(untracked.removals(), (Events{{4100, "e2"}, {5100, "e1"}}));
}

// decommission.enabled (with shuffle tracking off, as Spark allows): the executors the policy
// lets go take no more tasks, hand their data to a peer and leave at the next tick, while the
// job still runs; counted as gracefully decommissioned.
TEST(SimulatorTest, DecommissionedExecutorsLeaveAtTheNextTickWhileTheirJobRuns) {
  AllocationConfig config = twoSecondIdleConfig();
  config.shuffleTrackingEnabled = false;
  config.decommissionEnabled = true;
  const SimRun run = simulateTrace(kMapJobEndingAt12s, config);
  EXPECT_EQ(run.removals(), (Events{{4200, "e2"}, {5200, "e1"}}));
  ASSERT_NE(run.exactly(4100), nullptr);
  EXPECT_EQ(run.exactly(4100)->why, "decommissioning e2: idle for 2.0s");
  EXPECT_EQ(run.exactly(4100)->live, 2) << "still there while it hands over its data";

  // The example trace: map output of a running job no longer holds 7 executors through the
  // 12 s "slow" stage, as shuffle tracking does.
  std::ifstream in(std::string(TIDE_SOURCE_DIR) + "/examples/traces/decommission.jsonl");
  std::stringstream text;
  text << in.rdbuf();
  AllocationConfig demo = fastConfig();
  demo.bounds.maxExecutors = 8;
  demo.executorCores = 2;
  demo.executorIdleTimeout = 5000;
  const SimRun tracked = simulateTrace(text.str(), demo);
  demo.shuffleTrackingEnabled = false;
  demo.decommissionEnabled = true;
  const SimRun decommissioned = simulateTrace(text.str(), demo);
  EXPECT_EQ(tracked.summary.tasks, decommissioned.summary.tasks);
  EXPECT_LT(decommissioned.summary.executorMs * 10, tracked.summary.executorMs * 6)
      << "less than 60% of the executor time";
  EXPECT_LT(decommissioned.at(12000).live, tracked.at(12000).live);
}

TEST(SimulatorTest, LostExecutorsTasksRunAgainFirstAndTheExecutorIsReplaced) {
  AllocationConfig config = fastConfig();
  config.bounds.initialExecutors = 2;
  config.bounds.maxExecutors = 2;
  config.executorIdleTimeout = 1000;
  // e1, e2 granted at 100: e1 runs T1 (5000ms), e2 runs T2 (3000ms). At 1000 e2 (the newest)
  // dies; T2 goes back to the front of its stage. The target stands at 2, so the RM asks for
  // one more at 1000 and e3 arrives at 1100 and runs T2 again (until 4100), then T3 (7000ms,
  // until 11100). e1 runs T4 (9000ms) from 5100 until 14100. Had T2 been re-queued last, e3
  // would have started T3 at 1100 and the run would end at 12100.
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": [5000, 3000, 7000, 9000]}
{"t": 1000, "type": "executor_lost"})",
      config);
  ASSERT_NE(run.exactly(1000), nullptr);
  EXPECT_EQ(run.exactly(1000)->removed, std::vector<std::string>{"e2"});
  EXPECT_EQ(run.exactly(1000)->tasksPending, 3);
  EXPECT_EQ(run.exactly(1000)->pending, 1);
  EXPECT_EQ(run.exactly(1000)->target, 2);
  EXPECT_EQ(run.grants(), (Events{{100, "e1"}, {100, "e2"}, {1100, "e3"}}));
  EXPECT_EQ(run.summary.makespanMs, 14100);
  EXPECT_EQ(run.summary.tasks, 4);
  // e2's 900ms of the failed T2 count as busy time, though the task never completed.
  EXPECT_EQ(run.summary.busyExecutorMs, (14100 - 100) + 900 + (11100 - 1100));
}

TEST(SimulatorTest, TasksOfALostExecutorRunAgainInTheirFirstOrder) {
  AllocationConfig config = fastConfig();
  config.executorCores = 2;
  config.bounds.initialExecutors = 2;
  config.bounds.maxExecutors = 2;
  // At 100, one task per executor per round: e1 <- T1 (3000), e2 <- T2 (5000), e1 <- T3 (500),
  // e2 <- T4 (1000). T3 ends at 600, leaving e1 a free slot. At 1000 e2 dies with T2 and T4;
  // both go back in the order they first ran: T2 takes e1's free slot at once (until 6000) and
  // T4 waits for the replacement e3 (1100..2100). The other way round the run ends at 6100.
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": [3000, 5000, 500, 1000]}
{"t": 1000, "type": "executor_lost"})",
      config);
  EXPECT_EQ(run.exactly(1000)->tasksPending, 1);
  EXPECT_EQ(run.exactly(1000)->tasksRunning, 2);
  EXPECT_EQ(run.summary.makespanMs, 6000);
  EXPECT_EQ(run.summary.tasks, 4);
}

TEST(SimulatorTest, ExecutorLostWithNoLiveExecutorIsReportedAndIgnored) {
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task_ms": 1000}
{"t": 500, "type": "executor_lost"})",
      fastConfig());
  ASSERT_EQ(run.diagnostics.size(), 1u);
  EXPECT_EQ(run.diagnostics[0],
            "trace.jsonl:2: t=500: executor_lost with no live executor; ignored");
  EXPECT_EQ(run.summary.tasks, 1);
}

TEST(SimulatorTest, SetBoundsClipsTheTargetAtOnceAndCancelsNewestRequests) {
  SimulationOptions options;
  options.grantDelay = 1000;
  options.until = 8000;
  // Ramp with 1s grants: 1000 target 1 (e1 at 2000), 2000 target 3 (e2, e3 at 3000), 3000
  // target 7 with 4 requests due at 4000. At 3550, between ticks, max drops to 5: target 5 at once,
  // and two of the four pending requests are withdrawn; live executors are untouched.
  const SimRun run =
      simulateTrace(std::string(kDeepBacklog) + R"({"t": 3550, "type": "set_bounds", "max": 5})",
                    fastConfig(), options);
  const SimulationLine* line = run.exactly(3600);
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->target, 5);
  EXPECT_EQ(line->live, 3);
  EXPECT_EQ(line->pending, 2);
  EXPECT_NE(line->why.find("bounds changed from [0, 20] to [0, 5]"), std::string::npos)
      << line->why;
  EXPECT_EQ(run.summary.peakLive, 5);
  for (const auto& l : run.lines) {
    if (l.t >= 3600) {
      EXPECT_LE(l.target, 5) << "at t=" << l.t;
    }
  }
}

TEST(SimulatorTest, InvalidSetBoundsIsReportedAndTheRunGoesOn) {
  SimulationOptions options;
  options.until = 3000;
  const SimRun run =
      simulateTrace(std::string(kDeepBacklog) + R"({"t": 1500, "type": "set_bounds", "min": 30})",
                    fastConfig(), options);
  ASSERT_EQ(run.diagnostics.size(), 1u);
  EXPECT_EQ(run.diagnostics[0].rfind("trace.jsonl:2: t=1500: set_bounds rejected", 0), 0u)
      << run.diagnostics[0];
  EXPECT_NE(run.diagnostics[0].find("min=30 is greater than max=20"), std::string::npos);
  // The ramp goes on as if nothing had happened.
  EXPECT_EQ(run.targetChanges(), (Changes{{1000, 1}, {2000, 3}, {3000, 7}}));
}

TEST(SimulatorTest, UntilStopsTheRunAndCutsLifetimesThere) {
  SimulationOptions options;
  options.until = 2500;
  const SimRun run = simulateTrace(kDeepBacklog, fastConfig(), options);
  EXPECT_LE(run.lines.back().t, 2500);
  EXPECT_EQ(run.summary.endMs, 2500);
  EXPECT_EQ(run.summary.tasks, 0);
  EXPECT_EQ(run.summary.makespanMs, 0);
  // e1 from 1100, e2 and e3 from 2100, all busy from their grant.
  EXPECT_EQ(run.summary.executorMs, 1400 + 400 + 400);
  EXPECT_EQ(run.summary.busyExecutorMs, 1400 + 400 + 400);
}

TEST(SimulatorTest, InitialExecutorsIdlingOutEndTheInitialPhase) {
  AllocationConfig config = fastConfig();
  config.bounds.initialExecutors = 2;
  config.executorIdleTimeout = 1000;
  // No stage ever comes: the target holds at 2 until the executors (granted at 100) idle out
  // at 1100; then the target drops to min=0 and both go in that tick.
  const SimRun run = simulateTrace("", config);
  EXPECT_EQ(run.grants(), (Events{{100, "e1"}, {100, "e2"}}));
  EXPECT_EQ(run.removals(), (Events{{1100, "e1"}, {1100, "e2"}}));
  EXPECT_EQ(run.exactly(1100)->target, 0);
  EXPECT_EQ(run.summary.executorMs, 2000);
  EXPECT_EQ(run.summary.tasks, 0);
}

TEST(SimulatorTest, SameInputsGiveByteIdenticalOutput) {
  const std::string trace =
      R"({"t": 0, "type": "stage", "stage": "a", "tasks": [700, 1300, 2100, 400, 900], "cache": true}
{"t": 0, "type": "stage", "stage": "b", "tasks": 30, "task_ms": 1700, "shuffle": true, "job": "j"}
{"t": 2500, "type": "executor_lost"}
{"t": 4000, "type": "set_bounds", "min": 2, "max": 6}
{"t": 9000, "type": "job_end", "job": "j"}
{"t": 15000, "type": "uncache", "stage": "a"})";
  AllocationConfig config = fastConfig();
  config.executorIdleTimeout = 3000;
  config.executorCores = 2;
  SimulationOptions options;
  options.grantDelay = 350;
  std::string outputs[2];
  for (auto& output : outputs) {
    std::istringstream in(trace);
    std::ostringstream out;
    std::ostringstream diagnostics;
    simulateToStream(config, parseTrace(in, "trace.jsonl"), options, out, diagnostics);
    output = out.str();
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_GT(outputs[0].size(), 500u);
}

TEST(SimulatorTest, WorkThatCanNeverRunIsAnErrorNotAHang) {
  AllocationConfig config = fastConfig();
  config.enabled = false;
  config.executorInstances = 0;
  EXPECT_THROW(
      simulateTrace(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task_ms": 10})",
                    config),
      SimulationError);
}

TEST(SimulatorTest, ARunThatDoesNotSettleHitsTheTickCap) {
  SimulationOptions options;
  options.maxTicks = 500;  // 50s of virtual time; the tasks take 100s
  try {
    simulateTrace(kDeepBacklog, fastConfig(), options);
    FAIL() << "expected SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("did not settle within 500 ticks"), std::string::npos)
        << e.what();
  }
}

TEST(SimulatorTest, MillionTaskStageRunsWithoutPerTaskState) {
  AllocationConfig config = fastConfig();
  config.bounds.maxExecutors = 500;
  config.executorCores = 4;
  config.executorIdleTimeout = 1000;
  const SimRun run = simulateTrace(
      R"({"t": 0, "type": "stage", "stage": "big", "tasks": 1000000, "task_ms": 1000})", config);
  EXPECT_EQ(run.summary.tasks, 1000000);
  EXPECT_EQ(run.summary.peakLive, 500);
  EXPECT_EQ(run.lines.back().live, 0);
}

TEST(SimulatorTest, JsonLinesHaveTheDocumentedShape) {
  SimulationLine line;
  static_cast<SimulationCounts&>(line) = {/*target=*/3,         /*live=*/1,
                                          /*pending=*/2,        /*busy=*/1,
                                          /*tasksPending=*/198, /*tasksRunning=*/2};
  line.t = 1100;
  line.added = {"e1"};
  line.why = "added 2 \"quoted\"";
  EXPECT_EQ(toJsonLine(line),
            R"({"t":1100,"target":3,"live":1,"pending":2,"busy":1,"tasks_pending":198,)"
            R"("tasks_running":2,"added":["e1"],"removed":[],"why":"added 2 \"quoted\""})");
  const SimulationSummary summary{/*makespanMs=*/29100,
                                  /*executorMs=*/242000,
                                  /*busyExecutorMs=*/202000,
                                  /*peakLive=*/8,
                                  /*tasks=*/200,
                                  /*speculation=*/std::nullopt,
                                  /*endMs=*/0,
                                  /*stages=*/{}};
  EXPECT_EQ(toJsonLine(summary),
            R"({"summary":{"makespan_ms":29100,"executor_ms":242000,"busy_executor_ms":202000,)"
            R"("peak_live":8,"tasks":200}})");
}

}  // namespace
}  // namespace tide::allocation
