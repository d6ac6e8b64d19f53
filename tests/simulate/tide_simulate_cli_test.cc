// Runs the real `tide` binary on the example traces, the way a person would.

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `tide ARGS` through the shell, capturing stdout and stderr.
Result runTide(const std::string& args) {
  tide::testing_support::TempDir dir;
  const std::string errFile = (dir.path() / "stderr").string();
  const std::string command = std::string(TIDE_BIN_DIR) + "/tide " + args + " 2>" + errFile;
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = tide::testing_support::readFile(errFile);
  return result;
}

using tide::testing_support::lines;

const std::string kExamples = std::string(TIDE_SOURCE_DIR) + "/examples/traces";

std::string simulateArgs(const std::string& trace) {
  return "simulate --properties-file " + kExamples + "/demo.conf --trace " + trace;
}

// What the tests read of a run's summary (its last line).
struct Summary {
  int peakLive = -1;
  int64_t tasks = -1;
};

// The summary of a run that succeeded; a test failure (and -1s) when it failed or printed none.
Summary summaryOf(const Result& run) {
  Summary summary;
  EXPECT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> output = lines(run.out);
  rapidjson::Document last;
  if (!output.empty()) last.Parse(output.back().c_str());
  if (output.empty() || last.HasParseError() || !last.IsObject() || !last.HasMember("summary")) {
    ADD_FAILURE() << "no summary in: " << run.out;
    return summary;
  }
  summary.peakLive = last["summary"]["peak_live"].GetInt();
  summary.tasks = last["summary"]["tasks"].GetInt64();
  return summary;
}

// Runs `tide simulate` on a trace of `lines`, written to a file `name` of a directory of its own.
Result simulateTraceFile(const std::string& name, const std::string& lines) {
  tide::testing_support::TempDir dir;
  return runTide(simulateArgs(dir.writeFile(name, lines)));
}

TEST(TideSimulateCliTest, SteadyBatchRunsToItsSummary) {
  const Result result = runTide(simulateArgs(kExamples + "/steady-batch.jsonl"));
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::vector<std::string> output = lines(result.out);
  ASSERT_GE(output.size(), 2u);
  for (size_t i = 0; i + 1 < output.size(); ++i) {
    rapidjson::Document line;
    line.Parse(output[i].c_str());
    ASSERT_FALSE(line.HasParseError()) << output[i];
    EXPECT_TRUE(line.HasMember("t") && line.HasMember("target") && line.HasMember("why"))
        << output[i];
  }
  rapidjson::Document summary;
  summary.Parse(output.back().c_str());
  ASSERT_FALSE(summary.HasParseError()) << output.back();
  ASSERT_TRUE(summary.HasMember("summary")) << output.back();
  const auto& s = summary["summary"];
  EXPECT_EQ(s["tasks"].GetInt64(), 200);
  EXPECT_EQ(s["peak_live"].GetInt(), 8);  // demo.conf's maxExecutors
  // 200 tasks x 2s = 400 executor-slot seconds on 2-core executors: at least 200s busy.
  EXPECT_GE(s["busy_executor_ms"].GetInt64(), 200000);
  EXPECT_GE(s["executor_ms"].GetInt64(), s["busy_executor_ms"].GetInt64());
}

TEST(TideSimulateCliTest, EveryExampleTraceRunsAndGivesTheSameOutputTwice) {
  int traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kExamples)) {
    if (entry.path().extension() != ".jsonl") continue;
    ++traces;
    const Result first = runTide(simulateArgs(entry.path().string()));
    ASSERT_EQ(first.status, 0) << entry.path() << ": " << first.err;
    const Result second = runTide(simulateArgs(entry.path().string()));
    EXPECT_EQ(first.out, second.out) << entry.path();
    EXPECT_NE(lines(first.out).back().find("\"summary\""), std::string::npos) << entry.path();
  }
  EXPECT_GE(traces, 3);
}

