// `tide app list | status | kill` and `tide run --keep-alive` (issue 14, items 1 and 2), and how
// the commands that talk to tide-rm find it without --master: TIDE_MASTER, else the `tide run`
// running in the directory.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/child_process.h"
#include "common/config.h"
#include "deploy/master_location.h"
#include "rest/json.h"
#include "tests/support/polling.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using deploy::EmbeddedClusterPointer;
using deploy::MasterLocation;
using deploy::resolveMaster;
using ::testing::HasSubstr;
using ::testing::Not;

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A pid that is certainly not running: a child that has exited and been reaped.
pid_t deadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

std::string pointerJson(const std::string& master, const std::string& secretFile, int64_t pid) {
  rest::JsonWriter w;
  w.startObject()
      .field("master", master)
      .field("secretFile", secretFile)
      .field("pid", pid)
      .endObject();
  return w.str();
}

TEST(MasterLocation, TheOptionComesFirstThenTideMasterThenALiveTideRunHereThenTheDefault) {
  testing_support::TempDir dir;
  const std::string here = dir.path().string();
  unsetenv("TIDE_MASTER");
  EXPECT_EQ(resolveMaster(std::nullopt, here).url, deploy::kDefaultMaster);

  std::filesystem::create_directories(dir.path() / ".tide");
  dir.writeFile(".tide/embedded-cluster",
                pointerJson("http://127.0.0.1:4711", "/x/rm.secret", getpid()));
  const MasterLocation fromRun = resolveMaster(std::nullopt, here);
  EXPECT_EQ(fromRun.url, "http://127.0.0.1:4711");
  EXPECT_EQ(fromRun.secretFile, std::optional<std::string>("/x/rm.secret"));
  EXPECT_THAT(fromRun.origin, HasSubstr("pid " + std::to_string(getpid())));
  {
    ScopedEnv env("TIDE_MASTER", "https://10.0.0.1:8088");
    const MasterLocation fromEnv = resolveMaster(std::nullopt, here);
    EXPECT_EQ(fromEnv.url, "https://10.0.0.1:8088");
    EXPECT_EQ(fromEnv.secretFile, std::nullopt);
    EXPECT_EQ(resolveMaster(std::string("http://127.0.0.1:1"), here).url, "http://127.0.0.1:1");
  }
}

TEST(MasterLocation, APointerLeftByATideRunThatDiedIsIgnored) {
  testing_support::TempDir dir;
  unsetenv("TIDE_MASTER");
  std::filesystem::create_directories(dir.path() / ".tide");
  dir.writeFile(".tide/embedded-cluster",
                pointerJson("http://127.0.0.1:4711", "/x/rm.secret", deadPid()));
  const MasterLocation location = resolveMaster(std::nullopt, dir.path().string());
  EXPECT_EQ(location.url, deploy::kDefaultMaster);
  EXPECT_EQ(location.secretFile, std::nullopt);
}

TEST(MasterLocation, ABadAddressIsAnErrorNamingWhereItCameFrom) {
  ScopedEnv env("TIDE_MASTER", "localhost:8088");
  try {
    resolveMaster(std::nullopt, ".");
    FAIL() << "accepted a master without a scheme";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("TIDE_MASTER localhost:8088: expected http://"));
  }
}

TEST(MasterLocation, TheRunsSecretIsUsedOnlyWhenNoCredentialWasGiven) {
  const MasterLocation fromRun{"http://127.0.0.1:4711", std::string("/run/rm.secret"), "run"};
  unsetenv("TIDE_RM_TOKEN");
  Properties none;
  deploy::useMasterCredentials(fromRun, none);
  EXPECT_EQ(none.getString("rm.secretFile"), "/run/rm.secret");

  Properties explicitSecret;
  explicitSecret.set("rm.secretFile", "/mine/rm.secret");
  deploy::useMasterCredentials(fromRun, explicitSecret);
  EXPECT_EQ(explicitSecret.getString("rm.secretFile"), "/mine/rm.secret");

  ScopedEnv token("TIDE_RM_TOKEN", "t0ken");
  Properties withToken;
  deploy::useMasterCredentials(fromRun, withToken);
  EXPECT_FALSE(withToken.has("rm.secretFile"));
}

