// Codecs of the client API and AM protocol: round trips, YARN's field names, and decoder
// errors that name the bad field.

#include "rest/messages/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rest/json.h"

namespace tide::rest {
namespace {

using ::testing::HasSubstr;

// The field path a decoder names for `json`, or "" when it accepts it.
template <typename Decoder>
std::string badField(Decoder decode, const std::string& json) {
  const rapidjson::Document document = parseJson(json);
  try {
    decode(document);
  } catch (const JsonFieldError& error) {
    return error.fieldPath();
  }
  return "";
}

constexpr char kSubmission[] = R"({
  "application-id": "application_1_0001",
  "application-name": "wordcount",
  "queue": "default",
  "am-container-spec": {
    "commands": {"command": "tide-am --job wordcount"},
    "environment": {"entry": [{"key": "A", "value": "1"}, {"key": "B", "value": ""}]}
  },
  "resource": {"memory": 1024, "vCores": 1},
  "max-app-attempts": 3
})";

TEST(ClusterMessagesTest, SubmissionReadsYarnsFields) {
  const ApplicationSubmission submission = applicationSubmissionFromJson(parseJson(kSubmission));
  EXPECT_EQ(submission.applicationId, "application_1_0001");
  EXPECT_EQ(submission.applicationName, "wordcount");
  EXPECT_EQ(submission.command, "tide-am --job wordcount");
  ASSERT_EQ(submission.environment.size(), 2u);
  EXPECT_EQ(submission.environment[0], (std::pair<std::string, std::string>{"A", "1"}));
  EXPECT_EQ(submission.resource.memoryMb, 1024);
  EXPECT_EQ(submission.maxAppAttempts, 3);
  // Round trip.
  const ApplicationSubmission again = applicationSubmissionFromJson(parseJson(toJson(submission)));
  EXPECT_EQ(again.environment, submission.environment);
  EXPECT_EQ(again.command, submission.command);
  EXPECT_EQ(again.maxAppAttempts, 3);
}

TEST(ClusterMessagesTest, SubmissionCarriesTheHistoryUrlWhichMustBeHttp) {
  ApplicationSubmission submission = applicationSubmissionFromJson(parseJson(kSubmission));
  EXPECT_EQ(submission.historyUrl, "");
  submission.historyUrl = "http://127.0.0.1:18080/history/application_1_0001";
  EXPECT_EQ(applicationSubmissionFromJson(parseJson(toJson(submission))).historyUrl,
            submission.historyUrl);
  auto decode = [](const rapidjson::Value& v) { applicationSubmissionFromJson(v); };
  EXPECT_EQ(badField(decode, R"({"application-id": "a",
                                 "am-container-spec": {"commands": {"command": "x"}},
                                 "resource": {"memory": 5, "vCores": 1},
                                 "history-url": "javascript:alert"})"),
            "history-url");
}

TEST(ClusterMessagesTest, SubmissionErrorsNameTheField) {
  auto decode = [](const rapidjson::Value& v) { applicationSubmissionFromJson(v); };
  EXPECT_EQ(badField(decode, R"({"am-container-spec": {}, "resource": {}})"), "application-id");
  EXPECT_EQ(badField(decode, R"({"application-id": "a", "resource": {"memory": 1, "vCores": 1}})"),
            "am-container-spec");
  EXPECT_EQ(badField(decode, R"({"application-id": "a", "am-container-spec": {"commands": {}},
                                 "resource": {"memory": 1, "vCores": 1}})"),
            "am-container-spec.commands.command");
  EXPECT_EQ(badField(decode, R"({"application-id": "a",
                                 "am-container-spec": {"commands": {"command": "x"},
                                   "environment": {"entry": [{"key": "A", "value": 3}]}},
                                 "resource": {"memory": 1, "vCores": 1}})"),
            "am-container-spec.environment.entry[0].value");
  EXPECT_EQ(badField(decode, R"({"application-id": "a",
                                 "am-container-spec": {"commands": {"command": "x"}},
                                 "resource": {"memory": 0, "vCores": 1}})"),
            "resource.memory");
  EXPECT_EQ(badField(decode, R"({"application-id": "a",
                                 "am-container-spec": {"commands": {"command": "x"}},
                                 "resource": {"memory": 5, "vCores": "two"}})"),
            "resource.vCores");
  EXPECT_EQ(badField(decode, R"({"application-id": "a",
                                 "am-container-spec": {"commands": {"command": "x"}},
                                 "resource": {"memory": 5, "vCores": 1},
                                 "max-app-attempts": -1})"),
            "max-app-attempts");
}