// Issue 13 item 5 end to end: demo.conf's executors have 2 cores; "wide"'s 8 tasks take 2 cpus
// each (one per executor) and "narrow"'s 4 take 1 (two per executor): maxNeeded is
// 8 + 4 / 2 = 10, capped at maxExecutors 8. Counting every stage at executor.cores / task.cpus
// (the old policy, or the trace without "cpus") asks for only (8 + 4) / 2 = 6.
TEST(TideSimulateCliTest, WideTasksAreCountedAtTheirStagesOwnTasksPerExecutor) {
  const Result wide = runTide(simulateArgs(kExamples + "/wide-tasks.jsonl"));
  const Summary wideSummary = summaryOf(wide);
  EXPECT_EQ(wideSummary.peakLive, 8) << wide.out;
  EXPECT_EQ(wideSummary.tasks, 12);

  const Result narrow = simulateTraceFile(
      "narrow.jsonl",
      "{\"t\": 0, \"type\": \"stage\", \"stage\": \"wide\", \"tasks\": 8, \"task_ms\": 4000}\n"
      "{\"t\": 0, \"type\": \"stage\", \"stage\": \"narrow\", \"tasks\": 4, \"task_ms\": 4000}\n");
  EXPECT_EQ(summaryOf(narrow).peakLive, 6) << narrow.out;
}

// The README's speculation example through the command: the speculation keys reach the
// simulator, and the summary counts what README.md says.
TEST(TideSimulateCliTest, SpeculationKeysReachTheSimulatorAndTheSummaryCountsTheCopies) {
  const std::string args =
      simulateArgs(kExamples + "/speculation.jsonl") + " --conf executor.cores=4";
  const Result on = runTide(args + " --conf speculation=true");
  ASSERT_EQ(on.status, 0) << on.err;
  rapidjson::Document summary;
  summary.Parse(lines(on.out).back().c_str());
  ASSERT_TRUE(summary.HasMember("summary")) << on.out;
  ASSERT_TRUE(summary["summary"].HasMember("speculation")) << on.out;
  const auto& counts = summary["summary"]["speculation"];
  EXPECT_EQ(counts["submitted"].GetInt64(), 3);
  EXPECT_EQ(counts["launched"].GetInt64(), 2);
  EXPECT_EQ(counts["copies_won"].GetInt64(), 1);
  EXPECT_EQ(counts["originals_won"].GetInt64(), 1);
  EXPECT_EQ(counts["dropped"].GetInt64(), 1);
  EXPECT_NE(
      on.out.find(
          R"("speculation":[{"t":5300,"event":"launched","stage":"scan","task":0,"executor":"e2"}])"),
      std::string::npos)
      << on.out;

  const Result off = runTide(args);
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_EQ(off.out.find("speculation"), std::string::npos) << off.out;
  EXPECT_EQ(runTide(args + " --conf speculation.quantile=1.5").status, 2);
}

// Stage-level executor shapes: "fit" (8 tasks of 2 cpus) asks for executors of 8 cores of its
// own (executor_cores): 2 of them, beside "prepare"'s 4 default 2-core executors, each profile
// with its own target. Without executor_cores all 16 tasks share 2-core executors: 8 + 4 = 12,
// capped at maxExecutors 8.
TEST(TideSimulateCliTest, AStageWithItsOwnExecutorShapeGetsExecutorsOfThatShape) {
  const Result shapes = runTide(simulateArgs(kExamples + "/executor-shapes.jsonl"));
  const Summary shapesSummary = summaryOf(shapes);
  EXPECT_EQ(shapesSummary.peakLive, 6) << shapes.out;
  EXPECT_EQ(shapesSummary.tasks, 16);
  EXPECT_NE(shapes.out.find("profile 1 (8 cores): added"), std::string::npos) << shapes.out;

  const Result one = simulateTraceFile(
      "one.jsonl",
      "{\"t\": 0, \"type\": \"stage\", \"stage\": \"prepare\", \"tasks\": 8, \"task_ms\": 2000}\n"
      "{\"t\": 0, \"type\": \"stage\", \"stage\": \"fit\", \"tasks\": 8, \"task_ms\": 4000, "
      "\"cpus\": 2}\n");
  EXPECT_EQ(summaryOf(one).peakLive, 8) << one.out;
}

