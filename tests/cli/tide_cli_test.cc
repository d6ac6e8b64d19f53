// The command line every tide binary shares, run as a user would: `--version` and `--help` on
// each binary (issue 14, item 9).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "deploy/am_submission.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using deploy::SummarySources;
using ::testing::HasSubstr;
using ::testing::StartsWith;

testing_support::CommandResult run(const testing_support::TempDir& dir,
                                   std::vector<std::string> argv) {
  argv[0] = std::string(TIDE_BIN_DIR) + "/" + argv[0];
  return testing_support::runCommand(argv, (dir.path() / "out.log").string(), 60s);
}

// Each binary as its usage line names it, and the arguments that reach its CommandLine.
struct Binary {
  std::vector<std::string> argv;
  std::string program;
};
const std::vector<Binary> kBinaries = {
    {{"tide"}, "tide"},
    {{"tide", "run"}, "tide run"},
    {{"tide", "submit"}, "tide submit"},
    {{"tide", "status"}, "tide status"},
    {{"tide", "app"}, "tide app"},
    {{"tide", "app", "list"}, "tide app list"},
    {{"tide", "app", "kill"}, "tide app kill"},
    {{"tide", "simulate"}, "tide simulate"},
    {{"tide-rm"}, "tide-rm"},
    {{"tide-nm"}, "tide-nm"},
    {{"tide-am"}, "tide-am"},
    {{"tide-executor"}, "tide-executor"},
};

std::vector<std::string> with(std::vector<std::string> argv, const std::string& arg) {
  argv.push_back(arg);
  return argv;
}

TEST(TideCli, EveryBinaryPrintsItsVersionCommitAndBuildType) {
  const std::regex line("(tide[-a-z ]*) " + std::string(TIDE_PROJECT_VERSION) +
                        " \\(commit ([0-9a-f]{12}|unknown), " + TIDE_BUILD_TYPE + "\\)\n");
  for (const Binary& binary : kBinaries) {
    for (const char* flag : {"--version", "-V"}) {
      testing_support::TempDir dir;
      auto result = run(dir, with(binary.argv, flag));
      EXPECT_EQ(result.status, 0) << binary.program << " " << flag << ": " << result.output;
      std::smatch match;
      ASSERT_TRUE(std::regex_match(result.output, match, line))
          << binary.program << " " << flag << " printed: " << result.output;
      EXPECT_EQ(match[1].str(), binary.program);
    }
  }
}

TEST(TideCli, EveryBinaryHasTheSameHelpLayout) {
  for (const Binary& binary : kBinaries) {
    for (const char* flag : {"--help", "-h"}) {
      testing_support::TempDir dir;
      auto result = run(dir, with(binary.argv, flag));
      EXPECT_EQ(result.status, 0) << binary.program << " " << flag;
      const std::string& out = result.output;
      EXPECT_THAT(out, StartsWith("Usage: " + binary.program + " ")) << out;
      EXPECT_THAT(out, HasSubstr("\nOptions:\n")) << binary.program;
      EXPECT_THAT(out, HasSubstr("  -h, --help  ")) << binary.program;
      EXPECT_THAT(out, HasSubstr("  -V, --version  ")) << binary.program;
    }
  }
}

TEST(TideCli, AnUnknownOptionIsAnErrorNamingItWithExitStatus2) {
  for (const Binary& binary : kBinaries) {
    testing_support::TempDir dir;
    auto result = run(dir, with(binary.argv, "--no-such-option"));
    EXPECT_EQ(result.status, 2) << binary.program << ": " << result.output;
    EXPECT_THAT(result.output, StartsWith(binary.program + ": error: ")) << result.output;
    EXPECT_THAT(result.output, HasSubstr("'--no-such-option'")) << result.output;
    EXPECT_THAT(result.output, HasSubstr("--help")) << result.output;
  }
}

