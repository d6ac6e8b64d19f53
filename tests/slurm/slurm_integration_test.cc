// The Slurm backend end to end (issue 7's "must show"), against a real Slurm with slurmrestd:
// deploy/slurm/local-slurm start, then TIDE_SLURM_URL and TIDE_SLURM_TOKEN_FILE (or SLURM_JWT)
// from `local-slurm env`. Without a reachable slurmrestd the tests skip, unless
// TIDE_REQUIRE_SLURM=1 (as .ci/run sets): then they fail. The AM runs as a child process of the
// test (its executors are Slurm jobs), or itself as a Slurm job through `tide submit`. Every
// wait is bounded.

#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "am/slurm/rest_client.h"
#include "am/slurm/slurm_client.h"
#include "common/child_process.h"
#include "deploy/slurm_submission.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "tests/support/files.h"
#include "tests/support/jobs.h"
#include "tests/support/polling.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;
using testing_support::readFile;

std::string env(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

struct QueuedJob {
  int64_t id = 0;
  std::string name;
  std::string state;
};

class SlurmIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    connection.url = env("TIDE_SLURM_URL", "http://127.0.0.1:6820");
    connection.tokenFile = env("TIDE_SLURM_TOKEN_FILE", "");
    slurm = std::make_unique<am::SlurmRestClient>(connection, [](const std::string&) {});
    try {
      slurm->ping();
    } catch (const std::exception& e) {
      if (env("TIDE_REQUIRE_SLURM", "") == "1") {
        FAIL() << "TIDE_REQUIRE_SLURM=1 but Slurm is not reachable: " << e.what();
      }
      GTEST_SKIP() << "no Slurm here (" << e.what()
                   << "); start one with deploy/slurm/local-slurm start";
    }
    static int counter = 0;
    applicationId = "it" + std::to_string(::getpid()) + "x" + std::to_string(++counter);
  }

  void TearDown() override {
    if (am) am->stop(10s);
    if (slurm && !applicationId.empty()) {
      // Nothing of ours may be left, whatever happened above.
      for (const auto& job : ourJobs()) {
        if (job.state == "PENDING" || job.state == "RUNNING") {
          ADD_FAILURE() << "left in the queue: " << job.jobId << " " << job.name << " "
                        << job.state;
          slurm->cancel(job.jobId);
        }
      }
    }
  }

  std::string executorPrefix() const {
    return am::slurmExecutorJobNamePrefix("tide", applicationId);
  }

  // Our executor jobs as Slurm lists them (ended ones too, for MinJobAge).
  std::vector<am::SlurmJob> ourJobs() {
    std::vector<am::SlurmJob> ours;
    for (auto& job : slurm->jobs()) {
      if (job.name.rfind(executorPrefix(), 0) == 0) ours.push_back(std::move(job));
    }
    return ours;
  }

  // What `squeue` shows of our executor jobs (pending, running, completing).
  std::vector<QueuedJob> squeue() {
    std::vector<QueuedJob> queued;
    if (!std::filesystem::exists("/usr/bin/squeue")) {
      for (const auto& job : ourJobs()) {
        if (job.phase() != am::SlurmJobPhase::kEnded)
          queued.push_back({job.jobId, job.name, job.state});
      }
      return queued;
    }
    const std::string out = (dir.path() / "squeue.out").string();
    std::filesystem::remove(out);  // runCommand appends
    auto result =
        testing_support::runCommand({"/usr/bin/squeue", "-h", "-o", "%i|%j|%T"}, out, 10s);
    std::stringstream lines(result.output);
    std::string line;
    while (std::getline(lines, line)) {
      const auto first = line.find('|');
      const auto second = line.rfind('|');
      if (first == std::string::npos || first == second) continue;
      QueuedJob job{std::stoll(line.substr(0, first)), line.substr(first + 1, second - first - 1),
                    line.substr(second + 1)};
      if (job.name.rfind(executorPrefix(), 0) == 0) queued.push_back(job);
    }
    return queued;
  }

  std::vector<std::pair<std::string, std::string>> amConf(
      std::vector<std::pair<std::string, std::string>> conf) {
    conf.insert(conf.begin(), {{"am.resourceManager", "slurm"},
                               {"slurm.url", connection.url},
                               {"slurm.workDir", (dir.path() / "work").string()},
                               {"ui.port", "0"},
                               {"am.heartbeatInterval", "1s"},
                               {"network.timeout", "30s"},
                               {"dynamicAllocation.schedulerBacklogTimeout", "200ms"}});
    if (!connection.tokenFile.empty()) conf.emplace_back("slurm.tokenFile", connection.tokenFile);
    return conf;
  }

  // Starts tide-am as a child with the job; returns once its status API answers.
  void startAm(const std::string& jobJson, std::vector<std::pair<std::string, std::string>> conf,
               bool session) {
    ChildSpec spec;
    spec.argv = {std::string(TIDE_BIN_DIR) + "/tide-am", "--job",
                 dir.writeFile("job.json", jobJson)};
    if (session) spec.argv.push_back("--session");
    for (const auto& [key, value] : amConf(std::move(conf))) {
      spec.argv.push_back("--conf");
      spec.argv.push_back(key + "=" + value);
    }
    spec.environment = {{"TIDE_APPLICATION_ID", applicationId},
                        {"TIDE_APP_SECRET", "secret-" + applicationId}};
    amLog = (dir.path() / "am.log").string();
    spec.logPath = amLog;
    am = std::make_unique<ChildProcess>(spec);
  }

  // The AM's status URL, from its log ("status at http://127.0.0.1:PORT/").
  bool connectToAm() {
    const std::regex statusLine(R"(status at (http://[0-9.]+:[0-9]+)/)");
    return eventually(
        [&] {
          std::smatch match;
          const std::string log = readFile(amLog);
          if (!std::regex_search(log, match, statusLine)) return false;
          amApi = std::make_unique<rest::HttpClient>(match[1].str());
          return true;
        },
        20s);
  }

  rapidjson::Document status() { return amApi->getJson("api/v1/status"); }
  std::string jobState(const std::string& jobId) {
    return amApi->getJson("api/v1/jobs/" + jobId)["state"].GetString();
  }

  int64_t nodeMemoryMiB() {
    rest::HttpClient http(connection.url);
    am::SlurmToken token(connection.tokenFile);
    rest::HttpHeaders headers;
    if (auto jwt = token.current()) {
      headers = {{"X-SLURM-USER-NAME", am::currentUserName()}, {"X-SLURM-USER-TOKEN", *jwt}};
    }
    auto response = http.request("GET", connection.api.base() + "/nodes", "", headers);
    auto doc = rest::parseJson(response.body);
    return doc["nodes"][0]["real_memory"].GetInt64();
  }

  testing_support::TempDir dir;
  am::SlurmConnection connection;
  std::unique_ptr<am::SlurmRestClient> slurm;
  std::string applicationId;
  std::unique_ptr<ChildProcess> am;
  std::string amLog;
  std::unique_ptr<rest::HttpClient> amApi;
};