TEST(TideSimulateCliTest, ATaskWiderThanAnExecutorIsRefusedNamingTheLine) {
  const Result result = simulateTraceFile("wide.jsonl",
                                          "{\"t\": 0, \"type\": \"stage\", \"stage\": \"s1\", "
                                          "\"tasks\": 1, \"task_ms\": 5, \"cpus\": 3}\n");
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("wide.jsonl:1: field 'cpus': 3 cores per task is more than "
                            "executor.cores (2)"),
            std::string::npos)
      << result.err;
}

TEST(TideSimulateCliTest, MalformedTraceExitsTwoNamingTheLine) {
  const Result result = simulateTraceFile(
      "bad.jsonl",
      "{\"t\": 0, \"type\": \"stage\", \"stage\": \"s1\", \"tasks\": 1, \"task_ms\": 5}\n"
      "{\"t\": 1, \"type\": \"stage\", \"stage\": \"s2\", \"tasks\": {}}\n");
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.out, "");  // nothing runs before the whole trace is read
  EXPECT_NE(
      result.err.find("bad.jsonl:2: field 'tasks': expected an integer or an array of durations"),
      std::string::npos)
      << result.err;
}

TEST(TideSimulateCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(runTide("simulate").status, 2);  // no --trace
  EXPECT_EQ(runTide(simulateArgs(kExamples + "/bursts.jsonl") + " --grant-delay soon").status, 2);
  EXPECT_EQ(runTide(simulateArgs(kExamples + "/bursts.jsonl") +
                    " --conf dynamicAllocation.maxExecutors=-3")
                .status,
            2);
  EXPECT_EQ(runTide("simulate --trace /nonexistent.jsonl").status, 2);
  EXPECT_EQ(runTide("frobnicate").status, 2);
  EXPECT_EQ(runTide("").status, 2);
}

TEST(TideSimulateCliTest, UntilAndGrantDelayOptions) {
  const Result result =
      runTide(simulateArgs(kExamples + "/steady-batch.jsonl") + " --until 3s --grant-delay 250ms");
  ASSERT_EQ(result.status, 0) << result.err;
  const std::vector<std::string> output = lines(result.out);
  ASSERT_GE(output.size(), 2u);
  rapidjson::Document last;
  last.Parse(output[output.size() - 2].c_str());
  ASSERT_FALSE(last.HasParseError());
  EXPECT_LE(last["t"].GetInt64(), 3000);
  // Requested at 1000 and 2000, granted 250ms later: 1750 + 750 + 750 executor-ms by 3s.
  rapidjson::Document summary;
  summary.Parse(output.back().c_str());
  EXPECT_EQ(summary["summary"]["executor_ms"].GetInt64(), 1750 + 750 + 750);
  // e1's first two tasks (2s each from 1250) are still running at 3s.
  EXPECT_EQ(summary["summary"]["tasks"].GetInt64(), 0);
}

