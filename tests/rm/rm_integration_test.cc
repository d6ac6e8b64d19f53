// One real tide-rm and three real tide-nm processes on 127.0.0.1 with ephemeral ports, and a
// scripted AM (tide-test-am) submitted as the application: placement spread out and packed,
// release, finish, kill, AM crashes and retries, a node killed with SIGKILL, and the REST
// errors. Every wait polls a condition with a bound; all processes are killed at the end.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/credentials.h"
#include "tests/support/child_processes.h"
#include "tests/support/files.h"
#include "tests/support/headless_chromium.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::rm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::eventually;
namespace fs = std::filesystem;

constexpr auto kBound = std::chrono::seconds(30);

std::string bin(const std::string& name) {
  return std::string(TIDE_BIN_DIR) + "/" + name;
}

int readPort(const fs::path& file) {
  std::ifstream in(file);
  int port = 0;
  in >> port;
  return port;
}

struct Allocation {
  std::string containerId;
  std::string nodeId;
  pid_t pid = 0;
};

class RmIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"tide-rm", "tide-nm", "tide-test-am"}) {
      if (!fs::exists(bin(name))) GTEST_SKIP() << bin(name) << " is not built";
    }
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << processes_.logs();
      for (const auto& entry : fs::recursive_directory_iterator(dir_.path())) {
        if (entry.path().filename() == "events") {
          std::ifstream in(entry.path());
          std::cerr << "==== " << entry.path() << " ====\n" << in.rdbuf() << "\n";
        }
      }
    }
    rm_.reset();  // its kept-alive connection would hold up the RM's shutdown
    processes_.killAll();
  }

  void startCluster(std::vector<std::string> rmConfs, int nodes = 3) {
    secretFile_ = (dir_.path() / "rm.secret").string();
    std::vector<std::string> rmArgs{bin("tide-rm"), "--conf", "rm.port=0", "--conf",
                                    "rm.secretFile=" + secretFile_};
    for (const std::string& conf : rmConfs) {
      rmArgs.push_back("--conf");
      rmArgs.push_back(conf);
    }
    rmArgs.push_back("--port-file");
    rmArgs.push_back((dir_.path() / "rm.port").string());
    processes_.start(rmArgs, (dir_.path() / "rm.log").string());
    ASSERT_TRUE(eventually([&] { return readPort(dir_.path() / "rm.port") > 0; }, kBound))
        << processes_.logs();
    rmUrl_ = "http://127.0.0.1:" + std::to_string(readPort(dir_.path() / "rm.port"));
    rest::HttpClientOptions admin;
    admin.defaultHeaders = {{"Authorization", "Bearer " + rest::readSecretFile(secretFile_)}};
    rm_ = std::make_unique<rest::HttpClient>(rmUrl_, admin);

    for (int i = 0; i < nodes; ++i) {
      const std::string name = "nm" + std::to_string(i);
      fs::create_directories(dir_.path() / name);
      const pid_t pid = processes_.start(
          {bin("tide-nm"), "--conf", "nm.port=0", "--conf", "nm.host=127.0.0.1", "--conf",
           "nm.rm=" + rmUrl_, "--conf", "nm.cores=2", "--conf", "nm.memory=2g", "--conf",
           "nm.heartbeatInterval=200ms", "--conf", "nm.workDir=" + (dir_.path() / name).string(),
           "--conf", "rm.secretFile=" + secretFile_, "--port-file",
           (dir_.path() / (name + ".port")).string()},
          (dir_.path() / (name + ".log")).string());
      ASSERT_TRUE(eventually([&] { return readPort(dir_.path() / (name + ".port")) > 0; }, kBound))
          << processes_.logs();
      nodeManagers_["127.0.0.1:" + std::to_string(readPort(dir_.path() / (name + ".port")))] = pid;
    }
    ASSERT_TRUE(eventually([&] { return metrics().activeNodes == nodes; }, kBound))
        << processes_.logs();
  }

  rest::ClusterMetrics metrics() {
    return rest::clusterMetricsFromJson(rm_->getJson("/ws/v1/cluster/metrics"));
  }

  rest::ApplicationReport app(const std::string& id) {
    return rest::applicationReportFromJson(rm_->getJson("/ws/v1/cluster/apps/" + id));
  }

  // Submits the scripted AM; returns the application id. Its events land in amDir(id).
  std::string submit(const std::string& scenario, int executors, int maxAttempts = 0) {
    const std::string id = rest::newApplicationResponseFromJson(
                               rm_->postJson("/ws/v1/cluster/apps/new-application", "{}"))
                               .applicationId;
    fs::create_directories(amDir(id));
    rest::ApplicationSubmission submission;
    submission.applicationId = id;
    submission.applicationName = "scripted-" + scenario;
    submission.command = bin("tide-test-am");
    submission.environment = {{"TEST_AM_DIR", amDir(id).string()},
                              {"TEST_AM_SCENARIO", scenario},
                              {"TEST_AM_EXECUTORS", std::to_string(executors)}};
    submission.resource = rest::Resource{256, 1};
    submission.maxAppAttempts = maxAttempts;
    const rest::HttpResponse response = rm_->request(
        "POST", "/ws/v1/cluster/apps", toJson(submission), {{"Content-Type", "application/json"}});
    EXPECT_EQ(response.status, 202) << response.body;
    return id;
  }

  fs::path amDir(const std::string& appId) { return dir_.path() / appId; }

  std::vector<std::string> events(const std::string& appId) {
    std::vector<std::string> lines;
    std::ifstream in(amDir(appId) / "events");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  bool hasEvent(const std::string& appId, const std::string& prefix) {
    for (const std::string& line : events(appId)) {
      if (line.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }

  bool waitEvent(const std::string& appId, const std::string& prefix) {
    return eventually([&] { return hasEvent(appId, prefix); }, kBound);
  }

  void go(const std::string& appId, const std::string& step) {
    std::ofstream(amDir(appId) / ("go." + step)) << "go\n";
  }

  // The containers the AM got and started, with their processes (adopted for cleanup).
  std::vector<Allocation> allocations(const std::string& appId) {
    std::vector<Allocation> result;
    for (const std::string& line : events(appId)) {
      std::istringstream in(line);
      std::string kind;
      in >> kind;
      if (kind == "registered") {
        std::string attempt;
        pid_t pid = 0;
        in >> attempt >> pid;
        processes_.adopt(pid);
      }
      if (kind != "allocated") continue;
      Allocation allocation;
      in >> allocation.containerId >> allocation.nodeId >> allocation.pid;
      processes_.adopt(allocation.pid);
      result.push_back(allocation);
    }
    return result;
  }

  // exitStatus and diagnostics of every container the AM was told completed.
  std::map<std::string, std::pair<int, std::string>> completions(const std::string& appId) {
    std::map<std::string, std::pair<int, std::string>> result;
    for (const std::string& line : events(appId)) {
      std::istringstream in(line);
      std::string kind, id;
      int status = 0;
      in >> kind >> id >> status;
      if (kind != "completed") continue;
      std::string diagnostics;
      std::getline(in, diagnostics);
      result[id] = {status, std::string(trimLeading(diagnostics))};
    }
    return result;
  }

  static std::string_view trimLeading(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    return text;
  }

  static std::map<std::string, int> perNode(const std::vector<Allocation>& allocations) {
    std::map<std::string, int> counts;
    for (const Allocation& allocation : allocations) ++counts[allocation.nodeId];
    return counts;
  }

  testing_support::TempDir dir_;
  testing_support::ChildProcesses processes_;
  std::string rmUrl_;
  std::string secretFile_;
  std::unique_ptr<rest::HttpClient> rm_;
  std::map<std::string, pid_t> nodeManagers_;  // node id -> pid
};

TEST_F(RmIntegrationTest, SpreadOutLifecycleReleaseAndFinish) {
  startCluster({"rm.nodeExpiry=5s"});
  EXPECT_EQ(metrics().totalVirtualCores, 6);
  EXPECT_EQ(metrics().totalMB, 3 * 2048);
  const std::string id = submit("normal", 3);

  ASSERT_TRUE(waitEvent(id, "registered")) << processes_.logs();
  ASSERT_TRUE(eventually([&] { return app(id).state == "RUNNING"; }, kBound));
  auto report = app(id);
  EXPECT_EQ(report.currentAppAttemptId, "appattempt_" + id.substr(12) + "_000001");
  EXPECT_EQ(report.runningContainers, 1);
  EXPECT_EQ(report.allocatedVCores, 1);
  EXPECT_EQ(report.allocatedMB, 256);
  auto cluster = metrics();
  EXPECT_EQ(cluster.appsRunning, 1);
  EXPECT_EQ(cluster.containersAllocated, 1);
  EXPECT_EQ(cluster.allocatedMB, 256);

  go(id, "ask");
  ASSERT_TRUE(waitEvent(id, "allocated-all"));
  const std::vector<Allocation> granted = allocations(id);
  ASSERT_EQ(granted.size(), 3u) << processes_.logs();
  const auto counts = perNode(granted);
  EXPECT_EQ(counts.size(), 3u) << "spreadOut puts one container on each node";
  report = app(id);
  EXPECT_EQ(report.runningContainers, 4);
  EXPECT_EQ(report.allocatedVCores, 4);
  EXPECT_EQ(report.allocatedMB, 256 + 3 * 128);
  cluster = metrics();
  EXPECT_EQ(cluster.containersAllocated, 4);
  EXPECT_EQ(cluster.allocatedVirtualCores, 4);
  EXPECT_EQ(cluster.availableVirtualCores, 2);
  for (const Allocation& allocation : granted) EXPECT_GT(allocation.pid, 0);

  go(id, "release");
  ASSERT_TRUE(waitEvent(id, "released-all"));
  const auto completed = completions(id);
  for (const Allocation& allocation : granted) {
    ASSERT_EQ(completed.count(allocation.containerId), 1u) << allocation.containerId;
    EXPECT_EQ(completed.at(allocation.containerId).first, rest::exit_status::kAborted);
  }
  EXPECT_TRUE(eventually([&] { return metrics().containersAllocated == 1; }, kBound));

  go(id, "finish");
  ASSERT_TRUE(eventually([&] { return app(id).state == "FINISHED"; }, kBound));
  report = app(id);
  EXPECT_EQ(report.finalStatus, "SUCCEEDED");
  EXPECT_EQ(report.diagnostics, "script done");
  EXPECT_GT(report.finishedTime, 0);
  // The AM process exits; its node reports it and the RM frees it.
  EXPECT_TRUE(eventually([&] { return metrics().containersAllocated == 0; }, kBound));
  cluster = metrics();
  EXPECT_EQ(cluster.appsCompleted, 1);
  EXPECT_EQ(cluster.appsRunning, 0);
  EXPECT_EQ(cluster.allocatedMB, 0);
}

TEST_F(RmIntegrationTest, PackedPlacementAndKill) {
  startCluster({"rm.spreadOut=false", "rm.nodeExpiry=5s"});
  const std::string id = submit("idle", 3);
  ASSERT_TRUE(waitEvent(id, "allocated-all")) << processes_.logs();
  const std::vector<Allocation> granted = allocations(id);
  ASSERT_EQ(granted.size(), 3u);
  // The AM holds one core of one node; packed fills an empty node (2 cores), then the next.
  std::multiset<int> counts;
  for (const auto& [node, count] : perNode(granted)) counts.insert(count);
  EXPECT_EQ(counts, (std::multiset<int>{1, 2}));

  const rest::HttpResponse killed =
      rm_->request("PUT", "/ws/v1/cluster/apps/" + id + "/state", R"({"state":"KILLED"})",
                   {{"Content-Type", "application/json"}});
  ASSERT_EQ(killed.status, 200) << killed.body;
  EXPECT_EQ(app(id).state, "KILLED");
  EXPECT_EQ(app(id).finalStatus, "KILLED");
  // The node managers stop everything: the AM and the executors.
  EXPECT_TRUE(eventually([&] { return metrics().containersAllocated == 0; }, kBound))
      << metrics().containersAllocated;
  EXPECT_EQ(metrics().appsKilled, 1);
  for (const Allocation& allocation : granted) {
    EXPECT_TRUE(eventually([&] { return ::kill(allocation.pid, 0) != 0; }, kBound))
        << "container process " << allocation.pid << " still runs";
  }
}

TEST_F(RmIntegrationTest, CrashingAmIsRetriedThenTheApplicationFails) {
  startCluster({"rm.nodeExpiry=5s"});
  const std::string id = submit("crash", 0);
  ASSERT_TRUE(eventually([&] { return app(id).state == "FAILED"; }, kBound)) << processes_.logs();
  const auto report = app(id);
  EXPECT_EQ(report.finalStatus, "FAILED");
  EXPECT_EQ(report.currentAppAttemptId, "appattempt_" + id.substr(12) + "_000002");
  EXPECT_THAT(report.diagnostics, HasSubstr("exited with code 1 without unregistering"));
  EXPECT_THAT(report.diagnostics, HasSubstr("attempt 2 of 2"));
  int registrations = 0;
  for (const std::string& line : events(id)) registrations += line.rfind("registered", 0) == 0;
  EXPECT_EQ(registrations, 2);
  EXPECT_EQ(metrics().appsFailed, 1);
  EXPECT_TRUE(eventually([&] { return metrics().containersAllocated == 0; }, kBound));
}

TEST_F(RmIntegrationTest, ContainersOfAKilledNodeComeBackToTheAmAsLost) {
  startCluster({"rm.nodeExpiry=1s"});
  const std::string id = submit("lost", 3);
  ASSERT_TRUE(waitEvent(id, "allocated-all")) << processes_.logs();
  const std::vector<Allocation> granted = allocations(id);
  ASSERT_EQ(granted.size(), 3u);
  const std::string amNode = app(id).amHostHttpAddress;
  std::string victim;
  for (const Allocation& allocation : granted) {
    if (allocation.nodeId != amNode) victim = allocation.nodeId;
  }
  ASSERT_FALSE(victim.empty());
  processes_.kill(nodeManagers_.at(victim));  // SIGKILL: no goodbye to the RM

  ASSERT_TRUE(waitEvent(id, "finished")) << processes_.logs();
  const auto completed = completions(id);
  bool sawLost = false;
  for (const Allocation& allocation : granted) {
    if (allocation.nodeId != victim) continue;
    ASSERT_EQ(completed.count(allocation.containerId), 1u);
    EXPECT_EQ(completed.at(allocation.containerId).first, rest::exit_status::kAborted);
    EXPECT_EQ(completed.at(allocation.containerId).second, "lost with node " + victim);
    sawLost = true;
  }
  EXPECT_TRUE(sawLost);
  EXPECT_TRUE(eventually([&] { return app(id).state == "FINISHED"; }, kBound));
  const auto cluster = metrics();
  EXPECT_EQ(cluster.lostNodes, 1);
  EXPECT_EQ(cluster.activeNodes, 2);
  const auto nodes = rest::nodeReportsFromJson(rm_->getJson("/ws/v1/cluster/nodes"));
  for (const rest::NodeReport& node : nodes) {
    EXPECT_EQ(node.state, node.id == victim ? "LOST" : "RUNNING") << node.id;
  }
}

TEST_F(RmIntegrationTest, BadRequestsUnknownAppsAndWrongTokens) {
  startCluster({"rm.nodeExpiry=5s"}, 1);
  auto json = [](const rest::HttpResponse& response) { return rest::parseJson(response.body); };
  auto message = [&](const rest::HttpResponse& response) {
    return std::string(json(response)["error"]["message"].GetString());
  };
  const rest::HttpHeaders jsonType{{"Content-Type", "application/json"}};

  auto bad = rm_->request("POST", "/ws/v1/cluster/apps",
                          R"({"application-id": "x", "am-container-spec": {"commands": {}},
                              "resource": {"memory": 1, "vCores": 1}})",
                          jsonType);
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(message(bad), HasSubstr("'am-container-spec.commands.command'"));
  auto unknown = rm_->request("GET", "/ws/v1/cluster/apps/application_1_0077");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json(unknown)["error"]["code"].GetInt(), 404);

  const std::string id = submit("idle", 1);
  ASSERT_TRUE(waitEvent(id, "allocated-all")) << processes_.logs();
  allocations(id);  // adopt the processes
  const std::string attempt = app(id).currentAppAttemptId;
  const std::string allocate = "/ws/v1/am/" + attempt + "/allocate";
  auto without = rm_->request("POST", allocate, R"({"responseId": 0})", jsonType);
  EXPECT_EQ(without.status, 401);
  EXPECT_EQ(json(without)["error"]["code"].GetInt(), 401);
  rest::HttpHeaders wrongToken = jsonType;
  wrongToken.push_back({"Authorization", "Bearer 0123"});
  auto wrong = rm_->request("POST", allocate, R"({"responseId": 0})", wrongToken);
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(message(wrong), HasSubstr("invalid AM token"));
  rm_->request("PUT", "/ws/v1/cluster/apps/" + id + "/state", R"({"state":"KILLED"})", jsonType);
  EXPECT_TRUE(eventually([&] { return metrics().containersAllocated == 0; }, kBound));
}

