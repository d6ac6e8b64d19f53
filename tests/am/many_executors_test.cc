// Issue 16.2: many executors on one AM. A real ApplicationMaster (its executor port, its
// scheduler) with a resource manager that grants every container it is asked for and launches
// nothing; the test itself is the executors, over raw keep-alive HTTP connections, all from one
// address. Each registers and then holds a long poll: the AM must hold them all without a
// thread each, and hand every one of them work when a job comes.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "am/application_master.h"
#include "common/config.h"
#include "rest/json.h"
#include "rest/messages/executor.h"
#include "tests/support/polling.h"
#include "tests/support/sockets.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

constexpr int kExecutors = 300;
constexpr int kSlots = 2;

// Grants what is asked, launches nothing: the test registers in the launched containers' stead.
class GrantingRm : public ResourceManagerClient {
 public:
  rest::RegisterApplicationMasterResponse registerAm(const AmEndpoint&) override {
    rest::RegisterApplicationMasterResponse response;
    response.maximumResourceCapability = {1 << 20, 1 << 10};
    return response;
  }
  HeartbeatResult heartbeat(const ContainerAsk& ask) override {
    HeartbeatResult result;
    for (int i = 0; i < ask.outstanding; ++i) {
      rest::Container c;
      c.id = "container_1_0001_01_" + std::to_string(++granted_);
      c.nodeId = "node1:1";
      c.nodeHttpAddress = "127.0.0.1:1";
      c.resource = ask.resource;
      result.granted.push_back(c);
    }
    result.numClusterNodes = 1;
    return result;
  }
  void launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Launched l{launch.executorId, container.id, ""};
    for (const auto& [key, value] : launch.environment) {
      if (key == "TIDE_AM_ADDRESS") l.amAddress = value;
    }
    launched_.push_back(l);
  }
  void unregister(const std::string&, const std::string&) override {}

  struct Launched {
    std::string executorId, containerId, amAddress;
  };
  std::vector<Launched> launched() {
    std::lock_guard<std::mutex> lock(mutex_);
    return launched_;
  }

 private:
  int granted_ = 0;  // the heartbeat loop's
  std::mutex mutex_;
  std::vector<Launched> launched_;  // guarded by mutex_
};

// One executor's keep-alive connection: a POST with its bearer secret, then its answer.
class ExecutorConnection {
 public:
  ExecutorConnection(int port, std::string secret)
      : connection_(port), secret_(std::move(secret)) {}
  bool post(const std::string& path, const std::string& body) {
    return connection_.send(
        "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + secret_ +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body);
  }
  // Status and body of the answer within `bound`; 0 when none came.
  std::pair<int, std::string> answer(std::chrono::milliseconds bound) {
    return connection_.receive(bound);
  }

 private:
  testing_support::RawHttpConnection connection_;
  std::string secret_;
};

int threadsOfThisProcess() {
  int threads = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++threads;
  }
  return threads;
}

// Established connections to `port` on this host whose received bytes nobody has read yet, and
// how many there are in all (from /proc/net/tcp, the server's side of each).
std::pair<int, int> unreadConnectionsTo(int port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // header
  int connections = 0, unread = 0;
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues;
    fields >> slot >> local >> remote >> state >> queues;
    if (state != "01") continue;  // ESTABLISHED
    if (std::stoi(local.substr(local.find(':') + 1), nullptr, 16) != port) continue;
    ++connections;
    if (std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16) != 0) ++unread;
  }
  return {connections, unread};
}

TEST(ManyExecutorsTest, HeldSyncsOfHundredsOfExecutorsTakeNoThreadEachAndAllGetWork) {
  testing_support::TempDir dir;
  Properties props;
  props.set("dynamicAllocation.enabled", "false");
  props.set("executor.instances", std::to_string(kExecutors));
  props.set("executor.cores", std::to_string(kSlots));
  props.set("am.stagingDir", "none");
  props.set("history.dir", (dir.path() / "history").string());
  props.set("ui.port", "0");
  props.set("am.heartbeatInterval", "50ms");
  props.set("am.executorSyncWait", "60s");  // polls stay held for the whole test
  props.set("network.timeout", "120s");
  std::vector<std::string> warnings;
  AmConfig config = AmConfig::fromProperties(props, &warnings);
  config.session = true;
  const std::string secret = "0123456789abcdef";
  auto rm = std::make_unique<GrantingRm>();
  GrantingRm& granting = *rm;
  ApplicationMaster master(std::move(config),
                           {"application_1_0001", "appattempt_1_0001_000001", secret, "/bin/false"},
                           std::move(rm));
  master.start();
  std::thread running([&] { master.run(); });

  ASSERT_TRUE(testing_support::eventually([&] { return granting.launched().size() >= kExecutors; },
                                          std::chrono::seconds(30)))
      << granting.launched().size() << " launched";
  const auto launched = granting.launched();
  const std::string address = launched.front().amAddress;
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  std::vector<std::unique_ptr<ExecutorConnection>> executors;
  for (const auto& l : launched) {
    auto connection = std::make_unique<ExecutorConnection>(port, secret);
    rest::ExecutorRegistration registration;
    registration.executorId = l.executorId;
    registration.containerId = l.containerId;
    registration.host = "127.0.0.1";
    registration.node = "node1:1";
    registration.cores = kSlots;
    ASSERT_TRUE(connection->post("/api/v1/executors/register", rest::toJson(registration)));
    ASSERT_EQ(connection->answer(std::chrono::seconds(20)).first, 200) << l.executorId;
    executors.push_back(std::move(connection));
  }
  const int threadsBefore = threadsOfThisProcess();
  rest::ExecutorSync poll;
  poll.freeSlots = kSlots;
  poll.maxWaitMs = 60000;
  for (size_t i = 0; i < executors.size(); ++i) {
    ASSERT_TRUE(executors[i]->post("/api/v1/executors/" + launched[i].executorId + "/sync",
                                   rest::toJson(poll)));
  }
  // Every poll has been read by the AM, which holds them.
  ASSERT_TRUE(testing_support::eventually(
      [&] {
        const auto [connections, unread] = unreadConnectionsTo(port);
        return connections >= kExecutors && unread == 0;
      },
      std::chrono::seconds(20)));
  EXPECT_LT(threadsOfThisProcess(), threadsBefore + 100)
      << kExecutors << " held syncs took a thread each";

  master.submitJob(parseJob(R"({"name": "wide", "stages": [{"id": "s", "tasks": )" +
                            std::to_string(kExecutors * kSlots) + R"(, "builtin": "noop"}]})"));
  int withWork = 0;
  for (size_t i = 0; i < executors.size(); ++i) {
    const auto [status, body] = executors[i]->answer(std::chrono::seconds(20));
    ASSERT_EQ(status, 200) << launched[i].executorId << ": " << body;
    const rest::ExecutorSyncReply reply = rest::executorSyncReplyFromJson(rest::parseJson(body));
    if (!reply.launches.empty()) ++withWork;
  }
  EXPECT_EQ(withWork, kExecutors) << "every held executor gets tasks as soon as there are some";
  executors.clear();
  master.requestStop("KILLED", "test over");
  running.join();
}

}  // namespace
}  // namespace tide::am
