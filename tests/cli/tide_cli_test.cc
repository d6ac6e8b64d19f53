// The command line every tide binary shares, run as a user would: `--version` and `--help` on
// each binary (issue 14, item 9).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/support/temp_dir.h"
#include "tests/support/processes.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
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

TEST(TideRunConf, ABadValueOfAnyKnownKeyIsAnErrorNamingIt) {
  testing_support::TempDir dir;
  const std::string job = dir.writeFile("job.json", kNoopJob);
  auto result = tideRun(dir, {job, "--conf", "executor.failuresValidityInterval=soon"});
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("executor.failuresValidityInterval"));
  EXPECT_THAT(result.output, HasSubstr("soon"));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("starting an embedded cluster")));
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
