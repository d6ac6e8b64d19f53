// Work-preserving tide-rm restarts (issue 12, items 3 and 5) with real processes: tide-rm with
// a state store, two tide-nm, and a job submitted with `tide submit --wait`. tide-rm is killed
// with SIGKILL mid-job, stays down 30 s (issue 12, item 3) and is started again on the same port
// and store: the application finishes SUCCEEDED, no task ran twice, no container was started again
// (the executors are the same), and `tide submit --wait` exits 0. A corrupt or future-version store
// stops the start with a message naming the file; rm.stateStore.dir=none forgets, as before.

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "deploy/cluster_client.h"
#include "deploy/embedded_cluster.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using deploy::withConf;
using ::testing::HasSubstr;
using testing_support::eventually;
using testing_support::readFile;
namespace fs = std::filesystem;

class RmRestartTest : public ::testing::Test {
 protected:
  std::string bin(const std::string& name) const { return std::string(TIDE_BIN_DIR) + "/" + name; }
  std::string secretFile() const { return (dir.path() / "rm.secret").string(); }
  std::string rmLog() const { return (dir.path() / "rm.log").string(); }

  // Starts tide-rm on `port` (0: ephemeral) and returns the port it listens on.
  int startRm(int port, const std::string& store) {
    const std::string portFile = (dir.path() / "rm.port").string();
    fs::remove(portFile);
    ChildSpec spec;
    spec.argv =
        withConf({bin("tide-rm"), "--port-file", portFile}, {{"rm.port", std::to_string(port)},
                                                             {"rm.secretFile", secretFile()},
                                                             {"rm.stateStore.dir", store},
                                                             {"rm.nodeExpiry", "5s"}});
    spec.logPath = rmLog();
    spec.parentDeathSignal = SIGTERM;
    rm = std::make_unique<ChildProcess>(spec);
    return deploy::waitForPortFile(portFile, *rm, rmLog(), 20s);
  }

  void startNodeManagers(int count) {
    for (int i = 0; i < count; ++i) {
      const std::string nmDir = (dir.path() / ("nm" + std::to_string(i))).string();
      fs::create_directories(nmDir);
      const std::string portFile = nmDir + "/nm.port";
      ChildSpec spec;
      spec.argv =
          withConf({bin("tide-nm"), "--port-file", portFile}, {{"nm.rm", rmUrl},
                                                               {"nm.host", "127.0.0.1"},
                                                               {"nm.port", "0"},
                                                               {"nm.workDir", nmDir + "/work"},
                                                               {"rm.secretFile", secretFile()},
                                                               {"nm.cores", "4"},
                                                               {"nm.memory", "4g"},
                                                               {"nm.heartbeatInterval", "200ms"}});
      spec.logPath = nmDir + "/nm.log";
      spec.parentDeathSignal = SIGTERM;
      nms.push_back(std::make_unique<ChildProcess>(spec));
      deploy::waitForPortFile(portFile, *nms.back(), spec.logPath, 20s);
    }
  }

  deploy::ClusterClient client() {
    return deploy::ClusterClient(rmUrl, rest::readSecretFile(secretFile()));
  }

  rapidjson::Document rmGet(const std::string& path) {
    rest::HttpClientOptions options;
    options.defaultHeaders = {{"Authorization", "Bearer " + rest::readSecretFile(secretFile())}};
    options.retry.maxAttempts = 1;
    return rest::HttpClient(rmUrl, options).getJson(path);
  }

  int activeNodes() {
    try {
      return client().metrics().activeNodes;
    } catch (const std::exception&) {
      return -1;
    }
  }

  // The only application the RM knows (waits for it).
  std::string theApplication() {
    std::string id;
    eventually(
        [&] {
          try {
            const rapidjson::Document apps = rmGet("/ws/v1/cluster/apps");
            const auto& list = apps["apps"]["app"];
            if (!list.IsArray() || list.Size() != 1) return false;
            id = list[0]["id"].GetString();
            return true;
          } catch (const std::exception&) {
            return false;
          }
        },
        30s);
    return id;
  }

