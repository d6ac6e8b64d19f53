#pragma once

// The wire schema of tide-rm's client API and of its ApplicationMaster protocol. Paths and
// field names follow YARN's ResourceManager REST API and ApplicationMasterProtocol, so a
// YARN-literate reader (or client) recognises them.
//
// Client API (no authentication; tide-rm listens on loopback unless told otherwise):
//   POST /ws/v1/cluster/apps/new-application  -> NewApplicationResponse
//   POST /ws/v1/cluster/apps                  ApplicationSubmission -> 202
//   GET  /ws/v1/cluster/apps                  -> {"apps": {"app": [ApplicationReport]}}
//   GET  /ws/v1/cluster/apps/{id}             -> {"app": ApplicationReport}
//   GET  /ws/v1/cluster/apps/{id}/state       -> AppStateMessage
//   PUT  /ws/v1/cluster/apps/{id}/state       AppStateMessage {"state": "KILLED"} ->
//   AppStateMessage GET  /ws/v1/cluster/metrics               -> {"clusterMetrics": ClusterMetrics}
//   GET  /ws/v1/cluster/nodes                 -> {"nodes": {"node": [NodeReport]}}
//   GET  /ws/v1/cluster/info                  -> {"clusterInfo": ClusterInfo}
// ApplicationMaster protocol (header `Authorization: Bearer <TIDE_AM_TOKEN>` of the attempt):
//   POST /ws/v1/am/{attemptId}/register  RegisterApplicationMasterRequest -> ...Response
//   POST /ws/v1/am/{attemptId}/allocate  AllocateRequest -> AllocateResponse
//   POST /ws/v1/am/{attemptId}/finish    FinishApplicationMasterRequest -> ...Response
// The resource manager <-> node manager protocol is in rest/messages/node.h.

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rest/messages/node.h"  // Resource, exit_status

