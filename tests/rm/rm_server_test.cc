// The REST layer in-process on loopback: status codes and JSON errors of every kind, the AM
// launch the RM sends to a (fake) node manager, and the bearer check of the AM protocol.

#include "deploy/rm/rm_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/daemon.h"
#include "rest/http_client.h"
#include "rest/http_server.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/node.h"
#include "tests/support/locked.h"
#include "tests/support/polling.h"
#include "tests/support/sockets.h"

namespace tide::rm {
namespace {

using ::testing::HasSubstr;
using testing_support::eventually;

constexpr std::chrono::milliseconds kBound = std::chrono::seconds(10);

// Records what the RM sends to a node manager.
class FakeNodeManager {
 public:
  FakeNodeManager() {
    server_.post(
        "/ws/v1/node/containers", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (refuseNext_ > 0) {
            // As a node manager that has not finished registering (or is restarting).
            --refuseNext_;
            ++refused_;
            throw rest::RestError(503, "the node has not registered with the resource manager yet");
          }
          launches_.push_back(rest::containerLaunchRequestFromJson(rest::parseJson(req.body)));
          launchTokens_.push_back(req.get_header_value("X-Tide-Container-Token"));
          rest::ContainerReport report;
          report.containerId = launches_.back().containerId;
          report.state = "RUNNING";
          rest::replyJson(res, toJson(report), 201);
        });
    server_.del(R"(/ws/v1/node/containers/([^/]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  std::lock_guard<std::mutex> lock(mutex_);
                  deletes_.push_back({req.matches[1], req.get_header_value("Authorization")});
                  rest::replyJson(res, "{}");
                });
    port_ = server_.start();
  }
  // The server goes first: its handlers use the members below, which are destroyed before it.
  ~FakeNodeManager() { server_.stop(); }
  int port() const { return port_; }
  // Answers the next `count` launches 503.
  void refuseNextLaunches(int count) {
    std::lock_guard<std::mutex> lock(mutex_);
    refuseNext_ = count;
  }
  int refused() { return testing_support::lockedCopy(mutex_, refused_); }
  std::vector<rest::ContainerLaunchRequest> launches() {
    return testing_support::lockedCopy(mutex_, launches_);
  }
  std::vector<std::string> launchTokens() {
    return testing_support::lockedCopy(mutex_, launchTokens_);
  }
  std::vector<std::pair<std::string, std::string>> deletes() {
    return testing_support::lockedCopy(mutex_, deletes_);
  }

 private:
  rest::HttpServer server_{rest::HttpServerOptions{}};
  int port_ = 0;
  std::mutex mutex_;
  std::vector<rest::ContainerLaunchRequest> launches_;
  std::vector<std::string> launchTokens_;
  std::vector<std::pair<std::string, std::string>> deletes_;
  int refuseNext_ = 0;
  int refused_ = 0;
};

class RmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResourceManagerServerOptions options;
    options.config.port = 0;
    options.clusterTimestamp = 1700000000000;
    options.placementSeed = 1;
    options.secrets = seededSecretGenerator(1);
    options.serverThreads = 8;
    server_ = std::make_unique<ResourceManagerServer>(options);
    server_->start();
    client_ = std::make_unique<rest::HttpClient>(server_->baseUrl());
  }

  rest::HttpResponse call(const std::string& method, const std::string& path,
                          const std::string& body = "", rest::HttpHeaders headers = {}) {
    headers.push_back({"Content-Type", "application/json"});
    // The client API and node registration take the admin token (the cluster secret); the
    // AM protocol and heartbeats carry their own credentials.
    const bool ownCredential =
        path.rfind("/ws/v1/am/", 0) == 0 || path.find("/heartbeat") != std::string::npos;
    bool hasAuthorization = false;
    for (const auto& [name, value] : headers) hasAuthorization |= name == "Authorization";
    if (!ownCredential && !hasAuthorization) {
      headers.push_back({"Authorization", "Bearer " + server_->clusterSecret()});
    }
    return client_->request(method, path, body, headers);
  }

  static std::string errorMessage(const rest::HttpResponse& response) {
    const rapidjson::Document document = rest::parseJson(response.body);
    return document["error"]["message"].GetString();
  }

  std::string registerNode(bool heartbeat = true) {
    const auto response = call(
        "POST", "/ws/v1/nm/register",
        toJson(rest::NodeRegistration{"127.0.0.1", nodeManager_.port(), rest::Resource{4096, 4}}));
    EXPECT_EQ(response.status, 200) << response.body;
    const auto registration =
        rest::nodeRegistrationResponseFromJson(rest::parseJson(response.body));
    nodeSecret_ = registration.nodeSecret;
    if (heartbeat) {
      // Registration is complete with the first heartbeat: only then does it get containers.
      const auto beat = call("POST", "/ws/v1/nm/" + registration.nodeId + "/heartbeat",
                             R"({"containers": []})", {{"Authorization", "Bearer " + nodeSecret_}});
      EXPECT_EQ(beat.status, 200) << beat.body;
    }
    return registration.nodeId;
  }

  std::string submitApp() {
    const auto created = call("POST", "/ws/v1/cluster/apps/new-application");
    EXPECT_EQ(created.status, 200);
    const std::string id =
        rest::newApplicationResponseFromJson(rest::parseJson(created.body)).applicationId;
    rest::ApplicationSubmission submission;
    submission.applicationId = id;
    submission.applicationName = "test";
    submission.command = "sleep 100";
    submission.environment = {{"GREETING", "hello"}};
    submission.resource = rest::Resource{512, 1};
    const auto submitted = call("POST", "/ws/v1/cluster/apps", toJson(submission));
    EXPECT_EQ(submitted.status, 202) << submitted.body;
    EXPECT_EQ(submitted.header("Location"), "/ws/v1/cluster/apps/" + id);
    return id;
  }

  FakeNodeManager nodeManager_;
  std::unique_ptr<ResourceManagerServer> server_;
  std::unique_ptr<rest::HttpClient> client_;
  std::string nodeSecret_;
};