  // Tasks that each write "task <i> attempt <a>" and leave a marker ran/<task>-<attempt>.
  std::string job(int tasks, double seconds) {
    fs::create_directories(dir.path() / "ran");
    const std::string ran = (dir.path() / "ran").string();
    return R"({"name": "restart", "output": ")" + (dir.path() / "out").string() +
           R"(", "stages": [{"id": "write", "tasks": )" + std::to_string(tasks) +
           R"(, "command": ["sh", "-c", "sleep )" + std::to_string(seconds) +
           R"(; echo task {task} attempt {attempt} > \"$TIDE_OUTPUT_DIR/part-0\"; touch )" + ran +
           R"(/{task}-{attempt}"]}]})";
  }

  std::set<std::string> markers() {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir.path() / "ran", ec)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  // Every container any node manager ever started (its directory stays).
  std::set<std::string> containerDirs() {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path(), ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && name.rfind("container_", 0) == 0) names.insert(name);
    }
    return names;
  }

  std::unique_ptr<ChildProcess> startSubmit(const std::string& jobFile) {
    ChildSpec spec;
    spec.argv = withConf({bin("tide"), "submit", "--wait", "--master", rmUrl, jobFile},
                         {{"rm.secretFile", secretFile()},
                          {"executor.memory", "256m"},
                          {"executor.cores", "2"},
                          {"am.memory", "256m"},
                          {"ui.port", "0"},
                          {"dynamicAllocation.enabled", "false"},
                          {"executor.instances", "2"},
                          {"am.heartbeatInterval", "500ms"}});
    spec.logPath = (dir.path() / "submit.log").string();
    spec.parentDeathSignal = SIGTERM;
    return std::make_unique<ChildProcess>(spec);
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "RM log:\n"
                << readFile(rmLog()) << "\nsubmit log:\n"
                << readFile((dir.path() / "submit.log").string()) << "\n";
    }
    if (submitter) submitter->stop();
    nms.clear();  // SIGTERM: their containers stop with them
    if (rm) rm->stop();
  }

  testing_support::TempDir dir;
  std::unique_ptr<ChildProcess> rm;
  std::vector<std::unique_ptr<ChildProcess>> nms;
  std::unique_ptr<ChildProcess> submitter;
  std::string rmUrl;
};

TEST_F(RmRestartTest, AJobRidesOutAThirtySecondRmOutageWithItsContainers) {
  const std::string store = (dir.path() / "rm-state").string();
  const int port = startRm(0, store);
  rmUrl = "http://127.0.0.1:" + std::to_string(port);
  startNodeManagers(2);
  ASSERT_TRUE(eventually([&] { return activeNodes() == 2; }, 20s));

  // 88 tasks of 2 s on 2 executors of 2 cores: about 44 s of work, 30 s of it during the
  // outage, some before it and the rest after it.
  const int tasks = 88;
  submitter = startSubmit(dir.writeFile("job.json", job(tasks, 2)));
  const std::string appId = theApplication();
  ASSERT_FALSE(appId.empty());

  // Both executors registered and tasks under way.
  std::string trackingUrl;
  ASSERT_TRUE(eventually(
      [&] {
        const rest::ApplicationReport report = client().application(appId);
        trackingUrl = report.trackingUrl;
        return report.state == "RUNNING" && !trackingUrl.empty();
      },
      60s));
  rest::HttpClient am(trackingUrl, {});
  std::set<std::string> executorsBefore;
  ASSERT_TRUE(eventually(
      [&] {
        executorsBefore.clear();
        const rapidjson::Document listed = am.getJson("api/v1/executors");  // outlives the loop
        for (const auto& e : listed["executors"].GetArray()) {
          executorsBefore.insert(e["id"].GetString());
        }
        return executorsBefore.size() == 2 && !markers().empty();
      },
      60s));
  const std::set<std::string> containersBefore = containerDirs();
  const size_t doneBefore = markers().size();
  ASSERT_LT(doneBefore, static_cast<size_t>(tasks) / 2) << "the job went too fast to test";

  // kill -9, and 30 s without a resource manager. The executors keep running tasks meanwhile.
  rm->signal(SIGKILL);
  ASSERT_TRUE(rm->waitFor(10s).has_value());
  const auto outageStart = std::chrono::steady_clock::now();
  // `tide status APPLICATION_ID` started now waits for the RM instead of failing.
  ChildSpec statusSpec;
  statusSpec.argv = withConf({bin("tide"), "status", appId, "--master", rmUrl, "--json"},
                             {{"rm.secretFile", secretFile()}});
  statusSpec.logPath = (dir.path() / "status.log").string();
  ChildProcess statusCommand(statusSpec);
  EXPECT_TRUE(eventually([&] { return markers().size() > doneBefore; }, 10s))
      << "no task finished while the RM was down";
  std::this_thread::sleep_until(outageStart + 30s);  // the outage itself, not a wait for a state
  ASSERT_TRUE(submitter->running()) << "tide submit --wait gave up during the outage";
  ASSERT_TRUE(statusCommand.running()) << "tide status gave up during the outage";
  ASSERT_LT(markers().size(), static_cast<size_t>(tasks)) << "the job ended during the outage";

  const auto restarted = std::chrono::steady_clock::now();
  ASSERT_EQ(startRm(port, store), port);
  // Recovered: both nodes back and the AM registered again (the RM logs it).
  ASSERT_TRUE(eventually(
      [&] {
        return activeNodes() == 2 &&
               readFile(rmLog()).find("registered again") != std::string::npos;
      },
      60s));
  const auto recovered = std::chrono::steady_clock::now();
  std::cout << "rm recovery: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(recovered - restarted).count()
            << " ms from restart to nodes and AM registered again" << std::endl;

  const std::optional<int> statusExit = statusCommand.waitFor(60s);
  ASSERT_TRUE(statusExit.has_value()) << "tide status did not return";
  EXPECT_EQ(*statusExit, 0) << readFile(statusSpec.logPath);
  EXPECT_THAT(readFile(statusSpec.logPath), HasSubstr("does not answer"));
  EXPECT_THAT(readFile(statusSpec.logPath), HasSubstr("answers again"));
  EXPECT_THAT(readFile(statusSpec.logPath), HasSubstr("\"allocation\""));

  const std::optional<int> exit = submitter->waitFor(120s);
  ASSERT_TRUE(exit.has_value()) << "tide submit --wait did not return";
  EXPECT_EQ(*exit, 0);
  const rest::ApplicationReport report = client().application(appId);
  EXPECT_EQ(report.state, "FINISHED");
  EXPECT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;

  // Every task ran exactly once, as attempt 0: nothing was re-run.
  const std::set<std::string> ran = markers();
  EXPECT_EQ(ran.size(), static_cast<size_t>(tasks));
  for (int i = 0; i < tasks; ++i) EXPECT_EQ(ran.count(std::to_string(i) + "-0"), 1u) << i;
  // No container was started again: the AM and the same two executors did all the work.
  EXPECT_EQ(containerDirs(), containersBefore);
  EXPECT_EQ(containersBefore.size(), 3u);
  // tide submit said what it waited for.
  const std::string submitLog = readFile((dir.path() / "submit.log").string());
  EXPECT_THAT(submitLog, HasSubstr("does not answer"));
  EXPECT_THAT(submitLog, HasSubstr("to learn how " + appId + " is doing"));
  EXPECT_THAT(submitLog, HasSubstr("answers again"));
  EXPECT_THAT(readFile(rmLog()), HasSubstr("recovered 1 applications"));
}

