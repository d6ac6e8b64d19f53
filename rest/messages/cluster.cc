#include "rest/messages/cluster.h"

#include <string_view>

#include "rest/json.h"
#include "rest/json_fields.h"
#include "rest/messages/resource_fields.h"

namespace tide::rest {
namespace {

using json_check::nonEmpty;
using json_check::notNegative;
using json_check::oneOf;

// A resource that something must run in: both parts positive, so that placement never
// hands out a container that takes nothing (and could thus be granted without bound).
JsonCheck<Resource> positiveResource() {
  return [](const Resource& resource, const JsonObjectReader& parent, std::string_view key) {
    const std::string path = parent.fieldPath(key);
    if (resource.memoryMb <= 0) throw JsonFieldError(path + ".memory", "must be positive");
    if (resource.vCores <= 0) throw JsonFieldError(path + ".vCores", "must be positive");
  };
}

const JsonFields<Container>& containerFields() {
  static const JsonFields<Container> fields =
      JsonFields<Container>()
          .required("id", &Container::id, nonEmpty())
          .required("nodeId", &Container::nodeId, nonEmpty())
          .required("nodeHttpAddress", &Container::nodeHttpAddress)
          .object("resource", &Container::resource, resourceFields())
          .required("token", &Container::token);
  return fields;
}

const JsonFields<ApplicationReport>& applicationReportFields() {
  using R = ApplicationReport;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("id", &R::id, nonEmpty())
          .optional("name", &R::name, "")
          .optional("queue", &R::queue, "")
          .required("state", &R::state,
                    oneOf({app_state::kNew, app_state::kAccepted, app_state::kRunning,
                           app_state::kFinished, app_state::kFailed, app_state::kKilled}))
          .required("finalStatus", &R::finalStatus,
                    oneOf({final_status::kUndefined, final_status::kSucceeded,
                           final_status::kFailed, final_status::kKilled}))
          .optional("trackingUrl", &R::trackingUrl, "")
          .optional("diagnostics", &R::diagnostics, "")
          .optional("allocatedMB", &R::allocatedMB, 0)
          .optional("allocatedVCores", &R::allocatedVCores, 0)
          .optional("runningContainers", &R::runningContainers, 0)
          .optional("currentAppAttemptId", &R::currentAppAttemptId, "")
          .optional("amHostHttpAddress", &R::amHostHttpAddress, "")
          .optional("startedTime", &R::startedTime, 0)
          .optional("finishedTime", &R::finishedTime, 0);
  return fields;
}

const JsonFields<NodeReport>& nodeReportFields() {
  using R = NodeReport;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("id", &R::id, nonEmpty())
          .required("nodeHostName", &R::nodeHostName)
          .required("nodeHTTPAddress", &R::nodeHTTPAddress)
          .required("state", &R::state, oneOf({node_state::kRunning, node_state::kLost}))
          .optional("lastHealthUpdate", &R::lastHealthUpdate, 0)
          .optional("usedMemoryMB", &R::usedMemoryMB, 0)
          .optional("availMemoryMB", &R::availMemoryMB, 0)
          .optional("usedVirtualCores", &R::usedVirtualCores, 0)
          .optional("availableVirtualCores", &R::availableVirtualCores, 0)
          .optional("numContainers", &R::numContainers, 0);
  return fields;
}

const JsonFields<NewApplicationResponse>& newApplicationResponseFields() {
  using R = NewApplicationResponse;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("application-id", &R::applicationId, nonEmpty())
          .object("maximum-resource-capability", &R::maximumResourceCapability, resourceFields());
  return fields;
}

const JsonFields<AppStateMessage>& appStateFields() {
  static const JsonFields<AppStateMessage> fields =
      JsonFields<AppStateMessage>().required("state", &AppStateMessage::state, nonEmpty());
  return fields;
}

const JsonFields<ClusterMetrics>& clusterMetricsFields() {
  using M = ClusterMetrics;
  static const JsonFields<M> fields =
      JsonFields<M>()
          .required("appsSubmitted", &M::appsSubmitted)
          .optional("appsPending", &M::appsPending, 0)
          .required("appsRunning", &M::appsRunning)
          .required("appsCompleted", &M::appsCompleted)
          .required("appsFailed", &M::appsFailed)
          .required("appsKilled", &M::appsKilled)
          .required("allocatedMB", &M::allocatedMB)
          .required("availableMB", &M::availableMB)
          .required("totalMB", &M::totalMB)
          .required("allocatedVirtualCores", &M::allocatedVirtualCores)
          .required("availableVirtualCores", &M::availableVirtualCores)
          .required("totalVirtualCores", &M::totalVirtualCores)
          .required("containersAllocated", &M::containersAllocated)
          .required("activeNodes", &M::activeNodes)
          .required("lostNodes", &M::lostNodes)
          .required("totalNodes", &M::totalNodes);
  return fields;
}

const JsonFields<ClusterInfo>& clusterInfoFields() {
  static const JsonFields<ClusterInfo> fields =
      JsonFields<ClusterInfo>()
          .required("id", &ClusterInfo::id)
          .required("startedOn", &ClusterInfo::startedOn)
          .required("state", &ClusterInfo::state)
          .optional("haState", &ClusterInfo::haState, "")
          .optional("resourceManagerVersion", &ClusterInfo::resourceManagerVersion, "");
  return fields;
}

const JsonFields<RegisterApplicationMasterRequest>& registerRequestFields() {
  using R = RegisterApplicationMasterRequest;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("host", &R::host)
          .optional("port", &R::port, 0,
                    [](int port, const JsonObjectReader& reader, std::string_view key) {
                      if (port < 0 || port > 65535) {
                        throw JsonFieldError(reader.fieldPath(key),
                                             "must be a port number (0-65535)");
                      }
                    })
          .optional("trackingUrl", &R::trackingUrl, "");
  return fields;
}

const JsonFields<RegisterApplicationMasterResponse>& registerResponseFields() {
  using R = RegisterApplicationMasterResponse;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .object("maximumResourceCapability", &R::maximumResourceCapability, resourceFields())
          .objects("containersFromPreviousAttempts", &R::containersFromPreviousAttempts,
                   containerFields(), /*required=*/false);
  return fields;
}

const JsonFields<ResourceRequest>& resourceRequestFields() {
  using R = ResourceRequest;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("priority", &R::priority, notNegative<int>())
          .object("resource", &R::resource, resourceFields(), true, positiveResource())
          .required("numContainers", &R::numContainers, notNegative<int>())
          .optional("resourceName", &R::resourceName, "*", nonEmpty())
          .optional("relaxLocality", &R::relaxLocality, true);
  return fields;
}

// Container ids to release: strings, none empty.
void readReleases(const JsonObjectReader& reader, AllocateRequest& request) {
  auto releases = reader.optionalArray("releases");
  if (!releases) return;
  for (size_t i = 0; i < releases->size(); ++i) {
    std::string id = releases->stringAt(i);
    if (id.empty()) throw JsonFieldError(releases->elementPath(i), "must not be empty");
    request.releases.push_back(std::move(id));
  }
}

const JsonFields<AllocateRequest>& allocateRequestFields() {
  using R = AllocateRequest;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("responseId", &R::responseId, notNegative<int64_t>())
          .optional("progress", &R::progress, 0.0)
          .objects("asks", &R::asks, resourceRequestFields(), /*required=*/false)
          .custom("releases", readReleases, [](JsonWriter& out, const R& value) {
            out.key("releases");
            JsonValueCodec<std::vector<std::string>>::write(out, value.releases);
          });
  return fields;
}

const JsonFields<CompletedContainer>& completedContainerFields() {
  using C = CompletedContainer;
  static const JsonFields<C> fields = JsonFields<C>()
                                          .required("containerId", &C::containerId, nonEmpty())
                                          .required("exitStatus", &C::exitStatus)
                                          .optional("state", &C::state, container_state::kComplete)
                                          .optional("diagnostics", &C::diagnostics, "");
  return fields;
}

const JsonFields<AllocateResponse>& allocateResponseFields() {
  using R = AllocateResponse;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("responseId", &R::responseId)
          .objects("allocatedContainers", &R::allocatedContainers, containerFields())
          .objects("completedContainers", &R::completedContainers, completedContainerFields())
          .object("availableResources", &R::availableResources, resourceFields())
          .required("numClusterNodes", &R::numClusterNodes)
          .optional("containersFitNow", &R::containersFitNow, -1)
          .optional("containersFitTotal", &R::containersFitTotal, -1)
          .optional("reRegister", &R::reRegister, false);
  return fields;
}

const JsonFields<FinishApplicationMasterRequest>& finishRequestFields() {
  using R = FinishApplicationMasterRequest;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("finalStatus", &R::finalStatus,
                    oneOf({final_status::kSucceeded, final_status::kFailed, final_status::kKilled}))
          .optional("diagnostics", &R::diagnostics, "");
  return fields;
}

const JsonFields<FinishApplicationMasterResponse>& finishResponseFields() {
  static const JsonFields<FinishApplicationMasterResponse> fields =
      JsonFields<FinishApplicationMasterResponse>().optional(
          "isUnregistered", &FinishApplicationMasterResponse::isUnregistered, true);
  return fields;
}

// {"<outer>": {"<inner>": [values]}}, YARN's shape for lists; an absent or null level reads
// as none.
template <typename T>
std::string wrappedListToJson(std::string_view outer, std::string_view inner,
                              const JsonFields<T>& fields, const std::vector<T>& values) {
  JsonWriter out;
  out.startObject().key(outer).startObject().key(inner);
  fields.writeArray(out, values);
  out.endObject().endObject();
  return out.str();
}

template <typename T>
std::vector<T> wrappedListFromJson(const rapidjson::Value& json, std::string_view outer,
                                   std::string_view inner, const JsonFields<T>& fields) {
  auto level = JsonObjectReader(json).optionalObject(outer);
  if (!level) return {};
  auto list = level->optionalArray(inner);
  if (!list) return {};
  return fields.readArray(*list);
}

// {"<key>": value}
template <typename T>
std::string wrappedToJson(std::string_view key, const JsonFields<T>& fields, const T& value) {
  JsonWriter out;
  out.startObject().key(key);
  fields.write(out, value);
  out.endObject();
  return out.str();
}

template <typename T>
T wrappedFromJson(const rapidjson::Value& json, std::string_view key, const JsonFields<T>& fields) {
  return fields.read(JsonObjectReader(json).requireObject(key));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Client API

std::string toJson(const ApplicationSubmission& value) {
  JsonWriter out;
  out.startObject()
      .field("application-id", value.applicationId)
      .field("application-name", value.applicationName)
      .field("queue", value.queue)
      .key("am-container-spec")
      .startObject()
      .key("commands")
      .startObject()
      .field("command", value.command)
      .endObject()
      .key("environment")
      .startObject()
      .key("entry")
      .startArray();
  for (const auto& [name, text] : value.environment) {
    out.startObject().field("key", name).field("value", text).endObject();
  }
  out.endArray().endObject().endObject().key("resource");
  resourceFields().write(out, value.resource);
  if (value.maxAppAttempts > 0) out.field("max-app-attempts", value.maxAppAttempts);
  if (!value.historyUrl.empty()) out.field("history-url", value.historyUrl);
  out.endObject();
  return out.str();
}

ApplicationSubmission applicationSubmissionFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ApplicationSubmission submission;
  submission.applicationId = requireNonEmptyString(reader, "application-id");
  submission.applicationName = reader.optionalString("application-name");
  submission.queue = reader.optionalString("queue", "default");
  if (submission.queue.empty()) submission.queue = "default";

  JsonObjectReader spec = reader.requireObject("am-container-spec");
  submission.command = requireNonEmptyString(spec.requireObject("commands"), "command");
  if (auto environment = spec.optionalObject("environment")) {
    if (auto entries = environment->optionalArray("entry")) {
      for (size_t i = 0; i < entries->size(); ++i) {
        JsonObjectReader entry = entries->objectAt(i);
        submission.environment.emplace_back(requireNonEmptyString(entry, "key"),
                                            entry.requireString("value"));
      }
    }
  }
  submission.resource = resourceFields().read(reader.requireObject("resource"));
  positiveResource()(submission.resource, reader, "resource");
  submission.maxAppAttempts = reader.optionalInt("max-app-attempts", 0);
  if (submission.maxAppAttempts < 0) {
    throw JsonFieldError(reader.fieldPath("max-app-attempts"), "must not be negative");
  }
  submission.historyUrl = reader.optionalString("history-url");
  if (!submission.historyUrl.empty() && submission.historyUrl.rfind("http://", 0) != 0 &&
      submission.historyUrl.rfind("https://", 0) != 0) {
    throw JsonFieldError(reader.fieldPath("history-url"), "expected an http:// or https:// URL");
  }
  return submission;
}

// {"<key>": Type} and {"<outer>": {"<inner>": [Type]}} (YARN answers {"apps": null} when there
// are none).
#define TIDE_WRAPPED_CODEC(Type, fromJsonName, key, fieldsFunction) \
  std::string toJson(const Type& value) {                           \
    return wrappedToJson(key, fieldsFunction(), value);             \
  }                                                                 \
  Type fromJsonName(const rapidjson::Value& json) {                 \
    return wrappedFromJson(json, key, fieldsFunction());            \
  }
#define TIDE_WRAPPED_LIST_CODEC(Type, fromJsonName, outer, inner, fieldsFunction) \
  std::string toJson(const std::vector<Type>& value) {                            \
    return wrappedListToJson(outer, inner, fieldsFunction(), value);              \
  }                                                                               \
  std::vector<Type> fromJsonName(const rapidjson::Value& json) {                  \
    return wrappedListFromJson(json, outer, inner, fieldsFunction());             \
  }

TIDE_WRAPPED_CODEC(ApplicationReport, applicationReportFromJson, "app", applicationReportFields)
TIDE_WRAPPED_LIST_CODEC(ApplicationReport, applicationReportsFromJson, "apps", "app",
                        applicationReportFields)
TIDE_WRAPPED_CODEC(ClusterMetrics, clusterMetricsFromJson, "clusterMetrics", clusterMetricsFields)
TIDE_WRAPPED_LIST_CODEC(NodeReport, nodeReportsFromJson, "nodes", "node", nodeReportFields)
TIDE_WRAPPED_CODEC(ClusterInfo, clusterInfoFromJson, "clusterInfo", clusterInfoFields)

// ---------------------------------------------------------------------------------------------
// ApplicationMaster protocol

TIDE_JSON_CODEC(NewApplicationResponse, newApplicationResponseFromJson,
                newApplicationResponseFields)
TIDE_JSON_CODEC(AppStateMessage, appStateFromJson, appStateFields)
TIDE_JSON_CODEC(RegisterApplicationMasterRequest, registerApplicationMasterRequestFromJson,
                registerRequestFields)
TIDE_JSON_CODEC(RegisterApplicationMasterResponse, registerApplicationMasterResponseFromJson,
                registerResponseFields)
TIDE_JSON_CODEC(AllocateRequest, allocateRequestFromJson, allocateRequestFields)
TIDE_JSON_CODEC(AllocateResponse, allocateResponseFromJson, allocateResponseFields)
TIDE_JSON_CODEC(FinishApplicationMasterRequest, finishApplicationMasterRequestFromJson,
                finishRequestFields)
TIDE_JSON_CODEC(FinishApplicationMasterResponse, finishApplicationMasterResponseFromJson,
                finishResponseFields)

}  // namespace tide::rest