// tide-rm's page (issue 14, item 5) in a real browser: the cluster's totals, its applications
// with their tracking links, its nodes; nothing without a client token, which says how to get
// one.
TEST_F(RmIntegrationTest, ThePageShowsTheClusterItsApplicationsAndNodesInHeadlessChromium) {
  const std::string chromium =
      testing_support::chromiumForTest("the resource manager's page test needs a real browser");
  if (chromium.empty()) return;
  startCluster({"rm.nodeExpiry=5s"}, 2);
  const std::string id = submit("idle", 1);
  ASSERT_TRUE(waitEvent(id, "allocated-all")) << processes_.logs();
  allocations(id);  // adopt the processes

  // The page itself needs no token; the API it reads still does.
  rest::HttpClient anonymous(rmUrl_);
  const rest::HttpResponse page = anonymous.request("GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<title>tide · resource manager</title>"));
  EXPECT_EQ(anonymous.request("GET", "/ws/v1/cluster/apps").status, 401);

  auto dom = [&](const std::string& url, const std::string& tag) {
    const std::string file = (dir_.path() / (tag + ".html")).string();
    testing_support::runHeadlessChromium(chromium, dir_.path(), tag, {"--dump-dom"}, url, 5000,
                                         file);
    return testing_support::readFile(file);
  };
  const std::string token = rest::clientTokenOf(rest::readSecretFile(secretFile_));
  const std::string shown = dom(rmUrl_ + "/?token=" + token, "page");
  // Totals: two nodes of two cores, some of them used by the AM and its container.
  EXPECT_THAT(shown, HasSubstr(R"(<div id="total-nodes"><b>2</b>)")) << shown.substr(0, 3000);
  EXPECT_TRUE(std::regex_search(shown, std::regex(R"(<div id="total-cores"><b>[1-4] / 4</b>)")))
      << shown.substr(0, 3000);
  EXPECT_THAT(shown, HasSubstr(R"(<div id="apps-running"><b>1</b>)"));
  // The application's row, with its state and attempt.
  const std::smatch row = [&] {
    std::smatch match;
    std::regex_search(shown, match, std::regex("<tr data-app-id=\"" + id + "\">(.*?)</tr>"));
    return match;
  }();
  ASSERT_FALSE(row.empty()) << shown.substr(0, 3000);
  EXPECT_THAT(row[1].str(), HasSubstr("scripted-idle"));
  EXPECT_THAT(row[1].str(), HasSubstr(">RUNNING<"));
  EXPECT_THAT(row[1].str(), HasSubstr(app(id).currentAppAttemptId));
  // One row per node, by the ids the RM reports.
  for (const auto& [nodeId, pid] : nodeManagers_) {
    EXPECT_THAT(shown, HasSubstr("<tr data-node-id=\"" + nodeId + "\">")) << nodeId;
  }
  // The token left the address bar, and none is shown.
  EXPECT_THAT(shown, Not(HasSubstr(token)));

  // A screenshot for people (and CI artifacts) to look at.
  const fs::path screenshot = TIDE_RM_PAGE_SCREENSHOT;
  fs::create_directories(screenshot.parent_path());
  fs::remove(screenshot);
  testing_support::runHeadlessChromium(
      chromium, dir_.path(), "shot",
      {"--screenshot=" + screenshot.string(), "--window-size=1280,700", "--hide-scrollbars"},
      rmUrl_ + "/?token=" + token, 5000, (dir_.path() / "shot.out").string());
  EXPECT_TRUE(fs::exists(screenshot) && fs::file_size(screenshot) > 10000) << screenshot;

  const std::string refused = dom(rmUrl_ + "/", "no-token");
  EXPECT_THAT(refused, HasSubstr("tide-rm needs a client token to show its state"));
  EXPECT_THAT(refused, Not(HasSubstr("<tr data-app-id=")));

  rm_->request("PUT", "/ws/v1/cluster/apps/" + id + "/state", R"({"state":"KILLED"})",
               {{"Content-Type", "application/json"}});
  EXPECT_TRUE(eventually([&] { return metrics().containersAllocated == 0; }, kBound));
}

}  // namespace
}  // namespace tide::rm