TEST(ClusterMessagesTest, AllocateRequestDefaultsAndErrors) {
  const AllocateRequest request = allocateRequestFromJson(parseJson(R"({
    "responseId": 3, "progress": 0.5,
    "asks": [{"priority": 1, "resource": {"memory": 512, "vCores": 2}, "numContainers": 4}],
    "releases": ["container_1_0001_01_000002"]})"));
  EXPECT_EQ(request.responseId, 3);
  ASSERT_EQ(request.asks.size(), 1u);
  EXPECT_EQ(request.asks[0].resourceName, "*");
  EXPECT_TRUE(request.asks[0].relaxLocality);
  EXPECT_EQ(request.asks[0].numContainers, 4);
  EXPECT_EQ(request.releases.at(0), "container_1_0001_01_000002");
  const AllocateRequest again = allocateRequestFromJson(parseJson(toJson(request)));
  EXPECT_EQ(again.asks[0].resource.vCores, 2);
  EXPECT_EQ(again.releases, request.releases);

  auto decode = [](const rapidjson::Value& v) { allocateRequestFromJson(v); };
  EXPECT_EQ(badField(decode, R"({})"), "responseId");
  EXPECT_EQ(badField(decode, R"({"responseId": 0, "asks": [{"priority": 1,
      "resource": {"memory": 1, "vCores": 1}, "numContainers": 1},
      {"priority": 1, "resource": {"memory": 1, "vCores": 0}, "numContainers": 1}]})"),
            "asks[1].resource.vCores");
  EXPECT_EQ(badField(decode, R"({"responseId": 0, "asks": [{"priority": 1,
      "resource": {"memory": 1, "vCores": 1}, "numContainers": -2}]})"),
            "asks[0].numContainers");
  EXPECT_EQ(badField(decode, R"({"responseId": 0, "asks": [{"resource": {"memory": 1,
      "vCores": 1}, "numContainers": 1}]})"),
            "asks[0].priority");
  EXPECT_EQ(badField(decode, R"({"responseId": 0, "releases": [7]})"), "releases[0]");
  EXPECT_EQ(badField(decode, R"({"responseId": 0, "asks": [{"priority": 0,
      "resource": {"memory": 1, "vCores": 1}, "numContainers": 1, "relaxLocality": "yes"}]})"),
            "asks[0].relaxLocality");
}

TEST(ClusterMessagesTest, AllocateResponseRoundTrip) {
  AllocateResponse response;
  response.responseId = 9;
  response.allocatedContainers.push_back(
      {"container_1_0001_01_000002", "h1:8042", "h1:8042", Resource{512, 1}, "tok"});
  response.completedContainers.push_back(
      {"container_1_0001_01_000003", exit_status::kAborted, "COMPLETE", "lost with node h2:1"});
  response.availableResources = Resource{2048, 3};
  response.numClusterNodes = 2;
  response.containersFitNow = 3;
  response.containersFitTotal = 12;
  const std::string json = toJson(response);
  EXPECT_THAT(json, HasSubstr(R"("nodeHttpAddress":"h1:8042")"));
  const AllocateResponse again = allocateResponseFromJson(parseJson(json));
  EXPECT_EQ(again.responseId, 9);
  EXPECT_EQ(again.allocatedContainers.at(0).token, "tok");
  EXPECT_EQ(again.completedContainers.at(0).exitStatus, -100);
  EXPECT_EQ(again.completedContainers.at(0).diagnostics, "lost with node h2:1");
  EXPECT_EQ(again.availableResources.vCores, 3);
  EXPECT_EQ(again.numClusterNodes, 2);
  EXPECT_EQ(again.containersFitNow, 3);
  EXPECT_EQ(again.containersFitTotal, 12);
  // An RM that does not say: unknown, not zero.
  const AllocateResponse older =
      allocateResponseFromJson(parseJson(R"({"responseId": 1, "allocatedContainers": [],
          "completedContainers": [], "availableResources": {"memory": 0, "vCores": 0},
          "numClusterNodes": 1})"));
  EXPECT_EQ(older.containersFitNow, -1);
  EXPECT_EQ(older.containersFitTotal, -1);
}

