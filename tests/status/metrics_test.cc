// Unit tests of what the status endpoints are made of: the Prometheus metric types and their
// text rendering, the allocation history ring and the decision log's merging of repeats.

#include "common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "am/bounds_reload.h"
#include "am/status/allocation_history.h"
#include "am/status/decision_log.h"
#include "am/status/metrics.h"
#include "common/config.h"
#include "common/process_memory.h"
#include "prometheus_text.h"
#include "tests/support/allocator.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;
using testing_support::kGlibcMalloc;
using testing_support::parsePrometheusText;
using testing_support::tideAmMetricFamilies;

TEST(MetricsRenderingTest, CounterAndGaugeFamiliesWithLabels) {
  metrics::Registry registry;
  auto& requests =
      registry.counter("tide_rm_requests_total", "Calls to the RM", {"call", "outcome"});
  auto& executors = registry.gauge("tide_executors", "Executors by state", {"state"});
  requests.labels({"allocate", "ok"}).inc();
  requests.labels({"allocate", "ok"}).inc(2);
  requests.labels({"register", "error"}).inc();
  executors.labels({"busy"}).set(3);
  executors.labels({"idle"}).set(1.5);

  EXPECT_EQ(registry.render(),
            "# HELP tide_rm_requests_total Calls to the RM\n"
            "# TYPE tide_rm_requests_total counter\n"
            "tide_rm_requests_total{call=\"allocate\",outcome=\"ok\"} 3\n"
            "tide_rm_requests_total{call=\"register\",outcome=\"error\"} 1\n"
            "# HELP tide_executors Executors by state\n"
            "# TYPE tide_executors gauge\n"
            "tide_executors{state=\"busy\"} 3\n"
            "tide_executors{state=\"idle\"} 1.5\n");
}

TEST(MetricsRenderingTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  metrics::Registry registry;
  auto& durations =
      registry.histogram("tide_task_duration_seconds", "Task durations", {0.25, 0.5, 1});
  auto& h = durations.get();
  h.observe(0.125);
  h.observe(0.25);  // on a bound: counts in that bucket ("le")
  h.observe(0.75);
  h.observe(32);
  EXPECT_EQ(registry.render(),
            "# HELP tide_task_duration_seconds Task durations\n"
            "# TYPE tide_task_duration_seconds histogram\n"
            "tide_task_duration_seconds_bucket{le=\"0.25\"} 2\n"
            "tide_task_duration_seconds_bucket{le=\"0.5\"} 2\n"
            "tide_task_duration_seconds_bucket{le=\"1\"} 3\n"
            "tide_task_duration_seconds_bucket{le=\"+Inf\"} 4\n"
            "tide_task_duration_seconds_sum 33.125\n"
            "tide_task_duration_seconds_count 4\n");
}