TEST(TideSimulateCliTest, PlotDrawsTheRunAndLeavesItsOutputAsItWas) {
  tide::testing_support::TempDir dir;
  const std::string trace = kExamples + "/steady-batch.jsonl";
  const std::string plot = (dir.path() / "run.svg").string();
  const Result plain = runTide(simulateArgs(trace));
  const Result plotted = runTide(simulateArgs(trace) + " --plot " + plot);
  ASSERT_EQ(plotted.status, 0) << plotted.err;
  EXPECT_EQ(plotted.out, plain.out);
  const std::string svg = tide::testing_support::readFile(plot);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 100);
  for (const char* series :
       {"class=\"target\"", "class=\"live\"", "class=\"busy\"", "class=\"tasks\""}) {
    EXPECT_NE(svg.find(series), std::string::npos) << series;
  }
  // The legend's summary is the run's own.
  rapidjson::Document summary;
  summary.Parse(lines(plain.out).back().c_str());
  EXPECT_NE(svg.find("peak " + std::to_string(summary["summary"]["peak_live"].GetInt()) + " live"),
            std::string::npos);

  // A plot that cannot be written is refused before anything runs.
  const Result refused = runTide(simulateArgs(trace) + " --plot /nonexistent-dir/run.svg");
  EXPECT_EQ(refused.status, 2);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("--plot /nonexistent-dir/run.svg: cannot write"), std::string::npos)
      << refused.err;
}

TEST(TideSimulateCliTest, HelpListsCommandsAndOptions) {
  const Result top = runTide("--help");
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("simulate"), std::string::npos) << top.out;
  const Result simulate = runTide("simulate --help");
  EXPECT_EQ(simulate.status, 0);
  for (const char* option : {"--trace", "--grant-delay", "--until", "--properties-file", "--conf",
                             "dynamicAllocation.maxExecutors"}) {
    EXPECT_NE(simulate.out.find(option), std::string::npos) << option << "\n" << simulate.out;
  }
}

}  // namespace

// `tide tune` replays the trace under its grid and recommends from the frontier.
TEST(TideTuneCliTest, PrintsTheFrontierARecommendationAndAPlot) {
  tide::testing_support::TempDir dir;
  const std::string svg = (dir.path() / "frontier.svg").string();
  const Result result =
      runTide("tune --trace " + kExamples +
              "/bursts.jsonl --conf dynamicAllocation.maxExecutors=8 "
              "--conf dynamicAllocation.executorIdleTimeout=3s --grant-delay 400ms "
              "--weight-time 0.5 --svg " +
              svg);
  ASSERT_EQ(result.status, 0) << result.err;
  const std::vector<std::string> out = lines(result.out);
  ASSERT_GE(out.size(), 4u) << result.out;
  EXPECT_EQ(out[0].rfind("108 settings replayed on ", 0), 0u) << out[0];
  EXPECT_EQ(out[1], "job_time_s  executor_s  makespan_s  frontier  setting");
  // On three bursts of 40 s of work, the adaptive policy at 16 executors uses exactly the work
  // (120 executor-seconds) and is on the frontier; Spark's settings there cost far more.
  EXPECT_NE(result.out.find("      120.0  "), std::string::npos) << result.out;
  const std::string recommended = "recommended for --weight-time 0.50: ";
  const size_t at = result.out.find(recommended);
  ASSERT_NE(at, std::string::npos) << result.out;
  EXPECT_NE(result.out.find("--conf dynamicAllocation.policy=adaptive", at), std::string::npos)
      << result.out;
  std::ifstream plot(svg);
  std::ostringstream text;
  text << plot.rdbuf();
  EXPECT_EQ(text.str().rfind("<svg ", 0), 0u);
  EXPECT_NE(text.str().find("</svg>"), std::string::npos);
  EXPECT_NE(text.str().find("policy=adaptive"), std::string::npos);
}

TEST(TideTuneCliTest, BadInputExitsTwo) {
  EXPECT_EQ(runTide("tune").status, 2);  // no --trace
  const Result weight = runTide("tune --trace " + kExamples + "/bursts.jsonl --weight-time 1.5");
  EXPECT_EQ(weight.status, 2);
  EXPECT_NE(weight.err.find("--weight-time '1.5': expected a number between 0 and 1"),
            std::string::npos)
      << weight.err;
  EXPECT_EQ(
      runTide("tune --trace " + kExamples + "/bursts.jsonl --conf dynamicAllocation.policy=fast")
          .status,
      2);
}
