#include "rest/messages/node.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

#include "common/strings.h"
#include "rest/json.h"

namespace tide::rest {
namespace {

constexpr char kRunning[] = "RUNNING";
constexpr char kComplete[] = "COMPLETE";

// ---------------------------------------------------------------------------------------------
// Writers: each writes one value into a stream, so nested messages compose without copies.

void writeResource(JsonWriter& out, const Resource& value) {
  out.startObject().field("memory", value.memoryMb).field("vCores", value.vCores).endObject();
}

void writeContainerStatus(JsonWriter& out, const ContainerStatus& value) {
  out.startObject()
      .field("containerId", value.containerId)
      .field("state", value.state)
      .field("exitStatus", value.exitStatus)
      .field("diagnostics", value.diagnostics)
      .endObject();
}

void writeStringMap(JsonWriter& out, const std::map<std::string, std::string>& values) {
  out.startObject();
  for (const auto& [name, text] : values) out.field(name, text);
  out.endObject();
}

// ---------------------------------------------------------------------------------------------
// Readers: the shared checks, each naming the field it refuses.

std::string requireNonEmptyString(const JsonObjectReader& reader, std::string_view key) {
  std::string value = reader.requireString(key);
  if (value.empty()) throw JsonFieldError(reader.fieldPath(key), "must not be empty");
  return value;
}

std::string requireContainerState(const JsonObjectReader& reader, std::string_view key) {
  std::string state = reader.requireString(key);
  if (state != kRunning && state != kComplete) {
    throw JsonFieldError(reader.fieldPath(key),
                         "expected \"RUNNING\" or \"COMPLETE\", got \"" + state + "\"");
  }
  return state;
}

Resource readResource(const JsonObjectReader& reader) {
  Resource resource;
  resource.memoryMb = reader.requireInt64("memory");
  if (resource.memoryMb < 0) {
    throw JsonFieldError(reader.fieldPath("memory"), "must not be negative");
  }
  resource.vCores = reader.requireInt("vCores");
  if (resource.vCores < 0) {
    throw JsonFieldError(reader.fieldPath("vCores"), "must not be negative");
  }
  return resource;
}

ContainerStatus readContainerStatus(const JsonObjectReader& reader) {
  ContainerStatus status;
  status.containerId = requireNonEmptyString(reader, "containerId");
  status.state = requireContainerState(reader, "state");
  status.exitStatus = reader.optionalInt("exitStatus", 0);
  status.diagnostics = reader.optionalString("diagnostics");
  return status;
}

}  // namespace

std::string containerToken(const std::string& nodeSecret, const std::string& containerId) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digestLength = 0;
  const unsigned char* result =
      HMAC(EVP_sha256(), nodeSecret.data(), static_cast<int>(nodeSecret.size()),
           reinterpret_cast<const unsigned char*>(containerId.data()), containerId.size(), digest,
           &digestLength);
  if (result == nullptr) throw std::runtime_error("containerToken: HMAC-SHA256 failed");
  return hexEncode(digest, digestLength);
}

std::string newRandomSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    throw std::runtime_error("cannot draw random bytes for a secret (OpenSSL RAND_bytes)");
  }
  return hexEncode(bytes, sizeof(bytes));
}