TEST(MetricsRenderingTest, LabelledHistogramPutsLeLast) {
  metrics::Registry registry;
  auto& latency =
      registry.histogram("tide_rm_request_duration_seconds", "RM latency", {0.5}, {"call"});
  latency.labels({"allocate"}).observe(0.25);
  const std::string text = registry.render();
  EXPECT_THAT(text, HasSubstr("tide_rm_request_duration_seconds_bucket{call=\"allocate\","
                              "le=\"0.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tide_rm_request_duration_seconds_sum{call=\"allocate\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("tide_rm_request_duration_seconds_count{call=\"allocate\"} 1\n"));
}

TEST(MetricsRenderingTest, EscapesLabelValuesAndHelp) {
  metrics::Registry registry;
  auto& failures =
      registry.counter("tide_executor_failures_total", "Line one\nback\\slash", {"cause"});
  failures.labels({"say \"hi\"\\\n"}).inc();
  EXPECT_EQ(registry.render(),
            "# HELP tide_executor_failures_total Line one\\nback\\\\slash\n"
            "# TYPE tide_executor_failures_total counter\n"
            "tide_executor_failures_total{cause=\"say \\\"hi\\\"\\\\\\n\"} 1\n");
}

TEST(MetricsRenderingTest, ValuesUseShortestFormAndSpecialNames) {
  EXPECT_EQ(metrics::formatMetricValue(0), "0");
  EXPECT_EQ(metrics::formatMetricValue(42), "42");
  EXPECT_EQ(metrics::formatMetricValue(0.1), "0.1");
  EXPECT_EQ(metrics::formatMetricValue(1e-5), "1e-05");
  EXPECT_EQ(metrics::formatMetricValue(2147483647), "2147483647");
  EXPECT_EQ(metrics::formatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(metrics::formatMetricValue(-1.0 / 0.0), "-Inf");
}

TEST(MetricsRenderingTest, RefusesWhatPrometheusWouldRefuse) {
  metrics::Registry registry;
  EXPECT_THROW(registry.gauge("tide-executors", "dash"), std::invalid_argument);
  EXPECT_THROW(registry.gauge("2executors", "digit first"), std::invalid_argument);
  EXPECT_THROW(registry.counter("tide_requests", "no _total"), std::invalid_argument);
  EXPECT_THROW(registry.gauge("tide_x", "label", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(registry.histogram("tide_h", "le label", {1}, {"le"}), std::invalid_argument);
  EXPECT_THROW(registry.histogram("tide_h2", "unsorted", {2, 1}), std::invalid_argument);
  registry.gauge("tide_once", "first");
  EXPECT_THROW(registry.gauge("tide_once", "again"), std::invalid_argument);
  auto& family = registry.gauge("tide_two", "two labels", {"a", "b"});
  EXPECT_THROW(family.labels({"only one"}), std::invalid_argument);
}

TEST(MetricsRenderingTest, ConcurrentUpdatesAreNotLost) {
  metrics::Registry registry;
  auto& counter = registry.counter("tide_things_total", "things").get();
  auto& histogram = registry.histogram("tide_seconds", "durations", {1}).get();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.inc();
        histogram.observe(0.5);
      }
    });
  }
  std::string rendered;
  for (int i = 0; i < 20; ++i) rendered = registry.render();  // reads while they write
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 40000);
  const auto snapshot = histogram.snapshot();
  EXPECT_EQ(snapshot.count, 40000u);
  EXPECT_DOUBLE_EQ(snapshot.sum, 20000);
}

TEST(MetricsRenderingTest, TheAmsMetricsRenderAsValidExpositionWithEveryFamily) {
  AmMetrics metrics;
  metrics.rmRequests.labels({"allocate", "ok"}).inc();
  metrics.taskDurationAll().observe(0.002);
  metrics.executorFailures.labels({"memory"}).inc();
  const auto parsed = parsePrometheusText(metrics.registry.render());
  ASSERT_EQ(parsed.error, "");
  for (const std::string& family : tideAmMetricFamilies()) {
    EXPECT_TRUE(parsed.types.count(family)) << family;
  }
  EXPECT_EQ(parsed.types.at("tide_task_duration_seconds"), "histogram");
  EXPECT_EQ(parsed.types.at("tide_tasks_completed_total"), "counter");
  EXPECT_EQ(parsed.at("tide_executors{state=\"pending_removal\"}"), 0);
  EXPECT_EQ(parsed.at("tide_rm_requests_total{call=\"allocate\",outcome=\"ok\"}"), 1);
  EXPECT_EQ(parsed.at("tide_task_duration_seconds_count"), 1);
  EXPECT_EQ(parsed.at("tide_executor_failures_total{cause=\"memory\"}"), 1);
}

// The memory gauges are this process's own, read when /metrics is rendered: 64 MiB allocated and
// touched show in what is resident and in the heap in use, and leave the heap in use when freed.
TEST(MetricsRenderingTest, TheMemoryGaugesFollowWhatTheProcessAllocatesAndFrees) {
  AmMetrics metrics;
  auto gauge = [&](const std::string& kind) {
    metrics.refreshMemory();
    const auto parsed = parsePrometheusText(metrics.registry.render());
    EXPECT_EQ(parsed.error, "");
    return parsed.at("tide_application_master_memory_bytes{kind=\"" + kind + "\"}");
  };
  constexpr double kBlock = 64 << 20;
  const double inUseBefore = gauge("heap_in_use");
  auto block = std::make_unique<std::vector<char>>(static_cast<size_t>(kBlock), 'x');
  if (kGlibcMalloc) {
    EXPECT_GE(gauge("heap_in_use"), inUseBefore + kBlock);
  }
  EXPECT_GE(gauge("resident"), kBlock);
  EXPECT_GE(gauge("resident_anon"), kBlock);
  EXPECT_GE(gauge("resident"), gauge("resident_anon"));
  EXPECT_GT(gauge("resident_file"), 0);
  block.reset();
  if (kGlibcMalloc) {
    EXPECT_LT(gauge("heap_in_use"), inUseBefore + kBlock / 2);
  }
}