TEST_F(RmRestartTest, ACorruptOrFutureVersionStoreStopsTheStartNamingTheFile) {
  const std::string store = (dir.path() / "rm-state").string();
  const int port = startRm(0, store);
  rmUrl = "http://127.0.0.1:" + std::to_string(port);
  client().newApplication();  // something in the store
  rm->signal(SIGKILL);
  rm->waitFor(10s);
  const std::string log = store + "/state.log";
  std::string text = readFile(log);
  ASSERT_THAT(text, HasSubstr("tide-rm-state 1\n"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"corrupt", "tide-rm-state 1\n00000000 {\"type\":\"cluster\"}\n" + text.substr(16)},
      {"future", "tide-rm-state 7\n" + text.substr(16)}};
  for (const auto& [what, content] : cases) {
    {
      std::ofstream out(log, std::ios::trunc);
      out << content;
    }
    ChildSpec spec;
    spec.argv = withConf({bin("tide-rm")}, {{"rm.port", std::to_string(port)},
                                            {"rm.secretFile", secretFile()},
                                            {"rm.stateStore.dir", store}});
    const std::string output = (dir.path() / (what + ".log")).string();
    spec.logPath = output;
    ChildProcess child(spec);
    const std::optional<int> exit = child.waitFor(20s);
    ASSERT_TRUE(exit.has_value()) << what << ": tide-rm started anyway";
    EXPECT_EQ(*exit, 2) << what;
    EXPECT_THAT(readFile(output), HasSubstr("rm.stateStore.dir: " + log)) << what;
    EXPECT_THAT(readFile(output),
                HasSubstr(what == "corrupt" ? "line 2 is corrupt" : "written by a newer tide-rm"));
  }
}

TEST_F(RmRestartTest, WithoutAStoreARestartedRmForgetsAsBefore) {
  const int port = startRm(0, "none");
  rmUrl = "http://127.0.0.1:" + std::to_string(port);
  startNodeManagers(1);
  ASSERT_TRUE(eventually([&] { return activeNodes() == 1; }, 20s));
  submitter = startSubmit(dir.writeFile("job.json", job(40, 1)));
  const std::string appId = theApplication();
  ASSERT_TRUE(eventually([&] { return client().application(appId).state == "RUNNING"; }, 60s));
  rm->signal(SIGKILL);
  rm->waitFor(10s);
  ASSERT_EQ(startRm(port, "none"), port);
  // Unknown to the new RM; the node registers again and its containers are stopped as unknown.
  try {
    client().application(appId);
    ADD_FAILURE() << appId << " survived a restart without a store";
  } catch (const rest::HttpError& error) {
    EXPECT_EQ(error.status(), 404);
  }
  ASSERT_TRUE(eventually(
      [&] {
        const rapidjson::Document nodes = rmGet("/ws/v1/cluster/nodes");
        const auto& list = nodes["nodes"]["node"];
        return list.IsArray() && list.Size() == 1 && list[0]["numContainers"].GetInt() == 0 &&
               readFile((dir.path() / "nm0" / "nm.log").string()).find("registered") !=
                   std::string::npos;
      },
      30s));
  EXPECT_FALSE(fs::exists(dir.path() / "rm-state"));
  EXPECT_THAT(readFile(rmLog()), HasSubstr("stateStore=none"));
}

}  // namespace
}  // namespace tide
