// The node manager's REST API in process: tokens, field errors, conflicts, unknown containers.

#include "deploy/nm/node_manager_server.h"

#include <gtest/gtest.h>

#include <memory>

#include "rest/http_client.h"
#include "rest/json.h"
#include "tests/nm/nm_test_util.h"
#include "tests/support/temp_dir.h"

namespace tide::nm {
namespace {

using testing::launchRequest;

constexpr char kSecret[] = "node-secret-for-tests";

class NodeManagerServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    containers_ = std::make_unique<ContainerManager>(
        testing::managerOptions(dir_.path(), MemoryEnforcement::kOff));
    containers_->start();
    identity_.set("127.0.0.1:1", kSecret);
    rest::HttpServerOptions serverOptions;
    serverOptions.log = [](const std::string&) {};
    server_ = std::make_unique<NodeManagerServer>(*containers_, identity_, serverOptions);
    server_->start();
    rest::HttpClientOptions clientOptions;
    clientOptions.retry.maxAttempts = 1;
    client_ = std::make_unique<rest::HttpClient>(server_->baseUrl(), clientOptions);
  }

  void TearDown() override {
    client_.reset();  // closes its kept-alive connection, which would hold stop() up
    server_->stop();
    containers_.reset();
  }

  static rest::HttpHeaders tokenFor(const std::string& containerId) {
    return {{NodeManagerServer::kTokenHeader, rest::containerToken(kSecret, containerId)}};
  }
  static rest::HttpHeaders asResourceManager() {
    return {{"Authorization", std::string("Bearer ") + kSecret}};
  }

  rest::HttpResponse post(const std::string& body, rest::HttpHeaders headers) {
    headers.emplace_back("Content-Type", "application/json");
    return client_->request("POST", "/ws/v1/node/containers", body, headers);
  }

  // The message of a JSON error answer, checking its shape on the way.
  static std::string errorMessage(const rest::HttpResponse& response) {
    const rapidjson::Document body = rest::parseJson(response.body);
    EXPECT_EQ(body["error"]["code"].GetInt(), response.status);
    return body["error"]["message"].GetString();
  }

  testing_support::TempDir dir_;
  NodeIdentity identity_;
  std::unique_ptr<ContainerManager> containers_;
  std::unique_ptr<NodeManagerServer> server_;
  std::unique_ptr<rest::HttpClient> client_;
};

TEST_F(NodeManagerServerTest, LaunchWithTheRightTokenStartsTheContainer) {
  const auto response = post(rest::toJson(launchRequest("c1", "sleep 60")), tokenFor("c1"));
  ASSERT_EQ(response.status, 201) << response.body;
  const rest::ContainerReport report =
      rest::containerReportFromJson(rest::parseJson(response.body));
  EXPECT_EQ(report.containerId, "c1");
  EXPECT_EQ(report.state, "RUNNING");
  EXPECT_GT(report.pid, 0);
}

TEST_F(NodeManagerServerTest, LaunchAcceptsTheTokenInTheBodyAndTheRmsBearerSecret) {
  rest::ContainerLaunchRequest inBody = launchRequest("b1", "sleep 60");
  inBody.token = rest::containerToken(kSecret, "b1");
  EXPECT_EQ(post(rest::toJson(inBody), {}).status, 201);
  EXPECT_EQ(post(rest::toJson(launchRequest("b2", "sleep 60")), asResourceManager()).status, 201);
}

