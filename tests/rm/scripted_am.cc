// tide-test-am: an ApplicationMaster that follows a script, for the integration tests. It
// speaks the AM protocol (rest/messages/cluster.h) to the RM in $TIDE_RM_ADDRESS with the
// token in $TIDE_AM_TOKEN, starts the containers it is granted on their node managers with
// their tokens, and reports each step as a line in $TEST_AM_DIR/events. Where the test wants
// to look at the cluster between steps, it waits for the file $TEST_AM_DIR/go.<step>.
//
// $TEST_AM_SCENARIO:
//   normal  register; [go.ask] ask $TEST_AM_EXECUTORS containers and start them;
//           [go.release] release them and wait until all come back completed;
//           [go.finish] finish SUCCEEDED.
//   crash   register, then exit 1 without finishing.
//   lost    register; ask and start the containers; heartbeat until one comes back completed
//           (its node was killed); finish SUCCEEDED.
//   idle    register, ask and start the containers, then heartbeat until killed.
// Event lines: "registered <attemptId> <pid>", "allocated <containerId> <nodeId> <pid>",
// "allocated-all", "completed <containerId> <exitStatus> <diagnostics>", "released-all",
// "finished", "error <what>".

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/node.h"

namespace {

using namespace tide;
using Clock = std::chrono::steady_clock;

std::string env(const char* name, const char* fallback = nullptr) {
  const char* value = std::getenv(name);
  if (value != nullptr) return value;
  if (fallback != nullptr) return fallback;
  throw std::runtime_error(std::string("missing environment variable ") + name);
}

class ScriptedAm {
 public:
  ScriptedAm()
      : dir_(env("TEST_AM_DIR")),
        attemptId_(env("TIDE_APP_ATTEMPT_ID")),
        rm_(env("TIDE_RM_ADDRESS"), clientOptions(env("TIDE_AM_TOKEN"))) {}

  int run(const std::string& scenario, int executors) {
    rest::RegisterApplicationMasterRequest registration{"127.0.0.1", 0, "http://127.0.0.1/am"};
    rm_.postJson(base() + "/register", toJson(registration));
    event("registered " + attemptId_ + " " + std::to_string(::getpid()));
    if (scenario == "crash") return 1;
    if (scenario == "normal") {
      waitFor("ask");
      askAndStart(executors);
      waitFor("release");
      releaseAll();
      waitFor("finish");
      finish();
      return 0;
    }
    if (scenario == "lost") {
      askAndStart(executors);
      const auto deadline = Clock::now() + std::chrono::seconds(60);
      while (Clock::now() < deadline) {
        if (!heartbeat().completedContainers.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      finish();
      return 0;
    }
    if (scenario == "idle") {
      askAndStart(executors);
      while (true) {
        heartbeat();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    event("error unknown scenario " + scenario);
    return 2;
  }

 private:
  static rest::HttpClientOptions clientOptions(const std::string& token) {
    rest::HttpClientOptions options;
    options.defaultHeaders = {{"Authorization", "Bearer " + token}};
    options.requestTimeout = std::chrono::milliseconds(10000);
    return options;
  }

  std::string base() const { return "/ws/v1/am/" + attemptId_; }

  void event(const std::string& line) {
    std::ofstream out(dir_ / "events", std::ios::app);
    out << line << "\n";
  }

  void waitFor(const std::string& step) {
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(dir_ / ("go." + step))) {
      if (Clock::now() > deadline) throw std::runtime_error("nobody said go." + step);
      heartbeat();  // allocate doubles as the AM's heartbeat
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  rest::AllocateResponse heartbeat(std::vector<rest::ResourceRequest> asks = {},
                                   std::vector<std::string> releases = {}) {
    rest::AllocateRequest request;
    request.responseId = responseId_;
    request.progress = 0.5;
    request.asks = std::move(asks);
    request.releases = std::move(releases);
    const rest::AllocateResponse response =
        rest::allocateResponseFromJson(rm_.postJson(base() + "/allocate", toJson(request)));
    responseId_ = response.responseId;
    for (const rest::Container& container : response.allocatedContainers) start(container);
    for (const rest::CompletedContainer& completed : response.completedContainers) {
      completed_.insert(completed.containerId);
      event("completed " + completed.containerId + " " + std::to_string(completed.exitStatus) +
            " " + completed.diagnostics);
    }
    return response;
  }

  void start(const rest::Container& container) {
    rest::ContainerLaunchRequest launch;
    launch.containerId = container.id;
    launch.applicationId = env("TIDE_APPLICATION_ID");
    launch.token = container.token;
    launch.command = "exec sleep 120";
    launch.resource = container.resource;
    rest::HttpClient node("http://" + container.nodeHttpAddress);
    const rest::HttpResponse response = node.request(
        "POST", "/ws/v1/node/containers", toJson(launch),
        {{"Content-Type", "application/json"}, {"X-Tide-Container-Token", container.token}});
    if (!response.ok()) {
      event("error start " + container.id + ": HTTP " + std::to_string(response.status) + " " +
            response.body);
      return;
    }
    const rest::ContainerReport report =
        rest::containerReportFromJson(rest::parseJson(response.body));
    containers_[container.id] = container.nodeId;
    event("allocated " + container.id + " " + container.nodeId + " " + std::to_string(report.pid));
  }

  void askAndStart(int executors) {
    rest::ResourceRequest ask;
    ask.priority = 1;
    ask.resource = rest::Resource{128, 1};
    ask.numContainers = executors;
    heartbeat({ask});
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (static_cast<int>(containers_.size()) < executors && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      heartbeat();
    }
    event("allocated-all");
  }

  void releaseAll() {
    std::vector<std::string> ids;
    for (const auto& [id, node] : containers_) ids.push_back(id);
    heartbeat({}, ids);
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    auto allDone = [&] {
      for (const std::string& id : ids) {
        if (completed_.count(id) == 0) return false;
      }
      return true;
    };
    while (!allDone() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      heartbeat();
    }
    event("released-all");
  }

  void finish() {
    rm_.postJson(base() + "/finish",
                 toJson(rest::FinishApplicationMasterRequest{"SUCCEEDED", "script done"}));
    event("finished");
  }

  std::filesystem::path dir_;
  std::string attemptId_;
  rest::HttpClient rm_;
  int64_t responseId_ = 0;
  std::map<std::string, std::string> containers_;  // started: id -> node
  std::set<std::string> completed_;
};

}  // namespace

int main() {
  try {
    ScriptedAm am;
    return am.run(env("TEST_AM_SCENARIO", "normal"), std::stoi(env("TEST_AM_EXECUTORS", "3")));
  } catch (const std::exception& error) {
    std::cerr << "tide-test-am: " << error.what() << std::endl;
    try {
      std::ofstream(std::filesystem::path(env("TEST_AM_DIR")) / "events", std::ios::app)
          << "error " << error.what() << "\n";
    } catch (...) {
    }
    return 3;
  }
}