TEST(PrometheusTextReaderTest, RejectsMalformedLines) {
  EXPECT_NE(parsePrometheusText("tide_x 1\n").error, "");  // no TYPE
  EXPECT_NE(parsePrometheusText("# TYPE tide_x gauge\ntide_x{a=b} 1\n").error, "");
  EXPECT_NE(parsePrometheusText("# TYPE tide_x gauge\ntide_x one\n").error, "");
  EXPECT_EQ(parsePrometheusText("# TYPE tide_x gauge\ntide_x{a=\"b\"} 1e-05\n").error, "");
}

AllocationPoint pointAt(TimeMs at, int target, int live = 0) {
  return AllocationPoint{/*atMs=*/at, target, live};
}

TEST(AllocationHistoryTest, RecordsOnlyChangesAndAnswersSince) {
  AllocationHistory history(100);
  EXPECT_TRUE(history.record(pointAt(0, 1)));
  EXPECT_FALSE(history.record(pointAt(100, 1)));  // nothing changed
  EXPECT_TRUE(history.record(pointAt(200, 3)));
  EXPECT_TRUE(history.record(pointAt(300, 3, 1)));
  EXPECT_EQ(history.size(), 3u);
  EXPECT_EQ(history.since(-1).size(), 3u);
  const auto newer = history.since(200);
  ASSERT_EQ(newer.size(), 1u);
  EXPECT_EQ(newer[0].atMs, 300);
  EXPECT_TRUE(history.since(300).empty());
}

TEST(AllocationHistoryTest, StaysBoundedKeepingTheStartAndTheRecentPastExact) {
  AllocationHistory history(1000);
  for (int i = 0; i < 100000; ++i) history.record(pointAt(i, i));
  EXPECT_LE(history.size(), 1000u);
  EXPECT_GT(history.thinned(), 0u);
  const auto all = history.since(-1);
  EXPECT_EQ(all.front().atMs, 0);  // where the series started
  // The newest few hundred points are all there, one per change.
  for (size_t i = all.size() - 300; i < all.size(); ++i) {
    EXPECT_EQ(all[i].atMs, 100000 - static_cast<TimeMs>(all.size() - i)) << i;
  }
  for (size_t i = 1; i < all.size(); ++i) ASSERT_LT(all[i - 1].atMs, all[i].atMs);
}

// A stage's ticks fill the AM's history for ~1,000 s: were its memory taken as it filled, the
// AM's resident size would climb all that while, whatever its work.
TEST(AllocationHistoryTest, TheAmsTakesItsMemoryWhenMadeNotAsItFills) {
  if (!kGlibcMalloc) GTEST_SKIP() << "the heap figures are glibc malloc's";
  AllocationHistory history(AllocationHistory::kDefaultCapacity, HistoryMemory::kWhole);
  const int64_t inUseBefore = readProcessMemory().heapInUseBytes;
  for (int i = 0; i < 3 * static_cast<int>(history.capacity()); ++i) {
    history.record(pointAt(i, i));
  }
  const int64_t inUseAfter = readProcessMemory().heapInUseBytes;
  EXPECT_GT(history.thinned(), 0u);  // full, and thinned more than once
  EXPECT_LT(inUseAfter - inUseBefore, 4096);
}

// A replayed log's holds what it read: `tide history` keeps one per application it lists.
TEST(AllocationHistoryTest, AReplayedLogsGrowsWithWhatItReadUpToItsCapacity) {
  if (!kGlibcMalloc) GTEST_SKIP() << "the heap figures are glibc malloc's";
  const int64_t inUseBefore = readProcessMemory().heapInUseBytes;
  AllocationHistory history;
  for (int i = 0; i < 10; ++i) history.record(pointAt(i, i));
  EXPECT_LT(readProcessMemory().heapInUseBytes - inUseBefore, 4096);
  for (int i = 10; i < 3 * static_cast<int>(history.capacity()); ++i) {
    history.record(pointAt(i, i));
  }
  EXPECT_LE(history.size(), history.capacity());
  // The capacity's worth and malloc's page rounding: not the 1.6 times as much a vector's own
  // doubling would have taken.
  EXPECT_LT(readProcessMemory().heapInUseBytes - inUseBefore,
            static_cast<int64_t>(history.capacity() * sizeof(AllocationPoint)) + 16384);
}