TEST_F(SlurmIntegrationTest, ExecutorsAreSlurmJobsThatComeAndGoWithTheWork) {
  startAm(testing_support::sleepJob("hundred", 100, 300),
          {{"dynamicAllocation.minExecutors", "0"},
           {"dynamicAllocation.maxExecutors", "4"},
           {"dynamicAllocation.executorIdleTimeout", "3s"},
           {"executor.memory", "256m"}},
          /*session=*/true);
  ASSERT_TRUE(connectToAm()) << readFile(amLog);

  // squeue shows the executor jobs while the job runs.
  size_t mostRunning = 0;
  ASSERT_TRUE(eventually(
      [&] {
        size_t running = 0;
        for (const auto& job : squeue()) running += job.state == "RUNNING" ? 1 : 0;
        mostRunning = std::max(mostRunning, running);
        return running >= 2;
      },
      60s))
      << readFile(amLog);

  ASSERT_TRUE(eventually([&] { return jobState("job-1") != "RUNNING"; }, 120s)) << readFile(amLog);
  const auto jobDone = std::chrono::steady_clock::now();
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  auto s = status();
  EXPECT_EQ(s["tasks"]["succeeded"].GetInt64(), 100);
  EXPECT_EQ(s["tasks"]["failed"].GetInt64(), 0);
  EXPECT_LE(s["allocation"]["peak"].GetInt(), 4);

  // Idle timeout 3s: the jobs are cancelled, and squeue shows none of them.
  EXPECT_TRUE(eventually([&] { return squeue().empty(); }, 25s))
      << "executor jobs still queued "
      << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               jobDone)
             .count()
      << "ms after the job";
  EXPECT_EQ(status()["allocation"]["live"].GetInt(), 0);
  // Every executor job ended cancelled by the AM (idle) or done: none failed.
  for (const auto& job : ourJobs()) {
    EXPECT_THAT(job.state, ::testing::AnyOf("CANCELLED", "COMPLETED")) << job.name;
  }

  EXPECT_TRUE(am->signal(SIGTERM));
  EXPECT_TRUE(am->waitFor(30s).has_value());
  EXPECT_THAT(readFile(amLog), HasSubstr("finished: KILLED"));
  EXPECT_TRUE(squeue().empty());
}

