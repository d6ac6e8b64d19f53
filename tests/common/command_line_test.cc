#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/command_line.h"
#include "common/version.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_support::TempDir;

CommandLine runCommandLine() {
  CommandLine cli("tide run", "Runs a job on an embedded cluster.");
  cli.addOption("nodes", "N", "Number of local node managers");
  cli.addFlag("verbose", "Log at debug level");
  cli.addPositional("JOB", "The job description file");
  cli.addPositional("OUTPUT", "Where to write results", /*required=*/false);
  return cli;
}

// The message of the ConfigError parsing `args` throws; a test failure when it throws none.
std::string parseError(CommandLine& cli, const std::vector<std::string>& args) {
  return testing_support::expectedMessageOf<ConfigError>([&] { cli.parse(args); });
}

TEST(CommandLine, PrecedenceIsDefaultsThenFileThenConfInOrder) {
  TempDir dir;
  const std::string file = dir.writeFile("tide.conf",
                                         "dynamicAllocation.maxExecutors 10\n"
                                         "dynamicAllocation.minExecutors 2\n"
                                         "executor.cores 4\n");
  CommandLine cli = runCommandLine();
  // --conf comes before --properties-file on purpose: the file is still loaded first.
  ASSERT_TRUE(cli.parse({"--conf", "dynamicAllocation.maxExecutors=20", "job.json",
                         "--properties-file", file, "-c", "spark.dynamicAllocation.maxExecutors=30",
                         "--conf=executor.cores=8"}));
  const Properties& p = cli.properties();
  EXPECT_EQ(p.getInt("dynamicAllocation.maxExecutors"), 30);  // last --conf wins
  EXPECT_EQ(p.getInt("dynamicAllocation.minExecutors"), 2);   // from the file
  EXPECT_EQ(p.getInt("executor.cores"), 8);                   // --conf= form
  EXPECT_EQ(p.getInt("task.cpus"), 1);                        // default
  EXPECT_EQ(p.entry("dynamicAllocation.minExecutors")->origin.describe(), file + ":2");
  EXPECT_EQ(p.entry("executor.cores")->origin.describe(), "--conf");
  EXPECT_EQ(cli.propertiesFile(), file);
  EXPECT_THAT(cli.positionals(), ElementsAre("job.json"));
}

TEST(CommandLine, PropertiesFileEqualsForm) {
  TempDir dir;
  const std::string file = dir.writeFile("x.conf", "ui.port 0\n");
  CommandLine cli = runCommandLine();
  ASSERT_TRUE(cli.parse({"--properties-file=" + file, "job.json"}));
  EXPECT_EQ(cli.properties().getInt("ui.port"), 0);
}

TEST(CommandLine, DeclaredOptionsFlagsAndPositionals) {
  CommandLine cli = runCommandLine();
  ASSERT_TRUE(cli.parse({"--nodes", "3", "job.json", "--verbose", "out/"}));
  EXPECT_EQ(cli.option("nodes"), "3");
  EXPECT_TRUE(cli.flag("verbose"));
  EXPECT_EQ(cli.positional("JOB"), "job.json");
  EXPECT_EQ(cli.positional("OUTPUT"), "out/");

  ASSERT_TRUE(cli.parse({"--nodes=5", "job.json"}));
  EXPECT_EQ(cli.option("nodes"), "5");
  EXPECT_FALSE(cli.flag("verbose"));
  EXPECT_EQ(cli.positional("OUTPUT"), std::nullopt);
  EXPECT_THROW(cli.option("verbose"), std::logic_error);  // a flag, not an option
  EXPECT_THROW(cli.flag("undeclared"), std::logic_error);
}

TEST(CommandLine, ArgvFormSkipsProgramName) {
  CommandLine cli = runCommandLine();
  const char* argv[] = {"tide", "--conf", "executor.cores=2", "job.json"};
  ASSERT_TRUE(cli.parse(4, argv));
  EXPECT_EQ(cli.properties().getInt("executor.cores"), 2);
  EXPECT_THAT(cli.positionals(), ElementsAre("job.json"));
}

TEST(CommandLine, DoubleDashEndsOptions) {
  CommandLine cli("tide submit", "");
  cli.addPositional("JOB", "job");
  cli.allowExtraPositionals("ARG", "arguments for the job");
  ASSERT_TRUE(cli.parse({"job", "--", "--not-an-option", "-x"}));
  EXPECT_THAT(cli.positionals(), ElementsAre("job", "--not-an-option", "-x"));
}