TEST_F(RmServerTest, LaunchesTheAmOnItsNodeWithTokenAndEnvironment) {
  const std::string nodeId = registerNode();
  const std::string app = submitApp();
  ASSERT_TRUE(eventually([&] { return !nodeManager_.launches().empty(); }, kBound));
  const rest::ContainerLaunchRequest launch = nodeManager_.launches().at(0);
  EXPECT_EQ(launch.applicationId, app);
  EXPECT_EQ(launch.command, "sleep 100");
  EXPECT_EQ(launch.environment.at("GREETING"), "hello");
  EXPECT_EQ(launch.environment.at("TIDE_RM_ADDRESS"), server_->baseUrl());
  EXPECT_EQ(launch.environment.at("TIDE_CONTAINER_ID"), launch.containerId);
  EXPECT_EQ(nodeManager_.launchTokens().at(0),
            rest::containerToken(nodeSecret_, launch.containerId));
  EXPECT_EQ(launch.token, nodeManager_.launchTokens().at(0));

  const std::string attempt = launch.environment.at("TIDE_APP_ATTEMPT_ID");
  const std::string token = launch.environment.at("TIDE_AM_TOKEN");
  const std::string registerBody = toJson(rest::RegisterApplicationMasterRequest{"h", 1, "t"});
  const std::string base = "/ws/v1/am/" + attempt;

  auto missing = call("POST", base + "/register", registerBody);
  EXPECT_EQ(missing.status, 401);
  EXPECT_THAT(errorMessage(missing), HasSubstr("Authorization"));
  auto wrong = call("POST", base + "/register", registerBody, {{"Authorization", "Bearer x"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(errorMessage(wrong), HasSubstr("invalid AM token"));
  const rest::HttpHeaders bearer{{"Authorization", "Bearer " + token}};
  auto otherAttempt =
      call("POST", "/ws/v1/am/appattempt_1700000000000_0009_000001/register", registerBody, bearer);
  EXPECT_EQ(otherAttempt.status, 404);

  auto registered = call("POST", base + "/register", registerBody, bearer);
  ASSERT_EQ(registered.status, 200) << registered.body;
  EXPECT_EQ(rest::registerApplicationMasterResponseFromJson(rest::parseJson(registered.body))
                .maximumResourceCapability.memoryMb,
            4096);
  EXPECT_EQ(call("POST", base + "/register", registerBody, bearer).status, 409);

  auto badAsk = call("POST", base + "/allocate",
                     R"({"responseId": 0, "asks": [{"priority": 1, "numContainers": 1}]})", bearer);
  EXPECT_EQ(badAsk.status, 400);
  EXPECT_THAT(errorMessage(badAsk), HasSubstr("asks[0].resource"));
  auto notJson = call("POST", base + "/allocate", "{responseId", bearer);
  EXPECT_EQ(notJson.status, 400);

  rest::AllocateRequest ask;
  rest::ResourceRequest request;
  request.priority = 1;
  request.resource = rest::Resource{512, 1};
  request.numContainers = 2;
  ask.asks.push_back(request);
  auto allocated = call("POST", base + "/allocate", toJson(ask), bearer);
  ASSERT_EQ(allocated.status, 200) << allocated.body;
  const auto response = rest::allocateResponseFromJson(rest::parseJson(allocated.body));
  EXPECT_EQ(response.responseId, 1);
  ASSERT_EQ(response.allocatedContainers.size(), 2u);
  EXPECT_EQ(response.allocatedContainers[0].nodeId, nodeId);
  EXPECT_EQ(response.allocatedContainers[0].token,
            rest::containerToken(nodeSecret_, response.allocatedContainers[0].id));
  EXPECT_EQ(response.numClusterNodes, 1);

  auto report = call("GET", "/ws/v1/cluster/apps/" + app);
  ASSERT_EQ(report.status, 200);
  const auto appReport = rest::applicationReportFromJson(rest::parseJson(report.body));
  EXPECT_EQ(appReport.state, "RUNNING");
  EXPECT_EQ(appReport.runningContainers, 3);

  // Killing stops the AM at once with the node's secret.
  auto badState = call("PUT", "/ws/v1/cluster/apps/" + app + "/state", R"({"state": "RUNNING"})");
  EXPECT_EQ(badState.status, 400);
  EXPECT_THAT(errorMessage(badState), HasSubstr("'state'"));
  auto killed = call("PUT", "/ws/v1/cluster/apps/" + app + "/state", R"({"state": "KILLED"})");
  ASSERT_EQ(killed.status, 200) << killed.body;
  auto state = call("GET", "/ws/v1/cluster/apps/" + app + "/state");
  EXPECT_EQ(rest::appStateFromJson(rest::parseJson(state.body)).state, "KILLED");
  ASSERT_TRUE(eventually([&] { return !nodeManager_.deletes().empty(); }, kBound));
  EXPECT_EQ(nodeManager_.deletes().at(0).first, launch.containerId);
  EXPECT_EQ(nodeManager_.deletes().at(0).second, "Bearer " + nodeSecret_);
  EXPECT_EQ(call("POST", base + "/allocate", R"({"responseId": 1})", bearer).status, 409);
}

TEST_F(RmServerTest, AnAmWaitsForItsNodesFirstHeartbeatAndA503DoesNotUseUpTheAttempt) {
  const std::string nodeId = registerNode(/*heartbeat=*/false);
  const std::string app = submitApp();
  // Registered but not heartbeated yet: the node may not know its secret, so nothing goes there.
  auto waiting = call("GET", "/ws/v1/cluster/apps/" + app);
  const auto waitingReport = rest::applicationReportFromJson(rest::parseJson(waiting.body));
  EXPECT_EQ(waitingReport.state, "ACCEPTED");
  EXPECT_THAT(waitingReport.diagnostics, HasSubstr("no node manager is registered and ready"));
  EXPECT_TRUE(nodeManager_.launches().empty());

  // The node refuses the first two launches with 503; the RM places the AM again after each
  // of the node's heartbeats, and the application is still on its first attempt.
  nodeManager_.refuseNextLaunches(2);
  const rest::HttpHeaders nodeAuth{{"Authorization", "Bearer " + nodeSecret_}};
  ASSERT_TRUE(eventually(
      [&] {
        call("POST", "/ws/v1/nm/" + nodeId + "/heartbeat", R"({"containers": []})", nodeAuth);
        return !nodeManager_.launches().empty();
      },
      kBound));
  EXPECT_EQ(nodeManager_.refused(), 2);
  const rest::ContainerLaunchRequest launch = nodeManager_.launches().at(0);
  EXPECT_EQ(launch.environment.at("TIDE_APP_ATTEMPT_ID"), "appattempt_1700000000000_0001_000001");
  EXPECT_EQ(launch.containerId, "container_1700000000000_0001_01_000001");
  auto report = call("GET", "/ws/v1/cluster/apps/" + app);
  const auto appReport = rest::applicationReportFromJson(rest::parseJson(report.body));
  EXPECT_EQ(appReport.state, "ACCEPTED");
  EXPECT_EQ(appReport.currentAppAttemptId, "appattempt_1700000000000_0001_000001");
  EXPECT_EQ(appReport.runningContainers, 1);
}

TEST_F(RmServerTest, ClientApiErrors) {
  auto unknown = call("GET", "/ws/v1/cluster/apps/application_1_9999");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(errorMessage(unknown), HasSubstr("application_1_9999"));
  EXPECT_EQ(
      call("PUT", "/ws/v1/cluster/apps/application_1_9999/state", R"({"state":"KILLED"})").status,
      404);
  auto noSpec = call("POST", "/ws/v1/cluster/apps",
                     R"({"application-id": "a", "resource": {"memory": 1, "vCores": 1}})");
  EXPECT_EQ(noSpec.status, 400);
  EXPECT_THAT(errorMessage(noSpec), HasSubstr("'am-container-spec'"));
  auto badMemory = call("POST", "/ws/v1/cluster/apps", R"({"application-id": "a",
      "am-container-spec": {"commands": {"command": "x"}}, "resource": {"memory": "lots",
      "vCores": 1}})");
  EXPECT_EQ(badMemory.status, 400);
  EXPECT_THAT(errorMessage(badMemory), HasSubstr("'resource.memory'"));
  auto badHeartbeat = call("POST", "/ws/v1/nm/h:1/heartbeat", R"({"containers": [{}]})");
  EXPECT_EQ(badHeartbeat.status, 400);
  EXPECT_THAT(errorMessage(badHeartbeat), HasSubstr("containers[0]"));
  auto unregistered = call("POST", "/ws/v1/nm/h:1/heartbeat", R"({"containers": []})");
  EXPECT_EQ(unregistered.status, 200);
  EXPECT_TRUE(rest::nodeHeartbeatResponseFromJson(rest::parseJson(unregistered.body)).reRegister);

  const std::string nodeId = registerNode();
  auto impostor = call("POST", "/ws/v1/nm/" + nodeId + "/heartbeat", R"({"containers": []})",
                       {{"Authorization", "Bearer not-the-secret"}});
  EXPECT_EQ(impostor.status, 401);
  auto genuine = call("POST", "/ws/v1/nm/" + nodeId + "/heartbeat", R"({"containers": []})",
                      {{"Authorization", "Bearer " + nodeSecret_}});
  EXPECT_EQ(genuine.status, 200) << genuine.body;

  const std::string app = submitApp();
  auto twice = call("POST", "/ws/v1/cluster/apps", R"({"application-id": ")" + app + R"(",
      "am-container-spec": {"commands": {"command": "x"}}, "resource": {"memory": 1,
      "vCores": 1}})");
  EXPECT_EQ(twice.status, 409);

  auto list = call("GET", "/ws/v1/cluster/apps?states=accepted");
  EXPECT_EQ(rest::applicationReportsFromJson(rest::parseJson(list.body)).size(), 1u);
  auto none = call("GET", "/ws/v1/cluster/apps?states=RUNNING");
  EXPECT_TRUE(rest::applicationReportsFromJson(rest::parseJson(none.body)).empty());
  auto metrics = call("GET", "/ws/v1/cluster/metrics");
  EXPECT_EQ(rest::clusterMetricsFromJson(rest::parseJson(metrics.body)).appsPending, 1);
  auto info = call("GET", "/ws/v1/cluster/info");
  EXPECT_EQ(rest::clusterInfoFromJson(rest::parseJson(info.body)).id, 1700000000000);
}

// ---- bounded state (issue 17.5)

rest::ApplicationSubmission smallSubmission(const std::string& id) {
  rest::ApplicationSubmission submission;
  submission.applicationId = id;
  submission.applicationName = "test";
  submission.command = "sleep 100";
  submission.resource = rest::Resource{512, 1};
  return submission;
}

TEST_F(RmServerTest, OversizedSubmissionFieldsAre413NamingTheField) {
  const auto newId = [&] {
    return rest::newApplicationResponseFromJson(
               rest::parseJson(call("POST", "/ws/v1/cluster/apps/new-application").body))
        .applicationId;
  };
  rest::ApplicationSubmission name = smallSubmission(newId());
  name.applicationName = std::string(2000, 'n');
  rest::ApplicationSubmission command = smallSubmission(newId());
  command.command = std::string(100 * 1024, 'c');
  rest::ApplicationSubmission value = smallSubmission(newId());
  value.environment = {{"BIG", std::string(100 * 1024, 'v')}};
  rest::ApplicationSubmission entries = smallSubmission(newId());
  for (int i = 0; i < 300; ++i) entries.environment.push_back({"K" + std::to_string(i), "v"});
  const std::vector<std::pair<rest::ApplicationSubmission, std::string>> cases{
      {name, "application-name is 2000 bytes"},
      {command, "am-container-spec.commands.command"},
      {value, "am-container-spec.environment value of BIG"},
      {entries, "am-container-spec.environment has 300 entries"}};
  for (const auto& [submission, field] : cases) {
    const auto response = call("POST", "/ws/v1/cluster/apps", toJson(submission));
    EXPECT_EQ(response.status, 413) << field;
    EXPECT_THAT(errorMessage(response), HasSubstr(field));
  }
}

// The attack of issue 17: 40 submissions with 1 MB names grew tide-rm by 200 MB and made
// GET /apps return 41 MB. Each is refused now, and the list stays small.
TEST_F(RmServerTest, FortySubmissionsWithOneMegabyteNamesAreRefused) {
  for (int i = 0; i < 40; ++i) {
    const std::string id =
        rest::newApplicationResponseFromJson(
            rest::parseJson(call("POST", "/ws/v1/cluster/apps/new-application").body))
            .applicationId;
    rest::ApplicationSubmission submission = smallSubmission(id);
    submission.applicationName = std::string(1000 * 1000, 'x');
    const auto response = call("POST", "/ws/v1/cluster/apps", toJson(submission));
    ASSERT_EQ(response.status, 413) << i;
    EXPECT_THAT(errorMessage(response), HasSubstr("application-name"));
  }
  const auto list = call("GET", "/ws/v1/cluster/apps");
  EXPECT_EQ(list.status, 200);
  EXPECT_LT(list.body.size(), 100u * 1024) << "the list holds no megabyte names";
}

TEST_F(RmServerTest, ListsPageAndRejectUnknownFilterValues) {
  registerNode();
  const std::string a = submitApp(), b = submitApp(), c = submitApp();
  const auto ids = [&](const std::string& query) {
    const auto response = call("GET", "/ws/v1/cluster/apps" + query);
    EXPECT_EQ(response.status, 200) << query << ": " << response.body;
    std::vector<std::string> result;
    for (const auto& report : rest::applicationReportsFromJson(rest::parseJson(response.body))) {
      result.push_back(report.id);
    }
    return result;
  };
  EXPECT_EQ(ids(""), (std::vector<std::string>{a, b, c}));
  EXPECT_EQ(ids("?limit=2"), (std::vector<std::string>{a, b}));
  EXPECT_EQ(ids("?offset=1&limit=1"), (std::vector<std::string>{b}));
  EXPECT_EQ(ids("?offset=5"), (std::vector<std::string>{}));
  EXPECT_EQ(ids("?states=running,accepted&limit=3").size(), 3u);
  for (const auto& [query, named] : std::vector<std::pair<std::string, std::string>>{
           {"?states=BOGUS", "unknown application state 'BOGUS'"},
           {"?states=RUNNING,nope", "'nope'"},
           {"?limit=abc", "limit='abc'"},
           {"?limit=0", "limit=0"},
           {"?offset=-1", "offset='-1'"}}) {
    const auto response = call("GET", "/ws/v1/cluster/apps" + query);
    EXPECT_EQ(response.status, 400) << query;
    EXPECT_THAT(errorMessage(response), HasSubstr(named)) << query;
  }
  const auto nodes = call("GET", "/ws/v1/cluster/nodes?limit=x");
  EXPECT_EQ(nodes.status, 400);
  EXPECT_EQ(call("GET", "/ws/v1/cluster/nodes?limit=1").status, 200);
}

TEST_F(RmServerTest, DuplicateJsonKeysAre400NamingTheKey) {
  const std::string id =
      rest::newApplicationResponseFromJson(
          rest::parseJson(call("POST", "/ws/v1/cluster/apps/new-application").body))
          .applicationId;
  std::string body = toJson(smallSubmission(id));
  // A second application-name after the first.
  body.insert(body.find('{') + 1, R"("application-name": "other", )");
  const auto response = call("POST", "/ws/v1/cluster/apps", body);
  EXPECT_EQ(response.status, 400) << response.body;
  EXPECT_THAT(errorMessage(response), HasSubstr("duplicate key 'application-name'"));
}

// A node manager heartbeats every second over one kept-alive connection: the RM keeps an idle
// connection open longer than that, so that it never closes one just as the next heartbeat goes
// out on it (which failed that heartbeat).
TEST_F(RmServerTest, AConnectionIdleLongerThanAHeartbeatIntervalIsStillReused) {
  ASSERT_EQ(call("GET", "/ws/v1/cluster/info").status, 200);
  // Idle on purpose: longer than the heartbeat interval (and than HttpServer's default 1 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const rest::HttpResponse again = call("GET", "/ws/v1/cluster/info");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.newConnections, 0) << "the RM closed the idle connection";
}

// One GET on a raw socket kept alive (HTTP/1.1); its status, with the whole answer read so that
// the next request on the socket starts clean.
int getOnSocket(int sock, const std::string& path, const std::string& token) {
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n\r\n";
  if (::send(sock, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return -1;
  }
  std::string answer;
  char buffer[4096];
  size_t headerEnd = std::string::npos;
  size_t length = 0;
  while (headerEnd == std::string::npos || answer.size() < headerEnd + 4 + length) {
    const ssize_t n = ::recv(sock, buffer, sizeof buffer, 0);  // SO_RCVTIMEO bounds it
    if (n <= 0) return -1;
    answer.append(buffer, static_cast<size_t>(n));
    headerEnd = answer.find("\r\n\r\n");
    const size_t field = answer.find("Content-Length: ");
    if (headerEnd != std::string::npos && field != std::string::npos && field < headerEnd) {
      length = std::stoul(answer.substr(field + 16));
    }
  }
  return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(answer.substr(9, 3)) : -1;
}

// Every node manager and AM keeps a connection open: tide-rm serves more than the 1,024 an
// HTTP server allows by default, all at once (issue 16: tide-rm under SLS-style load).
TEST(RmServerConnectionsTest, ServesMoreThan1024KeptAliveConnectionsAtOnce) {
  constexpr int kConnections = 1100;
  if (raiseOpenFilesLimit() < 2 * kConnections + 512) {
    GTEST_SKIP() << "the open-files limit is too low for " << kConnections << " connections";
  }
  ResourceManagerServerOptions options;
  options.config.port = 0;
  options.serverThreads = 4;
  ResourceManagerServer server(options);
  server.start();
  std::vector<int> sockets;
  for (int i = 0; i < kConnections; ++i) {
    // From 200 addresses, as from as many hosts (each far below the per-address limit).
    const int sock = testing_support::connectTcp("127.0.0.1", server.port(),
                                                 "127.0.1." + std::to_string(i % 200 + 1));
    ASSERT_GE(sock, 0) << "connection " << i << ": " << std::strerror(errno);
    sockets.push_back(sock);
    timeval timeout{10, 0};
    ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ASSERT_EQ(getOnSocket(sock, "/ws/v1/cluster/info", server.clusterSecret()), 200)
        << "connection " << i;
  }
  // All of them are still open: each answers a second request.
  int answered = 0;
  for (int sock : sockets) {
    answered += getOnSocket(sock, "/ws/v1/cluster/metrics", server.clusterSecret()) == 200;
    ::close(sock);
  }
  EXPECT_EQ(answered, kConnections);
}

}  // namespace
}  // namespace tide::rm