// "<action> x<repeats>" of each record, newest first.
std::vector<std::string> actionsAndRepeats(const std::vector<DecisionRecord>& records) {
  std::vector<std::string> out;
  for (const DecisionRecord& record : records) {
    out.push_back(record.action + " x" + std::to_string(record.repeats));
  }
  return out;
}

TEST(DecisionLogTest, RepeatsMergeEvenWhenOtherStatesInterleave) {
  DecisionLog log;
  log.add(0, "allocation", "raise_target", 1, "added 1", "");
  for (int tick = 1; tick <= 50; ++tick) {
    log.add(tick * 100, "allocation", "not_adding", 8, "not adding: at maxExecutors=8",
            "not_adding/");
    log.add(tick * 100, "containers", "waiting", 8,
            "waiting: 2 containers requested " + std::to_string(tick) + "s ago, none granted",
            "waiting/5");
  }
  ASSERT_EQ(log.size(), 3u);
  const auto newest = log.newest(10);
  EXPECT_THAT(actionsAndRepeats(newest),
              ::testing::ElementsAre("waiting x50", "not_adding x50", "raise_target x1"));
  EXPECT_EQ(newest[0].why, "waiting: 2 containers requested 50s ago, none granted");
  EXPECT_EQ(newest[0].atMs, 100);
  EXPECT_EQ(newest[0].lastMs, 5000);
}

// Issue 14: while a backlog drains, the policy lowers the target every tick and the allocator
// cancels a request after each; without coalescing, 20 such rows pushed everything else off.
TEST(DecisionLogTest, ARunOfEventsOfOneKindIsOneRecordWithItsRangeAndCount) {
  DecisionLog log;
  log.add(0, "allocation", "raise_target", 137, "added 64, target 137", "", 73);
  int target = 137;
  for (int step = 1; step <= 110; ++step) {
    const TimeMs now = 1000 + step * 100;
    const int lowered = target - 1;
    log.add(now, "allocation", "lower_target", lowered,
            "lowered target " + std::to_string(target) + " -> " + std::to_string(lowered), "",
            target);
    log.add(
        now + 5, "containers", "cancel_requests", lowered,
        "cancelling 1 pending container requests, " + std::to_string(lowered) + " still pending",
        "");
    target = lowered;
  }
  ASSERT_EQ(log.size(), 3u) << "one raise, one run of lowers, one run of cancels";
  const auto newest = log.newest(10);
  const DecisionRecord& cancels = newest[0];
  const DecisionRecord& lowers = newest[1];
  EXPECT_THAT(
      actionsAndRepeats(newest),
      ::testing::ElementsAre("cancel_requests x110", "lower_target x110", "raise_target x1"));
  EXPECT_EQ(lowers.firstTarget, 137);
  EXPECT_EQ(lowers.target, 27);
  EXPECT_EQ(lowers.atMs, 1100);
  EXPECT_EQ(lowers.lastMs, 12000);
  EXPECT_EQ(lowers.firstWhy, "lowered target 137 -> 136");
  EXPECT_EQ(lowers.why, "lowered target 28 -> 27");
  EXPECT_EQ(lowers.summary(), "lowered target 137 \u2192 27 in 110 steps over 11 s");
  EXPECT_EQ(cancels.summary().rfind("110\u00d7 over 11 s, last: cancelling 1 pending", 0), 0u)
      << cancels.summary();
  EXPECT_EQ(newest[2].action, "raise_target");
  EXPECT_EQ(newest[2].summary(), "added 64, target 137") << "a single event is its reason";
}

TEST(DecisionLogTest, ANewRecordOfAnotherKindFromTheSameSourceEndsTheRun) {
  DecisionLog log;
  log.add(0, "allocation", "raise_target", 1, "added 1", "", 0);
  log.add(100, "allocation", "raise_target", 3, "added 2", "", 1);
  log.add(200, "allocation", "remove", 3, "removing e1: idle for 60s", "");
  log.add(300, "allocation", "raise_target", 7, "added 4", "", 3);
  ASSERT_EQ(log.size(), 3u);
  const auto newest = log.newest(10);
  EXPECT_EQ(newest[0].repeats, 1) << "the remove ended the first run of raises";
  EXPECT_EQ(newest[0].firstTarget, 3);
  EXPECT_EQ(newest[2].repeats, 2);
  EXPECT_EQ(newest[2].summary(), "raised target 0 \u2192 3 in 2 steps over 100 ms");
}