// tide-container parses its few options itself (it starts before every command task, so it links
// nothing it does not need), and still answers --help as the others do.
TEST(TideCli, TheContainerSupervisorAnswersHelpAndNamesAnUnknownOption) {
  for (const char* flag : {"--help", "-h"}) {
    testing_support::TempDir dir;
    auto result = run(dir, {"tide-container", flag});
    EXPECT_EQ(result.status, 0) << flag << ": " << result.output;
    EXPECT_THAT(result.output, StartsWith("Usage: tide-container ")) << result.output;
    EXPECT_THAT(result.output, HasSubstr("\nOptions:\n")) << result.output;
    EXPECT_THAT(result.output, HasSubstr("  -h, --help  ")) << result.output;
  }
  testing_support::TempDir dir;
  auto result = run(dir, {"tide-container", "--no-such-option", "--", "true"});
  EXPECT_EQ(result.status, 125) << result.output;  // its bad-usage status (container_main.cc)
  EXPECT_THAT(result.output, HasSubstr("unknown option '--no-such-option'")) << result.output;
}

// `tide run` with the small node the integration tests use.
testing_support::CommandResult tideRun(const testing_support::TempDir& dir,
                                       std::vector<std::string> args) {
  std::vector<std::string> argv = {"tide", "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const char* conf : {"nm.cores=2", "nm.memory=2g", "executor.memory=256m", "am.memory=256m",
                           "dynamicAllocation.schedulerBacklogTimeout=200ms"}) {
    argv.push_back("--conf");
    argv.push_back(conf);
  }
  argv[0] = std::string(TIDE_BIN_DIR) + "/tide";
  return testing_support::runCommand(argv, (dir.path() / "tide-run.log").string(), 120s);
}

constexpr char kNoopJob[] = R"({"name": "noop", "stages": [
    {"id": "s", "tasks": 2, "builtin": "noop"}]})";

TEST(TideRun, AnnouncesThePageThenEndsWithASummary) {
  testing_support::TempDir dir;
  const std::string job = dir.writeFile("job.json", R"({"name": "out", "output": "results",
      "stages": [{"id": "s", "tasks": 3, "command": ["sh", "-c", "echo {task} > $TIDE_OUTPUT_DIR/part-0"]}]})");
  const std::string work = (dir.path() / "work").string();
  auto result = tideRun(dir, {job, "--work-dir", work});
  ASSERT_EQ(result.status, 0) << result.output;
  const std::string& out = result.output;
  const std::regex page(
      "tide: submitted (application_[0-9_]+) \\(out\\)\n"
      "tide: status page http://127\\.0\\.0\\.1:[0-9]+/\\?token=\\S+\n");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(out, match, page)) << out;
  const std::string appId = match[1].str();
  EXPECT_THAT(out, HasSubstr("tide: " + appId +
                             " FINISHED (SUCCEEDED)\n"
                             "  final status  SUCCEEDED\n"
                             "  tasks         3 succeeded, 0 failed attempts\n"
                             "  executors     peak "));
  EXPECT_TRUE(std::regex_search(out, std::regex("  executors     peak [1-9][0-9]*, launched "
                                                "[1-9][0-9]*, [0-9]+\\.[0-9] executor-seconds "
                                                "in [0-9]+\\.[0-9] s\n")))
      << out;
  EXPECT_THAT(out, HasSubstr("  output        " + (dir.path() / "results").string() + "\n"));
  const std::string kept = (std::filesystem::current_path() / ".tide" / "logs" / appId).string();
  EXPECT_THAT(out, HasSubstr("  logs          `tide logs " + appId +
                             "` in this directory (kept in " + kept + ")\n"));
  // What it points to is there.
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "results" / "part-2"));
  EXPECT_TRUE(std::filesystem::is_directory(kept)) << out;
  // The page comes before the summary.
  EXPECT_LT(out.find("status page"), out.find("final status"));
}

TEST(RunSummary, FallsBackToTheLastStatusSeenWithoutAReport) {
  rest::ApplicationReport report;
  report.finalStatus = "KILLED";
  SummarySources sources;
  sources.lastStatusJson = R"({"allocation": {"peak": 4, "launched": 6},
                               "tasks": {"succeeded": 12, "failed": 1}})";
  sources.logs = "somewhere";
  EXPECT_EQ(deploy::formatRunSummary(report, sources),
            "  final status  KILLED\n"
            "  tasks         12 succeeded, 1 failed attempts (as last seen)\n"
            "  executors     peak 4, launched 6 (as last seen)\n"
            "  logs          somewhere\n");
  sources.amReportJson = R"({"status": "KILLED", "tasks": {"succeeded": 13, "failed": 1},
      "executors": {"peak": 4, "launched": 6}, "executor_seconds": 21.26, "duration_seconds": 9})";
  EXPECT_THAT(deploy::formatRunSummary(report, sources),
              HasSubstr("  tasks         13 succeeded, 1 failed attempts\n"
                        "  executors     peak 4, launched 6, 21.3 executor-seconds in 9.0 s\n"));
}