TEST(EmbeddedClusterPointer, IsThereWhileItLivesAndGoneAfterUnlessAnotherRunReplacedIt) {
  testing_support::TempDir dir;
  const std::filesystem::path file = dir.path() / deploy::kEmbeddedClusterFile;
  std::ostringstream warnings;
  {
    const EmbeddedClusterPointer pointer(dir.path().string(), "http://127.0.0.1:4711",
                                         "/x/rm.secret", warnings);
    ASSERT_TRUE(std::filesystem::exists(file));
    // Only its owner may read it: it says where the cluster secret is.
    EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    EXPECT_EQ(resolveMaster(std::nullopt, dir.path().string()).url, "http://127.0.0.1:4711");
  }
  EXPECT_FALSE(std::filesystem::exists(file));
  {
    const EmbeddedClusterPointer pointer(dir.path().string(), "http://127.0.0.1:4711",
                                         "/x/rm.secret", warnings);
    // A later `tide run` here (another pid) wrote its own: that one stays.
    std::ofstream(file) << pointerJson("http://127.0.0.1:4712", "/y/rm.secret", getppid());
  }
  EXPECT_TRUE(std::filesystem::exists(file));
  EXPECT_EQ(warnings.str(), "");
}

// ---- With real processes: a `tide run` in a directory, and the commands run in it.

// `argv` run in `dir` (as a user who has cd'd there), through sh.
std::vector<std::string> inDirectory(const std::filesystem::path& dir,
                                     const std::vector<std::string>& argv) {
  auto quote = [](const std::string& word) {
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  std::string command = "cd " + quote(dir.string()) + " && exec";
  for (const std::string& word : argv) command += " " + quote(word);
  return {"/bin/sh", "-c", command};
}

std::string tide() {
  return std::string(TIDE_BIN_DIR) + "/tide";
}

class TideRunInADirectory : public ::testing::Test {
 protected:
  // Starts `tide run JOB args...` in the test's directory with a small node.
  void startRun(const std::string& jobJson, std::vector<std::string> args) {
    const std::string job = dir_.writeFile("job.json", jobJson);
    std::vector<std::string> argv = {tide(), "run", job, "--report", reportFile()};
    for (const char* conf : {"nm.cores=2", "nm.memory=2g", "executor.memory=256m", "am.memory=256m",
                             "dynamicAllocation.schedulerBacklogTimeout=200ms"}) {
      argv.push_back("--conf");
      argv.push_back(conf);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    ChildSpec spec;
    spec.argv = inDirectory(dir_.path(), argv);
    spec.logPath = (dir_.path() / "tide-run.log").string();
    run_ = std::make_unique<ChildProcess>(spec);
  }

  // A tide command run in the directory, to its end.
  testing_support::CommandResult here(std::vector<std::string> args) {
    args.insert(args.begin(), tide());
    return testing_support::runCommand(
        inDirectory(dir_.path(), args),
        (dir_.path() / ("cmd-" + std::to_string(++commands_) + ".log")).string(), 60s);
  }

  // The id of the run's application once `tide app list` here shows it RUNNING.
  std::string runningApplication() {
    std::string id;
    const bool found = testing_support::eventually(
        [&] {
          const auto list = here({"app", "list", "--state", "running", "--json"});
          if (list.status != 0) return false;
          const std::regex app("\"id\":\"(application_[0-9_]+)\"");
          std::smatch match;
          if (!std::regex_search(list.output, match, app)) return false;
          id = match[1].str();
          return true;
        },
        60s, 200ms);
    EXPECT_TRUE(found) << runLog();
    return id;
  }

  std::string runLog() const {
    std::ifstream in(dir_.path() / "tide-run.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string reportFile() const { return (dir_.path() / "report.json").string(); }

  testing_support::TempDir dir_;
  std::unique_ptr<ChildProcess> run_;
  int commands_ = 0;
};

constexpr char kSleepingJob[] = R"({"name": "sleeper", "stages": [
    {"id": "s", "tasks": 2, "command": ["sleep", "120"]}]})";

TEST_F(TideRunInADirectory, AppListsShowsAndKillsTheApplicationOfTheTideRunHere) {
  unsetenv("TIDE_MASTER");
  startRun(kSleepingJob, {});
  const std::string id = runningApplication();
  ASSERT_FALSE(id.empty());

  const auto table = here({"app", "list"});
  ASSERT_EQ(table.status, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("Total applications: 1 at http://127.0.0.1:"));
  EXPECT_TRUE(
      std::regex_search(table.output, std::regex(id + " +sleeper +RUNNING +UNDEFINED +default")))
      << table.output;
  const auto finished = here({"app", "list", "--state", "FINISHED,KILLED"});
  EXPECT_THAT(finished.output, HasSubstr("Total applications: 0 at "));

  const auto report = here({"app", "status", id});
  ASSERT_EQ(report.status, 0) << report.output;
  EXPECT_THAT(report.output, HasSubstr("Application-Id      : " + id + "\n"));
  EXPECT_THAT(report.output, HasSubstr("State               : RUNNING\n"));
  EXPECT_TRUE(std::regex_search(report.output,
                                std::regex("Tracking-URL +: http://127\\.0\\.0\\.1:[0-9]+/\n")))
      << report.output;
  // `tide status APP` here needs no --master either.
  const auto status = here({"status", id});
  EXPECT_EQ(status.status, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr("job        job-1 sleeper  RUNNING"));

  const auto unknown = here({"app", "status", "application_1_0099"});
  EXPECT_EQ(unknown.status, 1) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("application_1_0099"));

  const auto kill = here({"app", "kill", id});
  ASSERT_EQ(kill.status, 0) << kill.output;
  EXPECT_THAT(kill.output, HasSubstr("Killed " + id + ": KILLED (KILLED)\n"));
  // The run follows its application to the end and says so; its pointer goes with it.
  const auto exit = run_->waitFor(60s);
  ASSERT_TRUE(exit.has_value()) << runLog();
  EXPECT_NE(*exit, 0);
  EXPECT_THAT(runLog(), HasSubstr("tide: " + id + " KILLED (KILLED)"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / deploy::kEmbeddedClusterFile));
  EXPECT_EQ(testing_support::processesUnder(dir_.path()), std::vector<pid_t>{});
}