TEST(DecisionLogTest, StatesHoldingInBetweenDoNotEndARun) {
  DecisionLog log;
  log.add(0, "allocation", "keep", 9, "keeping e3: idle for 61s but at minExecutors=1", "keep/e3");
  for (int tick = 1; tick <= 5; ++tick) {
    log.add(tick * 100, "allocation", "lower_target", 9 - tick, "lowered", "", 10 - tick);
    log.add(tick * 100, "allocation", "keep", 9 - tick, "keeping e3", "keep/e3");
  }
  ASSERT_EQ(log.size(), 2u);
  const auto newest = log.newest(10);
  EXPECT_THAT(actionsAndRepeats(newest), ::testing::ElementsAre("keep x6", "lower_target x5"));
  EXPECT_EQ(newest[1].firstTarget, 9);
  EXPECT_EQ(newest[1].target, 4);
}

TEST(DecisionLogTest, RunsAreBoundedLikeRecords) {
  DecisionLog log(4);
  for (int i = 0; i < 1000; ++i) {
    // Alternating kinds from one source: every record is new, and the oldest go.
    log.add(i, "allocation", i % 2 == 0 ? "raise_target" : "lower_target", i, "x", "", i);
  }
  EXPECT_EQ(log.size(), 4u);
  for (int i = 0; i < 1000; ++i) log.add(2000 + i, "containers", "request", 1, "more", "");
  EXPECT_EQ(log.size(), 4u);
  EXPECT_EQ(log.newest(1)[0].repeats, 1000);
}

TEST(DecisionLogTest, IsBounded) {
  DecisionLog log(10);
  for (int i = 0; i < 100; ++i)
    log.add(i, "allocation", "remove", 0, "removing", std::to_string(i));
  EXPECT_EQ(log.size(), 10u);
  EXPECT_EQ(log.newest(1)[0].atMs, 99);
}

class BoundsReloadTest : public ::testing::Test {
 protected:
  // A properties file `name` in the test's directory setting the two bounds.
  std::string boundsFile(const std::string& name, int minExecutors, int maxExecutors) {
    return dir.writeFile(name, "dynamicAllocation.minExecutors " + std::to_string(minExecutors) +
                                   "\ndynamicAllocation.maxExecutors " +
                                   std::to_string(maxExecutors) + "\n");
  }

  testing_support::TempDir dir;
  std::vector<std::string> warnings;
};

TEST_F(BoundsReloadTest, TheFileIsReadWithTheConfOverridesOnTop) {
  const std::string file = boundsFile("tide.conf", 1, 8);
  allocation::Bounds bounds = loadBounds(file, {}, &warnings);
  EXPECT_EQ(bounds.minExecutors, 1);
  EXPECT_EQ(bounds.maxExecutors, 8);
  bounds = loadBounds(file, {{"dynamicAllocation.maxExecutors", "3"}}, &warnings);
  EXPECT_EQ(bounds.maxExecutors, 3);  // --conf outranks the file, on reload as at start
}

TEST_F(BoundsReloadTest, AnInvalidFileIsAnErrorNamingTheKeyAndFile) {
  const std::string file = boundsFile("bad.conf", 5, 2);
  try {
    loadBounds(file, {}, &warnings);
    FAIL() << "min > max was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("dynamicAllocation.minExecutors"));
    EXPECT_THAT(e.what(), HasSubstr("bad.conf"));
  }
  const std::string typo = dir.writeFile("typo.conf", "dynamicAllocation.maxExecutors lots\n");
  EXPECT_THROW(loadBounds(typo, {}, &warnings), ConfigError);
  EXPECT_THROW(loadBounds((dir.path() / "missing.conf").string(), {}, &warnings), ConfigError);
}

TEST_F(BoundsReloadTest, OnlyTheFieldsThatChangedAreApplied) {
  allocation::Bounds before{1, 2, 8};
  EXPECT_TRUE(boundsChange(before, before).empty());
  const BoundsChange change = boundsChange(before, {1, 2, 3});
  EXPECT_FALSE(change.minExecutors);
  EXPECT_FALSE(change.initialExecutors);
  ASSERT_TRUE(change.maxExecutors);
  EXPECT_EQ(*change.maxExecutors, 3);
  EXPECT_EQ(change.describe(), "max=3");
}

}  // namespace
}  // namespace tide::am