TEST(TideRunConf, AnUnknownKeyIsAWarningWithTheNearestKnownOneAndTheJobRuns) {
  testing_support::TempDir dir;
  const std::string job = dir.writeFile("job.json", kNoopJob);
  const std::string conf = dir.writeFile("tide.conf", "executor.core 1\n");
  auto result =
      tideRun(dir, {job, "--properties-file", conf, "--conf", "dynamicAllocation.maxExecutor=4"});
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("tide: warning: unknown key 'dynamicAllocation.maxExecutor' (--conf); did "
                        "you mean 'dynamicAllocation.maxExecutors'?"));
  EXPECT_THAT(result.output, HasSubstr("tide: warning: unknown key 'executor.core' (" + conf +
                                       ":1); did you mean 'executor.cores'?"));
  // Before anything starts.
  EXPECT_LT(result.output.find("unknown key"), result.output.find("starting an embedded cluster"));
}

TEST(TideRunConf, StrictConfMakesWarningsErrorsBeforeAnythingStarts) {
  testing_support::TempDir dir;
  const std::string job = dir.writeFile("job.json", kNoopJob);
  auto result = tideRun(dir, {job, "--strict-conf", "--conf", "dynamicAllocation.maxExecutor=4"});
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("tide run: error: configuration warnings are errors with "
                                       "--strict-conf:\n  unknown key "
                                       "'dynamicAllocation.maxExecutor' (--conf); did you mean "
                                       "'dynamicAllocation.maxExecutors'?"));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("starting an embedded cluster")));
}

// A value that is not of its key's kind, or (docs/configuration.md) outside its key's range, is
// refused before anything starts, naming the key, the value and what is wrong with it.
TEST(TideRunConf, ABadValueOfAnyKnownKeyIsAnErrorNamingIt) {
  const std::pair<const char*, const char*> kBadValues[] = {
      {"executor.failuresValidityInterval=soon",
       "invalid value 'soon' for executor.failuresValidityInterval (--conf): expected a duration"},
      {"task.cpus=0", "invalid value '0' for task.cpus (--conf): must be between 1 and 1000000"},
  };
  for (const auto& [conf, error] : kBadValues) {
    testing_support::TempDir dir;
    const std::string job = dir.writeFile("job.json", kNoopJob);
    auto result = tideRun(dir, {job, "--conf", conf});
    EXPECT_EQ(result.status, 2) << result.output;
    EXPECT_THAT(result.output, HasSubstr(error));
    EXPECT_THAT(result.output, ::testing::Not(HasSubstr("starting an embedded cluster")));
  }
}

TEST(TideSubmitConf, WarnsBeforeSubmittingAndStrictConfRefuses) {
  testing_support::TempDir dir;
  const std::string job = dir.writeFile("job.json", kNoopJob);
  // Nothing listens on port 1: the submission itself fails, after the local checks.
  auto result = run(dir, {"tide", "submit", "--master", "http://127.0.0.1:1", job, "--conf",
                          "spark.dynamicAllocation.minExecutor=1"});
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("tide: warning: unknown key "
                                       "'spark.dynamicAllocation.minExecutor' (--conf); did you "
                                       "mean 'dynamicAllocation.minExecutors'?"));
  EXPECT_LT(result.output.find("unknown key"), result.output.find("tide submit: "));

  testing_support::TempDir strictDir;
  auto strict =
      run(strictDir, {"tide", "submit", "--master", "http://127.0.0.1:1", job, "--strict-conf",
                      "--conf", "spark.dynamicAllocation.minExecutor=1"});
  EXPECT_EQ(strict.status, 2) << strict.output;
  EXPECT_THAT(strict.output, HasSubstr("tide submit: error: configuration warnings are errors"));
}

}  // namespace
}  // namespace tide
