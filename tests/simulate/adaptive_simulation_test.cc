// The adaptive policy on the example traces through the simulator (virtual time, so the numbers
// are exact): bursts get their executors at once and give them back at once, with no thrash;
// a steady stream settles on a fixed set with no oscillation; and the same traces under Spark's
// policy, as the baseline the adaptive one must beat on both axes.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/simulator.h"
#include "allocation/workload_trace.h"

namespace tide::allocation {
namespace {

const std::string kExamples = std::string(TIDE_SOURCE_DIR) + "/examples/traces";

// The bench's cluster: up to 8 one-slot executors, idle timeout 3 s.
AllocationConfig benchConfig(PolicyKind policy) {
  AllocationConfig config;
  config.policy = policy;
  config.bounds = {0, 0, 8};
  config.executorIdleTimeout = 3000;
  return config;
}

struct PolicyRun {
  std::vector<SimulationLine> lines;
  SimulationSummary summary;
};

PolicyRun run(const std::string& trace, PolicyKind policy, DurationMs grantDelay = 400) {
  const Trace t = loadTrace(kExamples + "/" + trace);
  SimulationOptions options;
  options.grantDelay = grantDelay;
  PolicyRun r;
  SimulationObserver observer;
  observer.onLine = [&r](const SimulationLine& line) { r.lines.push_back(line); };
  r.summary = simulate(benchConfig(policy), t, options, observer);
  return r;
}

DurationMs stageTime(const SimulationSummary& summary, const std::string& stage) {
  for (const StageTiming& s : summary.stages) {
    if (s.stage == stage) return s.finishedAt - s.submittedAt;
  }
  return -1;
}

TEST(AdaptiveSimulationTest, BurstsGetAllTheirExecutorsAtOnceAndGiveThemBackAtOnce) {
  // Three bursts of 200 tasks of 200 ms, 20 s apart: 40 s of work each, 8 executors finish it
  // in 5 s; they come 400 ms after the request.
  const PolicyRun adaptive = run("bursts.jsonl", PolicyKind::kAdaptive);
  for (const char* burst : {"burst1", "burst2", "burst3"}) {
    EXPECT_EQ(stageTime(adaptive.summary, burst), 5400) << burst;
  }
  EXPECT_EQ(adaptive.summary.executorMs, 3 * 8 * 5000);  // no idle executor-second at all
  // No thrash: each burst raises the target once, to 8, and every executor is granted once and
  // released once, never while tasks are pending.
  std::vector<int> raises;
  int previous = 0;
  size_t granted = 0;
  size_t released = 0;
  for (const SimulationLine& line : adaptive.lines) {
    if (line.target > previous) raises.push_back(line.target);
    previous = line.target;
    granted += line.added.size();
    released += line.removed.size();
    if (!line.removed.empty()) {
      EXPECT_EQ(line.tasksPending, 0) << "t=" << line.t;
    }
  }
  EXPECT_EQ(raises, (std::vector<int>{8, 8, 8}));
  EXPECT_EQ(granted, 24u);
  EXPECT_EQ(released, 24u);

  // Spark's policy on the same trace ramps 1, 3, 7, 8 and idles 3 s: slower and dearer.
  const PolicyRun spark = run("bursts.jsonl", PolicyKind::kSpark);
  for (const char* burst : {"burst1", "burst2", "burst3"}) {
    EXPECT_EQ(stageTime(spark.summary, burst), 8200) << burst;  // as README says
  }
  EXPECT_EQ(spark.summary.executorMs, 192000);
}

TEST(AdaptiveSimulationTest, ASteadyStreamSettlesWithoutOscillating) {
  // A task of 1 s every 250 ms for 30 s: 4 executors busy all along.
  const PolicyRun adaptive = run("stream.jsonl", PolicyKind::kAdaptive);
  // Once settled (from 10 s to the end of the stream at 30 s) the executor set does not move:
  // a line is printed only when something changes, and none is.
  const SimulationLine* settled = nullptr;
  for (const SimulationLine& line : adaptive.lines) {
    if (line.t <= 10000) settled = &line;
    EXPECT_FALSE(line.t > 10000 && line.t < 30000) << "t=" << line.t << ": " << line.why;
  }
  ASSERT_NE(settled, nullptr);
  EXPECT_EQ(settled->target, 4);
  EXPECT_EQ(settled->live, 4);
  // Every executor granted was kept until the stream ended or let go once during the ramp.
  EXPECT_LE(adaptive.summary.peakLive, 6);
  const PolicyRun spark = run("stream.jsonl", PolicyKind::kSpark);
  EXPECT_LT(adaptive.summary.executorMs, spark.summary.executorMs);
  EXPECT_LE(adaptive.summary.makespanMs, spark.summary.makespanMs + 100);
}

TEST(AdaptiveSimulationTest, ALongStageThenShortOnesDoesNotThrash) {
  const PolicyRun adaptive = run("long-then-short.jsonl", PolicyKind::kAdaptive);
  // No executor is released and then replaced within a start latency's reach: count the
  // grants that follow a release by less than 1 s.
  TimeMs lastRelease = -1;
  int churn = 0;
  for (const SimulationLine& line : adaptive.lines) {
    if (!line.added.empty() && lastRelease >= 0 && line.t - lastRelease < 1000) ++churn;
    if (!line.removed.empty()) lastRelease = line.t;
  }
  EXPECT_EQ(churn, 0);
  const PolicyRun spark = run("long-then-short.jsonl", PolicyKind::kSpark);
  EXPECT_LE(adaptive.summary.executorMs, spark.summary.executorMs);
  EXPECT_EQ(adaptive.summary.tasks, spark.summary.tasks);
}

}  // namespace
}  // namespace tide::allocation