TEST_F(SlurmIntegrationTest, TheAmItselfRunsAsASlurmJobAndReportsSucceeded) {
  // `tide submit --master slurm+URL --wait`: the AM is a Slurm job too, and asks the same
  // slurmrestd for its executors.
  std::vector<std::string> argv = {
      std::string(TIDE_BIN_DIR) + "/tide",
      "submit",
      "--master",
      "slurm+" + connection.url,
      "--wait",
      dir.writeFile("job.json", testing_support::sleepJob("small", 20, 300))};
  for (const auto& [key, value] : amConf({{"dynamicAllocation.maxExecutors", "2"},
                                          {"executor.memory", "256m"},
                                          {"am.memory", "256m"}})) {
    if (key == "am.resourceManager" || key == "slurm.url") continue;  // from --master
    argv.push_back("--conf");
    argv.push_back(key + "=" + value);
  }
  ChildSpec spec;
  spec.argv = argv;
  spec.logPath = (dir.path() / "submit.log").string();
  ChildProcess submit(spec);

  // The application id is printed first; the AM's job gets its status URL as its comment.
  int64_t amJob = 0;
  ASSERT_TRUE(eventually(
      [&] {
        std::smatch match;
        const std::string out = readFile(spec.logPath);
        static const std::regex id(R"(slurm-([0-9]+))");
        if (!std::regex_search(out, match, id)) return false;
        amJob = std::stoll(match[1].str());
        return true;
      },
      30s))
      << readFile(spec.logPath);
  applicationId = slurmApplicationId(amJob);
  std::optional<std::string> url;
  EXPECT_TRUE(eventually(
      [&] {
        url = slurmTrackingUrl(amJob, connection);
        return url.has_value();
      },
      60s));
  if (url) {
    EXPECT_THAT(*url, ::testing::StartsWith("http://127.0.0.1:"));
  }

  const auto exit = submit.waitFor(180s);
  ASSERT_TRUE(exit.has_value()) << readFile(spec.logPath);
  EXPECT_EQ(*exit, 0) << readFile(spec.logPath);
  EXPECT_THAT(readFile(spec.logPath), HasSubstr("COMPLETED (exit 0): SUCCEEDED"));
  auto job = slurm->job(amJob);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, "COMPLETED");
  EXPECT_EQ(job->comment, "SUCCEEDED");
  EXPECT_FALSE(ourJobs().empty()) << "the AM asked Slurm for no executors";
  EXPECT_TRUE(squeue().empty());
}

TEST_F(SlurmIntegrationTest, PendingExecutorJobsAreCancelledWhenTheTargetDrops) {
  // Two executors fill the node's memory: the third and fourth pend.
  const int64_t executorMiB = nodeMemoryMiB() * 2 / 5;
  startAm(testing_support::sleepJob("fill", 16, 2000),
          {{"dynamicAllocation.minExecutors", "0"},
           {"dynamicAllocation.maxExecutors", "4"},
           {"dynamicAllocation.executorIdleTimeout", "60s"},
           {"executor.memory", std::to_string(executorMiB) + "m"}},
          /*session=*/false);
  ASSERT_TRUE(connectToAm()) << readFile(amLog);

  std::set<int64_t> running, pending;
  ASSERT_TRUE(eventually(
      [&] {
        running.clear();
        pending.clear();
        for (const auto& job : squeue()) {
          if (job.state == "RUNNING") running.insert(job.id);
          if (job.state == "PENDING") pending.insert(job.id);
        }
        return running.size() == 2 && pending.size() >= 1;
      },
      60s))
      << readFile(amLog);

  // Lower max to 2 through the status API.
  auto response = amApi->request(
      "PUT", "api/v1/allocation/bounds", R"({"max": 2})",
      {{"Content-Type", "application/json"},
       {"Authorization", "Bearer " + rest::controlTokenOf("secret-" + applicationId)}});
  ASSERT_TRUE(response.ok()) << response.status << " " << response.body;

  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& job : squeue()) {
          if (pending.count(job.id) != 0) return false;
        }
        return true;
      },
      30s))
      << "the pending executor jobs were not cancelled\n"
      << readFile(amLog);
  std::map<int64_t, am::SlurmJob> byId;
  for (auto& job : ourJobs()) byId[job.jobId] = job;
  for (int64_t id : pending) {
    EXPECT_EQ(byId[id].state, "CANCELLED") << id;
    EXPECT_EQ(byId[id].batchHost, "") << "job " << id << " ran";
  }
  for (int64_t id : running) EXPECT_EQ(byId[id].state, "RUNNING") << "job " << id;

  // The two executors finish the work; the AM ends SUCCEEDED with nothing left queued.
  const auto exit = am->waitFor(120s);
  ASSERT_TRUE(exit.has_value()) << readFile(amLog);
  EXPECT_EQ(*exit, 0) << readFile(amLog);
  EXPECT_THAT(readFile(amLog), HasSubstr("finished: SUCCEEDED"));
  EXPECT_TRUE(eventually([&] { return squeue().empty(); }, 20s));
}

TEST_F(SlurmIntegrationTest, ABadPartitionFailsTheApplicationWithSlurmsMessage) {
  startAm(testing_support::sleepJob("nowhere", 4, 100),
          {{"slurm.partition", "nosuchpartition"}, {"executor.memory", "256m"}},
          /*session=*/false);
  const auto exit = am->waitFor(60s);
  ASSERT_TRUE(exit.has_value()) << readFile(amLog);
  EXPECT_NE(*exit, 0);
  const std::string log = readFile(amLog);
  EXPECT_THAT(log, HasSubstr("finished: FAILED"));
  EXPECT_THAT(log, HasSubstr("Invalid partition name specified"));
  EXPECT_TRUE(squeue().empty());
  EXPECT_TRUE(ourJobs().empty());
}

}  // namespace
}  // namespace tide::deploy