TEST_F(NodeManagerServerTest, LaunchWithoutOrWithAWrongTokenIs401) {
  const std::string body = rest::toJson(launchRequest("c2", "sleep 60"));
  const auto missing = post(body, {});
  EXPECT_EQ(missing.status, 401);
  EXPECT_NE(errorMessage(missing).find("X-Tide-Container-Token"), std::string::npos);

  const auto otherContainers = post(body, tokenFor("c3"));
  EXPECT_EQ(otherContainers.status, 401);
  EXPECT_NE(errorMessage(otherContainers).find("invalid container token"), std::string::npos);

  const auto otherSecret =
      post(body, {{NodeManagerServer::kTokenHeader, rest::containerToken("another-secret", "c2")}});
  EXPECT_EQ(otherSecret.status, 401);
  EXPECT_EQ(post(body, {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_FALSE(containers_->report("c2").has_value());
}

TEST_F(NodeManagerServerTest, ABadBodyIs400NamingTheField) {
  rapidjson::Document body = rest::parseJson(rest::toJson(launchRequest("c4", "true")));
  body.RemoveMember("command");
  const auto noCommand = post(rest::toJsonString(body), tokenFor("c4"));
  EXPECT_EQ(noCommand.status, 400);
  EXPECT_NE(errorMessage(noCommand).find("'command'"), std::string::npos) << noCommand.body;

  const auto noMemory =
      post(rest::toJson(launchRequest("c5", "true", /*memoryMb=*/0)), tokenFor("c5"));
  EXPECT_EQ(noMemory.status, 400);
  EXPECT_NE(errorMessage(noMemory).find("'resource.memory'"), std::string::npos);

  const auto badId = post(rest::toJson(launchRequest("../c6", "true")), tokenFor("../c6"));
  EXPECT_EQ(badId.status, 400);
  EXPECT_NE(errorMessage(badId).find("'containerId'"), std::string::npos);

  EXPECT_EQ(post("{not json", tokenFor("c7")).status, 400);
}

TEST_F(NodeManagerServerTest, ADuplicateContainerIdIs409) {
  const std::string body = rest::toJson(launchRequest("dup", "sleep 60"));
  ASSERT_EQ(post(body, tokenFor("dup")).status, 201);
  const auto again = post(body, tokenFor("dup"));
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(errorMessage(again).find("already exists"), std::string::npos);
}

TEST_F(NodeManagerServerTest, GetAndDeleteNeedTheContainersTokenOrTheNodeSecret) {
  ASSERT_EQ(post(rest::toJson(launchRequest("g1", "sleep 60")), tokenFor("g1")).status, 201);
  const std::string path = "/ws/v1/node/containers/g1";
  EXPECT_EQ(client_->request("GET", path).status, 401);
  EXPECT_EQ(client_->request("GET", path, "", tokenFor("g2")).status, 401);
  EXPECT_EQ(client_->request("DELETE", path, "", tokenFor("g2")).status, 401);

  const auto byToken = client_->request("GET", path, "", tokenFor("g1"));
  ASSERT_EQ(byToken.status, 200);
  EXPECT_EQ(rest::containerReportFromJson(rest::parseJson(byToken.body)).state, "RUNNING");
  EXPECT_EQ(client_->request("GET", path, "", asResourceManager()).status, 200);

  const auto deleted = client_->request("DELETE", path, "", tokenFor("g1"));
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  const rest::ContainerReport report = rest::containerReportFromJson(rest::parseJson(deleted.body));
  EXPECT_EQ(report.state, "COMPLETE");
  EXPECT_EQ(report.exitStatus, rest::exit_status::kKilledByAppMaster);
  EXPECT_EQ(report.diagnostics, "stopped on request");
}

TEST_F(NodeManagerServerTest, AnUnknownContainerIs404) {
  const std::string path = "/ws/v1/node/containers/nobody";
  const auto get = client_->request("GET", path, "", asResourceManager());
  EXPECT_EQ(get.status, 404);
  EXPECT_NE(errorMessage(get).find("unknown container nobody"), std::string::npos);
  EXPECT_EQ(client_->request("GET", path, "", tokenFor("nobody")).status, 404);
  EXPECT_EQ(client_->request("DELETE", path, "", asResourceManager()).status, 404);
}

TEST_F(NodeManagerServerTest, ListingShowsAllToTheRmAndOnlyItsOwnToAContainer) {
  ASSERT_EQ(post(rest::toJson(launchRequest("l1", "sleep 60")), tokenFor("l1")).status, 201);
  ASSERT_EQ(post(rest::toJson(launchRequest("l2", "sleep 60")), tokenFor("l2")).status, 201);
  EXPECT_EQ(client_->request("GET", "/ws/v1/node/containers").status, 401);

  const auto all = client_->request("GET", "/ws/v1/node/containers", "", asResourceManager());
  ASSERT_EQ(all.status, 200);
  const rapidjson::Document allBody = rest::parseJson(all.body);
  ASSERT_EQ(allBody["containers"].Size(), 2u);
  EXPECT_EQ(rest::containerReportFromJson(allBody["containers"][0]).containerId, "l1");

  const auto own = client_->request("GET", "/ws/v1/node/containers", "", tokenFor("l2"));
  ASSERT_EQ(own.status, 200);
  const rapidjson::Document ownBody = rest::parseJson(own.body);
  ASSERT_EQ(ownBody["containers"].Size(), 1u);
  EXPECT_EQ(rest::containerReportFromJson(ownBody["containers"][0]).containerId, "l2");
}

TEST_F(NodeManagerServerTest, InfoNeedsNoAuthAndDescribesTheNode) {
  const auto info = client_->request("GET", "/ws/v1/node/info");
  ASSERT_EQ(info.status, 200);
  const rapidjson::Document body = rest::parseJson(info.body);
  EXPECT_EQ(std::string(body["nodeId"].GetString()), "127.0.0.1:1");
  EXPECT_TRUE(body["registered"].GetBool());
  EXPECT_EQ(body["capability"]["memory"].GetInt64(), 4096);
  EXPECT_EQ(std::string(body["memoryEnforcement"].GetString()), "off");
}

TEST(NodeManagerServerBeforeRegistrationTest, ContainerCallsAre503UntilTheNodeRegistered) {
  testing_support::TempDir dir;
  ContainerManagerOptions options;
  options.workDir = (dir.path() / "work").string();
  options.memoryEnforcement = MemoryEnforcement::kOff;
  ContainerManager containers(options);
  containers.start();
  NodeIdentity identity;
  rest::HttpServerOptions serverOptions;
  serverOptions.log = [](const std::string&) {};
  NodeManagerServer server(containers, identity, serverOptions);
  server.start();
  rest::HttpClientOptions clientOptions;
  clientOptions.retry.maxAttempts = 1;
  rest::HttpClient client(server.baseUrl(), clientOptions);
  const auto response =
      client.request("POST", "/ws/v1/node/containers", rest::toJson(launchRequest("early", "true")),
                     {{NodeManagerServer::kTokenHeader, "x"}});
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(client.request("GET", "/ws/v1/node/containers/early").status, 503);
  server.stop();
}

}  // namespace
}  // namespace tide::nm