bool secretsEqual(const std::string& a, const std::string& b) {
  // CRYPTO_memcmp takes time independent of the contents, but only compares equal lengths;
  // the length itself is not secret (tokens are fixed-size hex).
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// ---------------------------------------------------------------------------------------------
// Encoders

std::string toJson(const Resource& value) {
  JsonWriter out;
  writeResource(out, value);
  return out.str();
}

std::string toJson(const NodeRegistration& value) {
  JsonWriter out;
  out.startObject().field("host", value.host).field("port", value.port).key("capability");
  writeResource(out, value.capability);
  out.endObject();
  return out.str();
}

std::string toJson(const NodeRegistrationResponse& value) {
  JsonWriter out;
  out.startObject()
      .field("nodeId", value.nodeId)
      .field("nodeSecret", value.nodeSecret)
      .field("heartbeatIntervalMs", value.heartbeatIntervalMs)
      .endObject();
  return out.str();
}

std::string toJson(const NodeHeartbeat& value) {
  JsonWriter out;
  out.startObject().key("containers").startArray();
  for (const ContainerStatus& status : value.containers) writeContainerStatus(out, status);
  out.endArray().endObject();
  return out.str();
}

std::string toJson(const NodeHeartbeatResponse& value) {
  JsonWriter out;
  out.startObject().key("containersToStop").startArray();
  for (const std::string& id : value.containersToStop) out.value(id);
  out.endArray().field("reRegister", value.reRegister).endObject();
  return out.str();
}

std::string toJson(const ContainerLaunchRequest& value) {
  JsonWriter out;
  out.startObject()
      .field("containerId", value.containerId)
      .field("applicationId", value.applicationId)
      .field("token", value.token)
      .field("command", value.command)
      .key("environment");
  writeStringMap(out, value.environment);
  out.key("resource");
  writeResource(out, value.resource);
  out.endObject();
  return out.str();
}

std::string toJson(const ContainerReport& value) {
  JsonWriter out;
  out.startObject()
      .field("containerId", value.containerId)
      .field("applicationId", value.applicationId)
      .field("state", value.state)
      .field("exitStatus", value.exitStatus)
      .field("diagnostics", value.diagnostics)
      .field("pid", value.pid)
      .key("resource");
  writeResource(out, value.resource);
  out.field("workDir", value.workDir).field("memoryUsedMb", value.memoryUsedMb).endObject();
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Decoders

Resource resourceFromJson(const rapidjson::Value& json, const std::string& path) {
  return readResource(JsonObjectReader(json, path));
}

NodeRegistration nodeRegistrationFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  NodeRegistration registration;
  registration.host = requireNonEmptyString(reader, "host");
  registration.port = reader.requireInt("port");
  if (registration.port < 1 || registration.port > 65535) {
    throw JsonFieldError(reader.fieldPath("port"),
                         "expected a port in 1..65535, got " + std::to_string(registration.port));
  }
  registration.capability = readResource(reader.requireObject("capability"));
  return registration;
}

NodeRegistrationResponse nodeRegistrationResponseFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  NodeRegistrationResponse response;
  response.nodeId = requireNonEmptyString(reader, "nodeId");
  response.nodeSecret = requireNonEmptyString(reader, "nodeSecret");
  response.heartbeatIntervalMs =
      reader.optionalInt64("heartbeatIntervalMs", response.heartbeatIntervalMs);
  if (response.heartbeatIntervalMs <= 0) {
    throw JsonFieldError(reader.fieldPath("heartbeatIntervalMs"), "must be positive");
  }
  return response;
}

NodeHeartbeat nodeHeartbeatFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  NodeHeartbeat heartbeat;
  JsonArrayReader containers = reader.requireArray("containers");
  heartbeat.containers.reserve(containers.size());
  for (size_t i = 0; i < containers.size(); ++i) {
    heartbeat.containers.push_back(readContainerStatus(containers.objectAt(i)));
  }
  return heartbeat;
}

NodeHeartbeatResponse nodeHeartbeatResponseFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  NodeHeartbeatResponse response;
  if (auto toStop = reader.optionalArray("containersToStop")) {
    response.containersToStop.reserve(toStop->size());
    for (size_t i = 0; i < toStop->size(); ++i) {
      response.containersToStop.push_back(toStop->stringAt(i));
    }
  }
  response.reRegister = reader.optionalBool("reRegister", false);
  return response;
}

ContainerLaunchRequest containerLaunchRequestFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ContainerLaunchRequest request;
  request.containerId = requireNonEmptyString(reader, "containerId");
  request.applicationId = requireNonEmptyString(reader, "applicationId");
  // The token usually travels in the X-Tide-Container-Token header instead.
  request.token = reader.optionalString("token");
  request.command = requireNonEmptyString(reader, "command");
  if (auto environment = reader.optionalObject("environment")) {
    for (const auto& member : environment->value().GetObject()) {
      const std::string name(member.name.GetString(), member.name.GetStringLength());
      // execve() cannot carry a name with '=' or a NUL anywhere in the entry.
      if (name.empty() || name.find_first_of(std::string("=\0", 2)) != std::string::npos) {
        throw JsonFieldError(environment->fieldPath(name),
                             "is not a valid environment variable name");
      }
      std::string value = environment->requireString(name);
      if (value.find('\0') != std::string::npos) {
        throw JsonFieldError(environment->fieldPath(name), "must not contain a NUL character");
      }
      request.environment[name] = std::move(value);
    }
  }
  request.resource = readResource(reader.requireObject("resource"));
  return request;
}

ContainerReport containerReportFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ContainerReport report;
  report.containerId = requireNonEmptyString(reader, "containerId");
  report.applicationId = reader.requireString("applicationId");
  report.state = requireContainerState(reader, "state");
  report.exitStatus = reader.optionalInt("exitStatus", 0);
  report.diagnostics = reader.optionalString("diagnostics");
  report.pid = reader.optionalInt64("pid", 0);
  if (auto resource = reader.optionalObject("resource")) report.resource = readResource(*resource);
  report.workDir = reader.optionalString("workDir");
  report.memoryUsedMb = reader.optionalInt64("memoryUsedMb", 0);
  return report;
}

}  // namespace tide::rest