TEST(ClusterMessagesTest, RegisterAndFinish) {
  const auto request = registerApplicationMasterRequestFromJson(
      parseJson(toJson(RegisterApplicationMasterRequest{"h1", 4040, "http://h1:4040"})));
  EXPECT_EQ(request.trackingUrl, "http://h1:4040");
  auto decodeRegister = [](const rapidjson::Value& v) {
    registerApplicationMasterRequestFromJson(v);
  };
  EXPECT_EQ(badField(decodeRegister, R"({"port": 1})"), "host");
  EXPECT_EQ(badField(decodeRegister, R"({"host": "h", "port": 70000})"), "port");

  RegisterApplicationMasterResponse registered{Resource{8192, 8}, {}};
  const auto back = registerApplicationMasterResponseFromJson(parseJson(toJson(registered)));
  EXPECT_EQ(back.maximumResourceCapability.memoryMb, 8192);
  EXPECT_TRUE(back.containersFromPreviousAttempts.empty());

  auto decodeFinish = [](const rapidjson::Value& v) { finishApplicationMasterRequestFromJson(v); };
  EXPECT_EQ(badField(decodeFinish, R"({"finalStatus": "UNDEFINED"})"), "finalStatus");
  EXPECT_EQ(badField(decodeFinish, R"({})"), "finalStatus");
  EXPECT_EQ(badField(decodeFinish, R"({"finalStatus": "SUCCEEDED"})"), "");
  EXPECT_EQ(finishApplicationMasterRequestFromJson(
                parseJson(toJson(FinishApplicationMasterRequest{"FAILED", "x"})))
                .diagnostics,
            "x");
}

TEST(ClusterMessagesTest, ReportsUseYarnsEnvelopes) {
  ApplicationReport report;
  report.id = "application_1_0001";
  report.state = "RUNNING";
  report.finalStatus = "UNDEFINED";
  report.allocatedMB = 1536;
  report.currentAppAttemptId = "appattempt_1_0001_000001";
  EXPECT_THAT(toJson(report), HasSubstr(R"({"app":{"id":"application_1_0001")"));
  EXPECT_EQ(applicationReportFromJson(parseJson(toJson(report))).allocatedMB, 1536);
  const std::string list = toJson(std::vector<ApplicationReport>{report, report});
  EXPECT_THAT(list, HasSubstr(R"({"apps":{"app":[)"));
  EXPECT_EQ(applicationReportsFromJson(parseJson(list)).size(), 2u);
  EXPECT_TRUE(applicationReportsFromJson(parseJson(R"({"apps": null})")).empty());

  ClusterMetrics metrics;
  metrics.totalMB = 6144;
  metrics.activeNodes = 3;
  EXPECT_THAT(toJson(metrics), HasSubstr(R"({"clusterMetrics":{)"));
  EXPECT_EQ(clusterMetricsFromJson(parseJson(toJson(metrics))).totalMB, 6144);

  NodeReport node;
  node.id = "h1:8042";
  node.nodeHTTPAddress = "h1:8042";
  node.state = "LOST";
  const std::string nodes = toJson(std::vector<NodeReport>{node});
  EXPECT_THAT(nodes, HasSubstr(R"({"nodes":{"node":[{"id":"h1:8042")"));
  EXPECT_EQ(nodeReportsFromJson(parseJson(nodes)).at(0).state, "LOST");

  EXPECT_EQ(appStateFromJson(parseJson(toJson(AppStateMessage{"KILLED"}))).state, "KILLED");
  auto decodeState = [](const rapidjson::Value& v) { appStateFromJson(v); };
  EXPECT_EQ(badField(decodeState, R"({"state": 1})"), "state");

  NewApplicationResponse created{"application_1_0002", Resource{4096, 4}};
  EXPECT_THAT(toJson(created), HasSubstr(R"("maximum-resource-capability":{"memory":4096)"));
  EXPECT_EQ(newApplicationResponseFromJson(parseJson(toJson(created))).applicationId,
            "application_1_0002");
  ClusterInfo info;
  info.id = 17;
  EXPECT_EQ(clusterInfoFromJson(parseJson(toJson(info))).id, 17);
}

}  // namespace
}  // namespace tide::rest