namespace tide::rest {

// ---------------------------------------------------------------------------------------------
// Client API

struct NewApplicationResponse {
  std::string applicationId;           // "application-id"
  Resource maximumResourceCapability;  // "maximum-resource-capability"
};

// YARN's ApplicationSubmissionContext, the parts tide-rm uses.
struct ApplicationSubmission {
  std::string applicationId;    // "application-id", from new-application
  std::string applicationName;  // "application-name"
  std::string queue = "default";
  std::string command;  // "am-container-spec": {"commands": {"command": "..."}}
  // "am-container-spec": {"environment": {"entry": [{"key": K, "value": V}]}}, in order.
  std::vector<std::pair<std::string, std::string>> environment;
  Resource resource;       // of the AM container; both parts positive
  int maxAppAttempts = 0;  // "max-app-attempts"; 0 = the resource manager's rm.maxAppAttempts
  // "history-url": where the application's history is once it has ended (`tide history`,
  // history.address): its tracking URL from then on. "" = none; else http(s)://...
  std::string historyUrl;
};

// YARN's application states (NEW_SAVING and SUBMITTED are not distinguished from NEW).
namespace app_state {
constexpr char kNew[] = "NEW";
constexpr char kAccepted[] = "ACCEPTED";
constexpr char kRunning[] = "RUNNING";
constexpr char kFinished[] = "FINISHED";
constexpr char kFailed[] = "FAILED";
constexpr char kKilled[] = "KILLED";
}  // namespace app_state

namespace final_status {
constexpr char kUndefined[] = "UNDEFINED";
constexpr char kSucceeded[] = "SUCCEEDED";
constexpr char kFailed[] = "FAILED";
constexpr char kKilled[] = "KILLED";
}  // namespace final_status

struct ApplicationReport {
  std::string id;
  std::string name;
  std::string queue;
  std::string state;        // app_state
  std::string finalStatus;  // final_status
  std::string trackingUrl;
  std::string diagnostics;
  int64_t allocatedMB = 0;
  int allocatedVCores = 0;
  int runningContainers = 0;
  std::string currentAppAttemptId;
  std::string amHostHttpAddress;  // the node running the current AM container, "" if none
  int64_t startedTime = 0;        // epoch ms of submission; 0 before
  int64_t finishedTime = 0;       // epoch ms; 0 while not final
};

struct AppStateMessage {
  std::string state;
};

struct ClusterMetrics {
  int appsSubmitted = 0;
  int appsPending = 0;  // ACCEPTED
  int appsRunning = 0;
  int appsCompleted = 0;  // FINISHED
  int appsFailed = 0;
  int appsKilled = 0;
  int64_t allocatedMB = 0;
  int64_t availableMB = 0;
  int64_t totalMB = 0;
  int64_t allocatedVirtualCores = 0;
  int64_t availableVirtualCores = 0;
  int64_t totalVirtualCores = 0;
  int containersAllocated = 0;  // live containers (allocated, running or being stopped)
  int activeNodes = 0;
  int lostNodes = 0;
  int totalNodes = 0;
};

namespace node_state {
constexpr char kRunning[] = "RUNNING";
constexpr char kLost[] = "LOST";
}  // namespace node_state

struct NodeReport {
  std::string id;  // "host:port"
  std::string nodeHostName;
  std::string nodeHTTPAddress;   // "host:port"
  std::string state;             // node_state
  int64_t lastHealthUpdate = 0;  // epoch ms of the last heartbeat
  int64_t usedMemoryMB = 0;
  int64_t availMemoryMB = 0;
  int usedVirtualCores = 0;
  int availableVirtualCores = 0;
  int numContainers = 0;
};

struct ClusterInfo {
  int64_t id = 0;  // the cluster timestamp, as in YARN
  int64_t startedOn = 0;
  std::string state = "STARTED";
  std::string haState = "ACTIVE";
  std::string resourceManagerVersion;
};

// ---------------------------------------------------------------------------------------------
// ApplicationMaster protocol

struct RegisterApplicationMasterRequest {
  std::string host;
  int port = 0;
  std::string trackingUrl;
};

// A container granted to an application: where it is and the token its node wants.
struct Container {
  std::string id;
  std::string nodeId;
  std::string nodeHttpAddress;  // "host:port" of the node manager's REST API
  Resource resource;
  std::string token;  // containerToken(nodeSecret, id)
};

struct RegisterApplicationMasterResponse {
  Resource maximumResourceCapability;
  std::vector<Container> containersFromPreviousAttempts;
};

// YARN's ResourceRequest. `numContainers` is the total outstanding for this
// (priority, resourceName, resource), replacing what the previous ask said.
struct ResourceRequest {
  int priority = 0;
  Resource resource;
  int numContainers = 0;
  std::string resourceName = "*";  // "*" = any node, else a host name or a node id
  bool relaxLocality = true;
};

struct AllocateRequest {
  int64_t responseId = 0;
  double progress = 0;
  std::vector<ResourceRequest> asks;
  std::vector<std::string> releases;  // container ids
};

namespace container_state {
constexpr char kComplete[] = "COMPLETE";
}  // namespace container_state

struct CompletedContainer {
  std::string containerId;
  int exitStatus = 0;  // the process's, or one of rest::exit_status
  std::string state = container_state::kComplete;
  std::string diagnostics;
};

struct AllocateResponse {
  int64_t responseId = 0;
  std::vector<Container> allocatedContainers;
  std::vector<CompletedContainer> completedContainers;
  Resource availableResources;  // free in the cluster right now
  int numClusterNodes = 0;
  // How many containers of the size this attempt asks for (its "*" ask) the live nodes could
  // hold: more in what is free now, and in all when empty. Each node counts alone (a
  // container never spans two), so these are what "target 137, live 2" runs into. -1: unknown
  // (the attempt asked for no size yet, or an RM that does not say).
  int containersFitNow = -1;
  int containersFitTotal = -1;
  // The RM restarted and recovered the attempt from its state store, but this AM has not
  // registered with it yet (YARN's ApplicationMasterNotRegisteredException): register again,
  // start again from responseId 0 and send every outstanding ask. Nothing else is set.
  bool reRegister = false;
};

struct FinishApplicationMasterRequest {
  std::string finalStatus;  // SUCCEEDED, FAILED or KILLED
  std::string diagnostics;
};

struct FinishApplicationMasterResponse {
  bool isUnregistered = true;
};

// ---------------------------------------------------------------------------------------------
// Codecs. Decoders validate and throw JsonFieldError naming the bad field (the HTTP server
// turns that into a 400); encoders produce exactly what the decoders read.

std::string toJson(const NewApplicationResponse& value);
std::string toJson(const ApplicationSubmission& value);
std::string toJson(const ApplicationReport& value);               // {"app": {...}}
std::string toJson(const std::vector<ApplicationReport>& value);  // {"apps": {"app": [...]}}
std::string toJson(const AppStateMessage& value);
std::string toJson(const ClusterMetrics& value);           // {"clusterMetrics": {...}}
std::string toJson(const std::vector<NodeReport>& value);  // {"nodes": {"node": [...]}}
std::string toJson(const ClusterInfo& value);              // {"clusterInfo": {...}}
std::string toJson(const RegisterApplicationMasterRequest& value);
std::string toJson(const RegisterApplicationMasterResponse& value);
std::string toJson(const AllocateRequest& value);
std::string toJson(const AllocateResponse& value);
std::string toJson(const FinishApplicationMasterRequest& value);
std::string toJson(const FinishApplicationMasterResponse& value);

NewApplicationResponse newApplicationResponseFromJson(const rapidjson::Value& json);
ApplicationSubmission applicationSubmissionFromJson(const rapidjson::Value& json);
ApplicationReport applicationReportFromJson(const rapidjson::Value& json);  // {"app": ...}
std::vector<ApplicationReport> applicationReportsFromJson(const rapidjson::Value& json);
AppStateMessage appStateFromJson(const rapidjson::Value& json);
ClusterMetrics clusterMetricsFromJson(const rapidjson::Value& json);
std::vector<NodeReport> nodeReportsFromJson(const rapidjson::Value& json);
ClusterInfo clusterInfoFromJson(const rapidjson::Value& json);
RegisterApplicationMasterRequest registerApplicationMasterRequestFromJson(
    const rapidjson::Value& json);
RegisterApplicationMasterResponse registerApplicationMasterResponseFromJson(
    const rapidjson::Value& json);
AllocateRequest allocateRequestFromJson(const rapidjson::Value& json);
AllocateResponse allocateResponseFromJson(const rapidjson::Value& json);
FinishApplicationMasterRequest finishApplicationMasterRequestFromJson(const rapidjson::Value& json);
FinishApplicationMasterResponse finishApplicationMasterResponseFromJson(
    const rapidjson::Value& json);

}  // namespace tide::rest