TEST_F(TideRunInADirectory, KeepAliveShowsTheExecutorsIdlingAwayThenEndsWithTheJobsStatus) {
  unsetenv("TIDE_MASTER");
  startRun(R"({"name": "brief", "stages": [{"id": "s", "tasks": 4, "builtin": "noop"}]})",
           {"--keep-alive", "20s", "--conf", "dynamicAllocation.executorIdleTimeout=1s"});
  const std::string id = runningApplication();
  ASSERT_FALSE(id.empty());
  // While the AM stays up after the job, every executor it launched times out and goes.
  bool listedTheJob = false;
  bool idledAway = false;
  std::string last;
  testing_support::eventually(
      [&] {
        last.clear();
        const auto status = here({"status", id, "--json"});
        if (status.status != 0) return false;
        // Its stdout is the JSON; its stderr (mixed in here) the page's address, a line apart.
        std::istringstream lines(status.output);
        for (std::string line; std::getline(lines, line);) {
          if (line.rfind("{", 0) == 0) last = line;
        }
        if (last.empty()) return false;
        const auto json = rest::parseJson(last);
        // Until the AM has taken the job, its status lists none: no jobs[0] to read yet.
        if (!json.IsObject()) return false;
        const auto jobs = json.FindMember("jobs");
        if (jobs == json.MemberEnd() || !jobs->value.IsArray() || jobs->value.Empty()) {
          return false;
        }
        listedTheJob = true;
        const auto& allocation = json["allocation"];
        idledAway = jobs->value[0]["state"] == "SUCCEEDED" &&
                    allocation["launched"].GetInt() >= 1 && allocation["live"].GetInt() == 0;
        return idledAway;
      },
      20s, 250ms);
  ASSERT_TRUE(listedTheJob) << "the status never listed the job: " << last;
  EXPECT_TRUE(idledAway) << last;
  const auto exit = run_->waitFor(60s);
  ASSERT_TRUE(exit.has_value()) << runLog();
  EXPECT_EQ(*exit, 0) << runLog();
  EXPECT_THAT(runLog(), HasSubstr("tide: " + id + " FINISHED (SUCCEEDED)"));
  // The summary comes from the AM's report, written before the application ended.
  EXPECT_THAT(runLog(), HasSubstr("executor-seconds in "));
  EXPECT_THAT(runLog(), Not(HasSubstr("as last seen")));
}

TEST(TideRunKeepAlive, ABadDurationIsAnErrorBeforeAnythingStarts) {
  testing_support::TempDir dir;
  const std::string job = dir.writeFile(
      "job.json", R"({"name": "n", "stages": [{"id": "s", "tasks": 1, "builtin": "noop"}]})");
  const auto result = testing_support::runCommand({tide(), "run", job, "--keep-alive", "soon"},
                                                  (dir.path() / "out.log").string(), 30s);
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("am.keepAlive"));
  EXPECT_THAT(result.output, HasSubstr("soon"));
  EXPECT_THAT(result.output, Not(HasSubstr("starting an embedded cluster")));
}

}  // namespace
}  // namespace tide