TEST(CommandLine, UsageErrorsNameTheCulprit) {
  CommandLine cli = runCommandLine();
  EXPECT_EQ(parseError(cli, {"--conf", "executor.cores", "job"}),
            "--conf 'executor.cores' is not of the form key=value");
  EXPECT_EQ(parseError(cli, {"job", "--conf"}), "option --conf needs a value (key=value)");
  EXPECT_EQ(parseError(cli, {"job", "-c"}), "option -c needs a value (key=value)");
  EXPECT_EQ(parseError(cli, {"job", "--nodes"}), "option --nodes needs a value (N)");
  EXPECT_EQ(parseError(cli, {"job", "--properties-file"}),
            "option --properties-file needs a value (FILE)");
  EXPECT_THAT(parseError(cli, {"job", "--conf", "=5"}), HasSubstr("no key"));
  EXPECT_THAT(parseError(cli, {"job", "--conf", "executor.cores="}), HasSubstr("no value"));
  EXPECT_EQ(parseError(cli, {"--frobnicate", "job"}), "unknown option '--frobnicate' (see --help)");
  EXPECT_EQ(parseError(cli, {"--frobnicate=1", "job"}),
            "unknown option '--frobnicate' (see --help)");
  EXPECT_EQ(parseError(cli, {"-x", "job"}), "unknown option '-x' (see --help)");
  EXPECT_EQ(parseError(cli, {"--verbose=yes", "job"}), "flag --verbose does not take a value");
  EXPECT_EQ(parseError(cli, {}), "missing argument JOB (see --help)");
  EXPECT_EQ(parseError(cli, {"a", "b", "c"}), "unexpected argument 'c' (see --help)");
}

TEST(CommandLine, BadValuesAndFilesFailAtParse) {
  TempDir dir;
  CommandLine cli = runCommandLine();
  EXPECT_EQ(parseError(cli, {"job", "--conf", "executor.cores=many"}),
            "invalid value 'many' for executor.cores (--conf): expected an integer");
  const std::string missing = (dir.path() / "nope.conf").string();
  EXPECT_THAT(parseError(cli, {"job", "--properties-file", missing}), HasSubstr(missing));
  // Unknown keys are not errors: the binary logs unknownKeyWarnings().
  ASSERT_TRUE(cli.parse({"job", "--conf", "dynamicAllocation.maxExecutor=3"}));
  EXPECT_EQ(cli.properties().unknownKeyWarnings().size(), 1u);
}

TEST(CommandLine, HelpPrintsUsageAndReturnsFalse) {
  for (const char* help : {"--help", "-h"}) {
    CommandLine cli = runCommandLine();
    cli.showConfigKeys({"dynamicAllocation."});
    ::testing::internal::CaptureStdout();
    // --help wins even with other arguments missing or wrong after it.
    EXPECT_FALSE(cli.parse({help, "--frobnicate"}));
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_THAT(out, HasSubstr("Usage: tide run [OPTIONS] JOB [OUTPUT]"));
    EXPECT_THAT(out, HasSubstr("Runs a job on an embedded cluster."));
    EXPECT_THAT(out, HasSubstr("--nodes N"));
    EXPECT_THAT(out, HasSubstr("Number of local node managers"));
    EXPECT_THAT(out, HasSubstr("--properties-file FILE"));
    EXPECT_THAT(out, HasSubstr("-c, --conf KEY=VALUE"));
    EXPECT_THAT(out, HasSubstr("dynamicAllocation.executorIdleTimeout = 60s"));
    EXPECT_THAT(out, ::testing::Not(HasSubstr("nm.port")));
  }
}

TEST(CommandLine, VersionPrintsTheVersionLineAndReturnsFalse) {
  for (const char* version : {"--version", "-V"}) {
    CommandLine cli = runCommandLine();
    ::testing::internal::CaptureStdout();
    EXPECT_FALSE(cli.parse({version}));  // no JOB needed
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), versionLine("tide run") + "\n");
  }
  EXPECT_THAT(versionLine("tide-rm"),
              ::testing::StartsWith("tide-rm " + std::string(versionNumber()) + " (commit "));
  EXPECT_THAT(CommandLine("x", "").usage(), HasSubstr("-V, --version"));
}

TEST(CommandLine, UsageCanHideConfigKeys) {
  CommandLine cli = runCommandLine();
  cli.hideConfigKeys();
  EXPECT_THAT(cli.usage(), ::testing::Not(HasSubstr("Configuration keys")));
}

TEST(RunMain, MapsExceptionsToExitStatus) {
  EXPECT_EQ(runMain([] { return 0; }), 0);
  EXPECT_EQ(runMain([] { return 3; }), 3);

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runMain([]() -> int { throw ConfigError("bad key"); }), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "tide: error: bad key\n");

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runMain([]() -> int { throw std::runtime_error("disk full"); }, "tide-nm"), 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "tide-nm: disk full\n");
}

TEST(ParseAndRun, RunsTheBodyOnceParsedAndNotAfterHelp) {
  const auto run = [](std::vector<std::string> args, int* bodyRuns) {
    CommandLine cli = runCommandLine();
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    return parseAndRun(cli, static_cast<int>(argv.size()), argv.data(), [&] {
      ++*bodyRuns;
      return cli.positional("JOB") == "job.json" ? 7 : 1;
    });
  };
  int bodyRuns = 0;
  EXPECT_EQ(run({"tide-run", "job.json"}, &bodyRuns), 7);
  EXPECT_EQ(bodyRuns, 1);

  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run({"tide-run", "--help"}, &bodyRuns), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("Usage"));
  EXPECT_EQ(bodyRuns, 1);

  // A bad command line is a ConfigError from parse: exit status 2, the body never runs.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run({"tide-run", "--conf", "no-equals-sign", "job.json"}, &bodyRuns), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("tide: error: "));
  EXPECT_EQ(bodyRuns, 1);
}

}  // namespace
}  // namespace tide
