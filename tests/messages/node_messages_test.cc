// The node protocol's codecs (rest/messages/node.h): every message survives a round trip, and
// every decoder refuses a bad field by naming it.

#include <gtest/gtest.h>

#include <string>

#include "rest/json.h"
#include "rest/messages/node.h"
#include "tests/support/cases.h"

namespace tide::rest {
namespace {

// The path of the field a decoder refused, or "" when it accepted the text.
template <typename Decode>
std::string refusedField(const std::string& json, Decode decode) {
  const rapidjson::Document document = parseJson(json);
  try {
    decode(document);
  } catch (const JsonFieldError& error) {
    return error.fieldPath().empty() ? "<root>" : error.fieldPath();
  }
  return "";
}

TEST(NodeMessagesTest, ResourceRoundTrips) {
  const Resource resource{2048, 3};
  EXPECT_EQ(toJson(resource), R"({"memory":2048,"vCores":3})");
  const Resource decoded = resourceFromJson(parseJson(toJson(resource)));
  EXPECT_EQ(decoded.memoryMb, 2048);
  EXPECT_EQ(decoded.vCores, 3);
}

TEST(NodeMessagesTest, ResourceFieldErrorsCarryThePathGiven) {
  auto decode = [](const rapidjson::Value& json) { resourceFromJson(json, "capability"); };
  EXPECT_EQ(refusedField(R"({"memory":-1,"vCores":1})", decode), "capability.memory");
  EXPECT_EQ(refusedField(R"({"memory":"1g","vCores":1})", decode), "capability.memory");
  EXPECT_EQ(refusedField(R"({"memory":1})", decode), "capability.vCores");
  EXPECT_EQ(refusedField(R"({"memory":1,"vCores":-2})", decode), "capability.vCores");
  EXPECT_EQ(refusedField(R"([1,2])", decode), "capability");
}

TEST(NodeMessagesTest, NodeRegistrationRoundTrips) {
  const NodeRegistration registration{"10.0.0.7", 8042, {16384, 8}};
  const NodeRegistration decoded = nodeRegistrationFromJson(parseJson(toJson(registration)));
  EXPECT_EQ(decoded.host, "10.0.0.7");
  EXPECT_EQ(decoded.port, 8042);
  EXPECT_EQ(decoded.capability.memoryMb, 16384);
  EXPECT_EQ(decoded.capability.vCores, 8);
}

TEST(NodeMessagesTest, NodeRegistrationNamesBadFields) {
  auto decode = [](const rapidjson::Value& json) { nodeRegistrationFromJson(json); };
  const std::string capability = R"("capability":{"memory":1024,"vCores":2})";
  EXPECT_EQ(refusedField(R"({"port":1,)" + capability + "}", decode), "host");
  EXPECT_EQ(refusedField(R"({"host":"","port":1,)" + capability + "}", decode), "host");
  EXPECT_EQ(refusedField(R"({"host":"h","port":0,)" + capability + "}", decode), "port");
  EXPECT_EQ(refusedField(R"({"host":"h","port":70000,)" + capability + "}", decode), "port");
  EXPECT_EQ(refusedField(R"({"host":"h","port":1})", decode), "capability");
  EXPECT_EQ(
      refusedField(R"({"host":"h","port":1,"capability":{"memory":true,"vCores":2}})", decode),
      "capability.memory");
  EXPECT_EQ(refusedField(R"("text")", decode), "<root>");
}

TEST(NodeMessagesTest, NodeRegistrationResponseRoundTrips) {
  const NodeRegistrationResponse response{"127.0.0.1:8042", "s3cret", 250, "d1g3st"};
  const NodeRegistrationResponse decoded =
      nodeRegistrationResponseFromJson(parseJson(toJson(response)));
  EXPECT_EQ(decoded.nodeId, "127.0.0.1:8042");
  EXPECT_EQ(decoded.nodeSecret, "s3cret");
  EXPECT_EQ(decoded.heartbeatIntervalMs, 250);
  EXPECT_EQ(decoded.logReaderDigest, "d1g3st");
}

TEST(NodeMessagesTest, NodeRegistrationResponseDefaultsAndErrors) {
  const NodeRegistrationResponse defaulted =
      nodeRegistrationResponseFromJson(parseJson(R"({"nodeId":"n","nodeSecret":"s"})"));
  EXPECT_EQ(defaulted.heartbeatIntervalMs, 1000);
  EXPECT_EQ(defaulted.logReaderDigest, "");  // from a tide-rm that authenticates nobody
  auto decode = [](const rapidjson::Value& json) { nodeRegistrationResponseFromJson(json); };
  EXPECT_EQ(refusedField(R"({"nodeSecret":"s"})", decode), "nodeId");
  EXPECT_EQ(refusedField(R"({"nodeId":"n"})", decode), "nodeSecret");
  EXPECT_EQ(refusedField(R"({"nodeId":"n","nodeSecret":"s","heartbeatIntervalMs":0})", decode),
            "heartbeatIntervalMs");
  EXPECT_EQ(refusedField(R"({"nodeId":"n","nodeSecret":"s","heartbeatIntervalMs":"1s"})", decode),
            "heartbeatIntervalMs");
}

TEST(NodeMessagesTest, NodeHeartbeatRoundTrips) {
  NodeHeartbeat heartbeat;
  heartbeat.containers.push_back({"c1", "RUNNING", 0, "", {1024, 2}});
  heartbeat.containers.push_back(
      {"c2", "COMPLETE", -104, "killed for exceeding its memory", {512, 1}});
  const NodeHeartbeat decoded = nodeHeartbeatFromJson(parseJson(toJson(heartbeat)));
  ASSERT_EQ(decoded.containers.size(), 2u);
  EXPECT_EQ(decoded.containers[0].containerId, "c1");
  EXPECT_EQ(decoded.containers[0].state, "RUNNING");
  EXPECT_EQ(decoded.containers[1].containerId, "c2");
  EXPECT_EQ(decoded.containers[1].state, "COMPLETE");
  EXPECT_EQ(decoded.containers[1].exitStatus, exit_status::kKilledExceededPmem);
  EXPECT_EQ(decoded.containers[1].diagnostics, "killed for exceeding its memory");
  EXPECT_EQ(decoded.containers[0].resource.memoryMb, 1024);
  EXPECT_EQ(decoded.containers[0].resource.vCores, 2);

  EXPECT_TRUE(nodeHeartbeatFromJson(parseJson(toJson(NodeHeartbeat{}))).containers.empty());
}

TEST(NodeMessagesTest, NodeHeartbeatNamesBadFields) {
  auto decode = [](const rapidjson::Value& json) { nodeHeartbeatFromJson(json); };
  EXPECT_EQ(refusedField(R"({})", decode), "containers");
  EXPECT_EQ(refusedField(R"({"containers":{}})", decode), "containers");
  EXPECT_EQ(
      refusedField(
          R"({"containers":[{"containerId":"a","state":"RUNNING"},{"containerId":"b","state":"DONE"}]})",
          decode),
      "containers[1].state");
  EXPECT_EQ(refusedField(R"({"containers":[{"state":"RUNNING"}]})", decode),
            "containers[0].containerId");
  EXPECT_EQ(
      refusedField(R"({"containers":[{"containerId":"a","state":"COMPLETE","exitStatus":"3"}]})",
                   decode),
      "containers[0].exitStatus");
}

TEST(NodeMessagesTest, NodeHeartbeatResponseRoundTrips) {
  const NodeHeartbeatResponse response{{"c1", "c7"}, true};
  EXPECT_EQ(toJson(response), R"({"containersToStop":["c1","c7"],"reRegister":true})");
  const NodeHeartbeatResponse decoded = nodeHeartbeatResponseFromJson(parseJson(toJson(response)));
  EXPECT_EQ(decoded.containersToStop, (std::vector<std::string>{"c1", "c7"}));
  EXPECT_TRUE(decoded.reRegister);

  const NodeHeartbeatResponse empty = nodeHeartbeatResponseFromJson(parseJson("{}"));
  EXPECT_TRUE(empty.containersToStop.empty());
  EXPECT_FALSE(empty.reRegister);
}

TEST(NodeMessagesTest, NodeHeartbeatResponseNamesBadFields) {
  auto decode = [](const rapidjson::Value& json) { nodeHeartbeatResponseFromJson(json); };
  EXPECT_EQ(refusedField(R"({"containersToStop":["a",3]})", decode), "containersToStop[1]");
  EXPECT_EQ(refusedField(R"({"containersToStop":"a"})", decode), "containersToStop");
  EXPECT_EQ(refusedField(R"({"reRegister":"yes"})", decode), "reRegister");
}

ContainerLaunchRequest sampleLaunchRequest() {
  ContainerLaunchRequest request;
  request.containerId = "container_1_0001_01_000002";
  request.applicationId = "application_1_0001";
  request.token = "abc";
  request.command = "exec ./executor --id 2 > log 2>&1";
  request.environment = {{"JAVA_HOME", "/usr/lib/jvm"}, {"QUOTE", "a \"b\" \\ c"}};
  request.resource = {1536, 2};
  return request;
}

TEST(NodeMessagesTest, ContainerLaunchRequestRoundTrips) {
  const ContainerLaunchRequest request = sampleLaunchRequest();
  const ContainerLaunchRequest decoded = containerLaunchRequestFromJson(parseJson(toJson(request)));
  EXPECT_EQ(decoded.containerId, request.containerId);
  EXPECT_EQ(decoded.applicationId, request.applicationId);
  EXPECT_EQ(decoded.token, "abc");
  EXPECT_EQ(decoded.command, request.command);
  EXPECT_EQ(decoded.environment, request.environment);
  EXPECT_EQ(decoded.resource.memoryMb, 1536);
  EXPECT_EQ(decoded.resource.vCores, 2);
}

TEST(NodeMessagesTest, ContainerLaunchRequestOptionalFields) {
  const ContainerLaunchRequest decoded = containerLaunchRequestFromJson(parseJson(
      R"({"containerId":"c","applicationId":"a","command":"true","resource":{"memory":1,"vCores":1}})"));
  EXPECT_EQ(decoded.token, "");
  EXPECT_TRUE(decoded.environment.empty());
}

TEST(NodeMessagesTest, ContainerLaunchRequestNamesBadFields) {
  auto decode = [](const rapidjson::Value& json) { containerLaunchRequestFromJson(json); };
  auto with = [](const std::string& replaced, const std::string& value) {
    ContainerLaunchRequest request = sampleLaunchRequest();
    rapidjson::Document document = parseJson(toJson(request));
    if (value.empty()) {
      document.RemoveMember(replaced.c_str());
    } else {
      rapidjson::Document replacement = parseJson(value);
      document[replaced.c_str()].CopyFrom(replacement, document.GetAllocator());
    }
    return toJsonString(document);
  };
  EXPECT_EQ(refusedField(with("containerId", ""), decode), "containerId");
  EXPECT_EQ(refusedField(with("containerId", R"("")"), decode), "containerId");
  EXPECT_EQ(refusedField(with("applicationId", "7"), decode), "applicationId");
  EXPECT_EQ(refusedField(with("command", ""), decode), "command");
  EXPECT_EQ(refusedField(with("command", R"("")"), decode), "command");
  EXPECT_EQ(refusedField(with("token", "[]"), decode), "token");
  EXPECT_EQ(refusedField(with("environment", R"({"A":1})"), decode), "environment.A");
  EXPECT_EQ(refusedField(with("environment", R"({"A=B":"x"})"), decode), "environment.A=B");
  EXPECT_EQ(refusedField(with("environment", R"(["A"])"), decode), "environment");
  EXPECT_EQ(refusedField(with("resource", ""), decode), "resource");
  EXPECT_EQ(refusedField(with("resource", R"({"memory":64})"), decode), "resource.vCores");
}

TEST(NodeMessagesTest, ContainerReportRoundTrips) {
  ContainerReport report;
  report.containerId = "c9";
  report.applicationId = "app";
  report.state = "COMPLETE";
  report.exitStatus = exit_status::kKilledByAppMaster;
  report.diagnostics = "stopped on request";
  report.pid = 4242;
  report.resource = {256, 1};
  report.workDir = "/tmp/nm/app/c9";
  report.memoryUsedMb = 17;
  const ContainerReport decoded = containerReportFromJson(parseJson(toJson(report)));
  EXPECT_EQ(decoded.containerId, "c9");
  EXPECT_EQ(decoded.applicationId, "app");
  EXPECT_EQ(decoded.state, "COMPLETE");
  EXPECT_EQ(decoded.exitStatus, -105);
  EXPECT_EQ(decoded.diagnostics, "stopped on request");
  EXPECT_EQ(decoded.pid, 4242);
  EXPECT_EQ(decoded.resource.memoryMb, 256);
  EXPECT_EQ(decoded.resource.vCores, 1);
  EXPECT_EQ(decoded.workDir, "/tmp/nm/app/c9");
  EXPECT_EQ(decoded.memoryUsedMb, 17);
}

TEST(NodeMessagesTest, ContainerReportNamesBadFields) {
  auto decode = [](const rapidjson::Value& json) { containerReportFromJson(json); };
  EXPECT_EQ(refusedField(R"({"applicationId":"a","state":"RUNNING"})", decode), "containerId");
  EXPECT_EQ(refusedField(R"({"containerId":"c","applicationId":"a","state":"running"})", decode),
            "state");
  EXPECT_EQ(refusedField(R"({"containerId":"c","applicationId":"a","state":"RUNNING","pid":"1"})",
                         decode),
            "pid");
  EXPECT_EQ(
      refusedField(
          R"({"containerId":"c","applicationId":"a","state":"RUNNING","resource":{"memory":1}})",
          decode),
      "resource.vCores");
}

TEST(NodeMessagesTest, ContainerTokenIsHmacSha256InHex) {
  // RFC 4231-style known answer: HMAC-SHA256(key "key", "The quick brown fox ...").
  EXPECT_EQ(containerToken("key", "The quick brown fox jumps over the lazy dog"),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
}

TEST(NodeMessagesTest, ContainerTokenIsDeterministicAndDependsOnSecretAndContainer) {
  const std::string token = containerToken("secret-1", "container_1");
  EXPECT_EQ(token.size(), 64u);
  EXPECT_EQ(token, containerToken("secret-1", "container_1"));
  EXPECT_NE(token, containerToken("secret-2", "container_1"));
  EXPECT_NE(token, containerToken("secret-1", "container_2"));
}

TEST(NodeMessagesTest, SecretsEqualComparesWholeStrings) {
  testing_support::expectEachPair(secretsEqual, {{"abc", "abc", true},
                                                 {"", "", true},
                                                 {"abc", "abd", false},
                                                 {"abc", "ab", false},
                                                 {"ab", "abc", false},
                                                 {"", "a", false}});
}

}  // namespace
}  // namespace tide::rest
