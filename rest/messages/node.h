#pragma once

// The wire schema between tide-rm and tide-nm, and of the node manager's container API.
// YARN-shaped: a node registers, heartbeats its container statuses, and is told which
// containers to stop; containers are started on the node by whoever holds an RM-issued token.
//
//   tide-nm -> tide-rm  POST /ws/v1/nm/register              NodeRegistration ->
//   NodeRegistrationResponse tide-nm -> tide-rm  POST /ws/v1/nm/{nodeId}/heartbeat    NodeHeartbeat
//   -> NodeHeartbeatResponse anyone  -> tide-nm  POST /ws/v1/node/containers ContainerLaunchRequest
//   -> ContainerReport (201) anyone  -> tide-nm  GET  /ws/v1/node/containers[/{id}] {"containers":
//   [ContainerReport]} / ContainerReport anyone  -> tide-nm  DELETE /ws/v1/node/containers/{id} ->
//   ContainerReport
// Container requests carry the RM-issued token of that container in the header
// `X-Tide-Container-Token`; the RM authenticates itself to a node with
// `Authorization: Bearer <nodeSecret>` (which also allows DELETE of any container).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <rapidjson/document.h>

namespace tide::rest {

// YARN's resource: memory in MiB and virtual cores. JSON {"memory": N, "vCores": N}.
struct Resource {
  int64_t memoryMb = 0;
  int vCores = 0;
};

// YARN's exit statuses for containers that did not exit by themselves.
namespace exit_status {
constexpr int kSuccess = 0;
constexpr int kAborted = -100;  // released by the AM, or lost with its node
constexpr int kPreempted = -102;
constexpr int kKilledExceededPmem = -104;  // killed for exceeding its memory
constexpr int kKilledByAppMaster = -105;
constexpr int kKilledByResourceManager = -106;
}  // namespace exit_status

struct NodeRegistration {
  std::string host;     // the host the node manager serves on
  int port = 0;         // its REST port
  Resource capability;  // what it offers to containers
};

struct NodeRegistrationResponse {
  std::string nodeId;      // "host:port"
  std::string nodeSecret;  // signs container tokens; authenticates the RM to the node
  int64_t heartbeatIntervalMs = 1000;
  // logReaderDigestOf(client token): lets the node check the client tokens that read its logs
  // without holding anything that would let it act as a client. Empty when the RM
  // authenticates nobody (rm.authentication=none).
  std::string logReaderDigest;
};

// One container as the node sees it. state: "RUNNING" or "COMPLETE".
// exitStatus: the process's exit code, 128 + signal when a signal ended it, or one of the
// exit_status codes (-104 for a memory kill, -105 when stopped through DELETE).
struct ContainerStatus {
  std::string containerId;
  std::string state;
  int exitStatus = 0;
  std::string diagnostics;
  // What the container holds: a restarted RM accounts the running containers it adopts with it
  // (missing from older node managers: 0).
  Resource resource;
};

struct NodeHeartbeat {
  std::vector<ContainerStatus> containers;  // every container the node knows of
};

struct NodeHeartbeatResponse {
  std::vector<std::string> containersToStop;
  bool reRegister = false;  // the RM does not know this node (e.g. after it expired it)
};

struct ContainerLaunchRequest {
  std::string containerId;
  std::string applicationId;
  std::string token;    // RM-issued, see containerToken()
  std::string command;  // run with /bin/sh -c, as YARN's launch script
  std::map<std::string, std::string> environment;
  Resource resource;  // memory is enforced, vCores recorded
};

// The NM's view of one container, for its GET/POST/DELETE answers.
struct ContainerReport {
  std::string containerId;
  std::string applicationId;
  std::string state;  // "RUNNING" or "COMPLETE"
  int exitStatus = 0;
  std::string diagnostics;
  int64_t pid = 0;
  Resource resource;
  std::string workDir;
  int64_t memoryUsedMb = 0;
};

// The token the RM issues for a container on a node: hex HMAC-SHA256 of the container id
// under the node's secret. The NM checks it without asking the RM.
std::string containerToken(const std::string& nodeSecret, const std::string& containerId);
// 32 random bytes from OpenSSL's generator, hex-encoded: node secrets, AM tokens and
// application secrets. Throws std::runtime_error when no randomness can be had.
std::string newRandomSecret();
// Constant-time comparison for tokens and secrets.
bool secretsEqual(const std::string& a, const std::string& b);

// Codecs. Decoders throw JsonFieldError naming the bad field.
std::string toJson(const Resource& value);
std::string toJson(const NodeRegistration& value);
std::string toJson(const NodeRegistrationResponse& value);
std::string toJson(const NodeHeartbeat& value);
std::string toJson(const NodeHeartbeatResponse& value);
std::string toJson(const ContainerLaunchRequest& value);
std::string toJson(const ContainerReport& value);

Resource resourceFromJson(const rapidjson::Value& json, const std::string& path = "resource");
NodeRegistration nodeRegistrationFromJson(const rapidjson::Value& json);
NodeRegistrationResponse nodeRegistrationResponseFromJson(const rapidjson::Value& json);
NodeHeartbeat nodeHeartbeatFromJson(const rapidjson::Value& json);
NodeHeartbeatResponse nodeHeartbeatResponseFromJson(const rapidjson::Value& json);
ContainerLaunchRequest containerLaunchRequestFromJson(const rapidjson::Value& json);
ContainerReport containerReportFromJson(const rapidjson::Value& json);

}  // namespace tide::rest
