#include "rest/messages/node.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

#include "common/strings.h"
#include "rest/json.h"
#include "rest/json_fields.h"
#include "rest/messages/resource_fields.h"

namespace tide::rest {
namespace {

using json_check::nonEmpty;

JsonCheck<std::string> containerState() {
  return json_check::oneOf({"RUNNING", "COMPLETE"}, true, "expected \"RUNNING\" or \"COMPLETE\"");
}

// Environment variables as a JSON object; execve() cannot carry a name with '=' or a NUL
// anywhere in the entry.
JsonFields<ContainerLaunchRequest>::Reader readEnvironment() {
  return [](const JsonObjectReader& reader, ContainerLaunchRequest& request) {
    auto environment = reader.optionalObject("environment");
    if (!environment) return;
    for (const auto& member : environment->value().GetObject()) {
      const std::string name(member.name.GetString(), member.name.GetStringLength());
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
  };
}

void writeEnvironment(JsonWriter& out, const ContainerLaunchRequest& request) {
  out.key("environment").startObject();
  for (const auto& [name, text] : request.environment) out.field(name, text);
  out.endObject();
}

const JsonFields<NodeRegistration>& nodeRegistrationFields() {
  static const JsonFields<NodeRegistration> fields =
      JsonFields<NodeRegistration>()
          .required("host", &NodeRegistration::host, nonEmpty())
          .required("port", &NodeRegistration::port, json_check::inRange(1, 65535, "a port"))
          .object("capability", &NodeRegistration::capability, resourceFields());
  return fields;
}

const JsonFields<NodeRegistrationResponse>& nodeRegistrationResponseFields() {
  static const JsonFields<NodeRegistrationResponse> fields =
      JsonFields<NodeRegistrationResponse>()
          .required("nodeId", &NodeRegistrationResponse::nodeId, nonEmpty())
          .required("nodeSecret", &NodeRegistrationResponse::nodeSecret, nonEmpty())
          .optional("heartbeatIntervalMs", &NodeRegistrationResponse::heartbeatIntervalMs,
                    NodeRegistrationResponse().heartbeatIntervalMs, json_check::positive<int64_t>())
          .optional("logReaderDigest", &NodeRegistrationResponse::logReaderDigest, "");
  return fields;
}

const JsonFields<ContainerStatus>& containerStatusFields() {
  static const JsonFields<ContainerStatus> fields =
      JsonFields<ContainerStatus>()
          .required("containerId", &ContainerStatus::containerId, nonEmpty())
          .required("state", &ContainerStatus::state, containerState())
          .optional("exitStatus", &ContainerStatus::exitStatus, 0)
          .optional("diagnostics", &ContainerStatus::diagnostics, "")
          .object("resource", &ContainerStatus::resource, resourceFields(), false);
  return fields;
}

const JsonFields<NodeHeartbeat>& nodeHeartbeatFields() {
  static const JsonFields<NodeHeartbeat> fields = JsonFields<NodeHeartbeat>().objects(
      "containers", &NodeHeartbeat::containers, containerStatusFields());
  return fields;
}

const JsonFields<NodeHeartbeatResponse>& nodeHeartbeatResponseFields() {
  static const JsonFields<NodeHeartbeatResponse> fields =
      JsonFields<NodeHeartbeatResponse>()
          .optional("containersToStop", &NodeHeartbeatResponse::containersToStop, {})
          .optional("reRegister", &NodeHeartbeatResponse::reRegister, false);
  return fields;
}

const JsonFields<ContainerLaunchRequest>& containerLaunchRequestFields() {
  static const JsonFields<ContainerLaunchRequest> fields =
      JsonFields<ContainerLaunchRequest>()
          .required("containerId", &ContainerLaunchRequest::containerId, nonEmpty())
          .required("applicationId", &ContainerLaunchRequest::applicationId, nonEmpty())
          // The token usually travels in the X-Tide-Container-Token header instead.
          .optional("token", &ContainerLaunchRequest::token, "")
          .required("command", &ContainerLaunchRequest::command, nonEmpty())
          .custom("environment", readEnvironment(), writeEnvironment)
          .object("resource", &ContainerLaunchRequest::resource, resourceFields());
  return fields;
}

const JsonFields<ContainerReport>& containerReportFields() {
  static const JsonFields<ContainerReport> fields =
      JsonFields<ContainerReport>()
          .required("containerId", &ContainerReport::containerId, nonEmpty())
          .required("applicationId", &ContainerReport::applicationId)
          .required("state", &ContainerReport::state, containerState())
          .optional("exitStatus", &ContainerReport::exitStatus, 0)
          .optional("diagnostics", &ContainerReport::diagnostics, "")
          .optional("pid", &ContainerReport::pid, 0)
          .object("resource", &ContainerReport::resource, resourceFields(), /*required=*/false)
          .optional("workDir", &ContainerReport::workDir, "")
          .optional("memoryUsedMb", &ContainerReport::memoryUsedMb, 0);
  return fields;
}

}  // namespace

const JsonFields<Resource>& resourceFields() {
  static const JsonFields<Resource> fields =
      JsonFields<Resource>()
          .required("memory", &Resource::memoryMb, json_check::notNegative<int64_t>())
          .required("vCores", &Resource::vCores, json_check::notNegative<int>());
  return fields;
}

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
// Encoders and decoders: the tables above.

std::string toJson(const Resource& value) {
  return resourceFields().toJson(value);
}
TIDE_JSON_CODEC(NodeRegistration, nodeRegistrationFromJson, nodeRegistrationFields)
TIDE_JSON_CODEC(NodeRegistrationResponse, nodeRegistrationResponseFromJson,
                nodeRegistrationResponseFields)
TIDE_JSON_CODEC(NodeHeartbeat, nodeHeartbeatFromJson, nodeHeartbeatFields)
TIDE_JSON_CODEC(NodeHeartbeatResponse, nodeHeartbeatResponseFromJson, nodeHeartbeatResponseFields)
TIDE_JSON_CODEC(ContainerLaunchRequest, containerLaunchRequestFromJson,
                containerLaunchRequestFields)
TIDE_JSON_CODEC(ContainerReport, containerReportFromJson, containerReportFields)

Resource resourceFromJson(const rapidjson::Value& json, const std::string& path) {
  return resourceFields().read(JsonObjectReader(json, path));
}
}  // namespace tide::rest
