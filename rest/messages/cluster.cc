#include "rest/messages/cluster.h"

#include <string_view>

#include "rest/json.h"

namespace tide::rest {
namespace {

// ---------------------------------------------------------------------------------------------
// Writers: one value into a stream, so nested messages compose without copies.

void writeResource(JsonWriter& out, const Resource& value) {
  out.startObject().field("memory", value.memoryMb).field("vCores", value.vCores).endObject();
}

void writeContainer(JsonWriter& out, const Container& value) {
  out.startObject()
      .field("id", value.id)
      .field("nodeId", value.nodeId)
      .field("nodeHttpAddress", value.nodeHttpAddress)
      .key("resource");
  writeResource(out, value.resource);
  out.field("token", value.token).endObject();
}

void writeContainers(JsonWriter& out, const std::vector<Container>& values) {
  out.startArray();
  for (const Container& container : values) writeContainer(out, container);
  out.endArray();
}

void writeApplicationReport(JsonWriter& out, const ApplicationReport& value) {
  out.startObject()
      .field("id", value.id)
      .field("name", value.name)
      .field("queue", value.queue)
      .field("state", value.state)
      .field("finalStatus", value.finalStatus)
      .field("trackingUrl", value.trackingUrl)
      .field("diagnostics", value.diagnostics)
      .field("allocatedMB", value.allocatedMB)
      .field("allocatedVCores", value.allocatedVCores)
      .field("runningContainers", value.runningContainers)
      .field("currentAppAttemptId", value.currentAppAttemptId)
      .field("amHostHttpAddress", value.amHostHttpAddress)
      .field("startedTime", value.startedTime)
      .field("finishedTime", value.finishedTime)
      .endObject();
}

void writeNodeReport(JsonWriter& out, const NodeReport& value) {
  out.startObject()
      .field("id", value.id)
      .field("nodeHostName", value.nodeHostName)
      .field("nodeHTTPAddress", value.nodeHTTPAddress)
      .field("state", value.state)
      .field("lastHealthUpdate", value.lastHealthUpdate)
      .field("usedMemoryMB", value.usedMemoryMB)
      .field("availMemoryMB", value.availMemoryMB)
      .field("usedVirtualCores", value.usedVirtualCores)
      .field("availableVirtualCores", value.availableVirtualCores)
      .field("numContainers", value.numContainers)
      .endObject();
}

// ---------------------------------------------------------------------------------------------
// Readers: the shared checks, each naming the field it refuses.

std::string requireNonEmpty(const JsonObjectReader& reader, std::string_view key) {
  std::string value = reader.requireString(key);
  if (value.empty()) throw JsonFieldError(reader.fieldPath(key), "must not be empty");
  return value;
}

std::string requireOneOf(const JsonObjectReader& reader, std::string_view key,
                         std::initializer_list<std::string_view> allowed) {
  std::string value = reader.requireString(key);
  std::string expected;
  for (std::string_view candidate : allowed) {
    if (value == candidate) return value;
    if (!expected.empty()) expected += ", ";
    expected += candidate;
  }
  throw JsonFieldError(reader.fieldPath(key),
                       "expected one of " + expected + ", got \"" + value + "\"");
}

// A resource that something must run in: both parts positive, so that placement never
// hands out a container that takes nothing (and could thus be granted without bound).
Resource readPositiveResource(const JsonObjectReader& parent, std::string_view key) {
  JsonObjectReader reader = parent.requireObject(key);
  Resource resource = resourceFromJson(reader.value(), reader.path());
  if (resource.memoryMb <= 0) throw JsonFieldError(reader.fieldPath("memory"), "must be positive");
  if (resource.vCores <= 0) throw JsonFieldError(reader.fieldPath("vCores"), "must be positive");
  return resource;
}

Resource readResource(const JsonObjectReader& parent, std::string_view key) {
  JsonObjectReader reader = parent.requireObject(key);
  return resourceFromJson(reader.value(), reader.path());
}

int requireNonNegativeInt(const JsonObjectReader& reader, std::string_view key) {
  int value = reader.requireInt(key);
  if (value < 0) throw JsonFieldError(reader.fieldPath(key), "must not be negative");
  return value;
}

Container readContainer(const JsonObjectReader& reader) {
  Container container;
  container.id = requireNonEmpty(reader, "id");
  container.nodeId = requireNonEmpty(reader, "nodeId");
  container.nodeHttpAddress = reader.requireString("nodeHttpAddress");
  container.resource = readResource(reader, "resource");
  container.token = reader.requireString("token");
  return container;
}

std::vector<Container> readContainers(const JsonArrayReader& array) {
  std::vector<Container> containers;
  containers.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) containers.push_back(readContainer(array.objectAt(i)));
  return containers;
}

ApplicationReport readApplicationReport(const JsonObjectReader& reader) {
  ApplicationReport report;
  report.id = requireNonEmpty(reader, "id");
  report.name = reader.optionalString("name");
  report.queue = reader.optionalString("queue");
  report.state = requireOneOf(reader, "state",
                              {app_state::kNew, app_state::kAccepted, app_state::kRunning,
                               app_state::kFinished, app_state::kFailed, app_state::kKilled});
  report.finalStatus = requireOneOf(reader, "finalStatus",
                                    {final_status::kUndefined, final_status::kSucceeded,
                                     final_status::kFailed, final_status::kKilled});
  report.trackingUrl = reader.optionalString("trackingUrl");
  report.diagnostics = reader.optionalString("diagnostics");
  report.allocatedMB = reader.optionalInt64("allocatedMB", 0);
  report.allocatedVCores = reader.optionalInt("allocatedVCores", 0);
  report.runningContainers = reader.optionalInt("runningContainers", 0);
  report.currentAppAttemptId = reader.optionalString("currentAppAttemptId");
  report.amHostHttpAddress = reader.optionalString("amHostHttpAddress");
  report.startedTime = reader.optionalInt64("startedTime", 0);
  report.finishedTime = reader.optionalInt64("finishedTime", 0);
  return report;
}

NodeReport readNodeReport(const JsonObjectReader& reader) {
  NodeReport report;
  report.id = requireNonEmpty(reader, "id");
  report.nodeHostName = reader.requireString("nodeHostName");
  report.nodeHTTPAddress = reader.requireString("nodeHTTPAddress");
  report.state = requireOneOf(reader, "state", {node_state::kRunning, node_state::kLost});
  report.lastHealthUpdate = reader.optionalInt64("lastHealthUpdate", 0);
  report.usedMemoryMB = reader.optionalInt64("usedMemoryMB", 0);
  report.availMemoryMB = reader.optionalInt64("availMemoryMB", 0);
  report.usedVirtualCores = reader.optionalInt("usedVirtualCores", 0);
  report.availableVirtualCores = reader.optionalInt("availableVirtualCores", 0);
  report.numContainers = reader.optionalInt("numContainers", 0);
  return report;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Client API

std::string toJson(const NewApplicationResponse& value) {
  JsonWriter out;
  out.startObject().field("application-id", value.applicationId).key("maximum-resource-capability");
  writeResource(out, value.maximumResourceCapability);
  out.endObject();
  return out.str();
}

NewApplicationResponse newApplicationResponseFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  NewApplicationResponse response;
  response.applicationId = requireNonEmpty(reader, "application-id");
  response.maximumResourceCapability = readResource(reader, "maximum-resource-capability");
  return response;
}

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
  writeResource(out, value.resource);
  if (value.maxAppAttempts > 0) out.field("max-app-attempts", value.maxAppAttempts);
  out.endObject();
  return out.str();
}

ApplicationSubmission applicationSubmissionFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ApplicationSubmission submission;
  submission.applicationId = requireNonEmpty(reader, "application-id");
  submission.applicationName = reader.optionalString("application-name");
  submission.queue = reader.optionalString("queue", "default");
  if (submission.queue.empty()) submission.queue = "default";

  JsonObjectReader spec = reader.requireObject("am-container-spec");
  submission.command = requireNonEmpty(spec.requireObject("commands"), "command");
  if (auto environment = spec.optionalObject("environment")) {
    if (auto entries = environment->optionalArray("entry")) {
      for (size_t i = 0; i < entries->size(); ++i) {
        JsonObjectReader entry = entries->objectAt(i);
        submission.environment.emplace_back(requireNonEmpty(entry, "key"),
                                            entry.requireString("value"));
      }
    }
  }
  submission.resource = readPositiveResource(reader, "resource");
  submission.maxAppAttempts = reader.optionalInt("max-app-attempts", 0);
  if (submission.maxAppAttempts < 0) {
    throw JsonFieldError(reader.fieldPath("max-app-attempts"), "must not be negative");
  }
  return submission;
}

std::string toJson(const ApplicationReport& value) {
  JsonWriter out;
  out.startObject().key("app");
  writeApplicationReport(out, value);
  out.endObject();
  return out.str();
}

ApplicationReport applicationReportFromJson(const rapidjson::Value& json) {
  return readApplicationReport(JsonObjectReader(json).requireObject("app"));
}

std::string toJson(const std::vector<ApplicationReport>& value) {
  JsonWriter out;
  out.startObject().key("apps").startObject().key("app").startArray();
  for (const ApplicationReport& report : value) writeApplicationReport(out, report);
  out.endArray().endObject().endObject();
  return out.str();
}

std::vector<ApplicationReport> applicationReportsFromJson(const rapidjson::Value& json) {
  std::vector<ApplicationReport> reports;
  JsonObjectReader reader(json);
  // YARN answers {"apps": null} when there are none.
  auto apps = reader.optionalObject("apps");
  if (!apps) return reports;
  auto list = apps->optionalArray("app");
  if (!list) return reports;
  for (size_t i = 0; i < list->size(); ++i) {
    reports.push_back(readApplicationReport(list->objectAt(i)));
  }
  return reports;
}

std::string toJson(const AppStateMessage& value) {
  JsonWriter out;
  out.startObject().field("state", value.state).endObject();
  return out.str();
}

AppStateMessage appStateFromJson(const rapidjson::Value& json) {
  return AppStateMessage{requireNonEmpty(JsonObjectReader(json), "state")};
}

std::string toJson(const ClusterMetrics& value) {
  JsonWriter out;
  out.startObject()
      .key("clusterMetrics")
      .startObject()
      .field("appsSubmitted", value.appsSubmitted)
      .field("appsPending", value.appsPending)
      .field("appsRunning", value.appsRunning)
      .field("appsCompleted", value.appsCompleted)
      .field("appsFailed", value.appsFailed)
      .field("appsKilled", value.appsKilled)
      .field("allocatedMB", value.allocatedMB)
      .field("availableMB", value.availableMB)
      .field("totalMB", value.totalMB)
      .field("allocatedVirtualCores", value.allocatedVirtualCores)
      .field("availableVirtualCores", value.availableVirtualCores)
      .field("totalVirtualCores", value.totalVirtualCores)
      .field("containersAllocated", value.containersAllocated)
      .field("activeNodes", value.activeNodes)
      .field("lostNodes", value.lostNodes)
      .field("totalNodes", value.totalNodes)
      .endObject()
      .endObject();
  return out.str();
}

ClusterMetrics clusterMetricsFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader = JsonObjectReader(json).requireObject("clusterMetrics");
  ClusterMetrics metrics;
  metrics.appsSubmitted = reader.requireInt("appsSubmitted");
  metrics.appsPending = reader.optionalInt("appsPending", 0);
  metrics.appsRunning = reader.requireInt("appsRunning");
  metrics.appsCompleted = reader.requireInt("appsCompleted");
  metrics.appsFailed = reader.requireInt("appsFailed");
  metrics.appsKilled = reader.requireInt("appsKilled");
  metrics.allocatedMB = reader.requireInt64("allocatedMB");
  metrics.availableMB = reader.requireInt64("availableMB");
  metrics.totalMB = reader.requireInt64("totalMB");
  metrics.allocatedVirtualCores = reader.requireInt64("allocatedVirtualCores");
  metrics.availableVirtualCores = reader.requireInt64("availableVirtualCores");
  metrics.totalVirtualCores = reader.requireInt64("totalVirtualCores");
  metrics.containersAllocated = reader.requireInt("containersAllocated");
  metrics.activeNodes = reader.requireInt("activeNodes");
  metrics.lostNodes = reader.requireInt("lostNodes");
  metrics.totalNodes = reader.requireInt("totalNodes");
  return metrics;
}

std::string toJson(const std::vector<NodeReport>& value) {
  JsonWriter out;
  out.startObject().key("nodes").startObject().key("node").startArray();
  for (const NodeReport& report : value) writeNodeReport(out, report);
  out.endArray().endObject().endObject();
  return out.str();
}

std::vector<NodeReport> nodeReportsFromJson(const rapidjson::Value& json) {
  std::vector<NodeReport> reports;
  auto nodes = JsonObjectReader(json).optionalObject("nodes");
  if (!nodes) return reports;
  auto list = nodes->optionalArray("node");
  if (!list) return reports;
  for (size_t i = 0; i < list->size(); ++i) reports.push_back(readNodeReport(list->objectAt(i)));
  return reports;
}

std::string toJson(const ClusterInfo& value) {
  JsonWriter out;
  out.startObject()
      .key("clusterInfo")
      .startObject()
      .field("id", value.id)
      .field("startedOn", value.startedOn)
      .field("state", value.state)
      .field("haState", value.haState)
      .field("resourceManagerVersion", value.resourceManagerVersion)
      .endObject()
      .endObject();
  return out.str();
}

ClusterInfo clusterInfoFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader = JsonObjectReader(json).requireObject("clusterInfo");
  ClusterInfo info;
  info.id = reader.requireInt64("id");
  info.startedOn = reader.requireInt64("startedOn");
  info.state = reader.requireString("state");
  info.haState = reader.optionalString("haState");
  info.resourceManagerVersion = reader.optionalString("resourceManagerVersion");
  return info;
}

// ---------------------------------------------------------------------------------------------
// ApplicationMaster protocol

std::string toJson(const RegisterApplicationMasterRequest& value) {
  JsonWriter out;
  out.startObject()
      .field("host", value.host)
      .field("port", value.port)
      .field("trackingUrl", value.trackingUrl)
      .endObject();
  return out.str();
}

RegisterApplicationMasterRequest registerApplicationMasterRequestFromJson(
    const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  RegisterApplicationMasterRequest request;
  request.host = reader.requireString("host");
  request.port = reader.optionalInt("port", 0);
  if (request.port < 0 || request.port > 65535) {
    throw JsonFieldError(reader.fieldPath("port"), "must be a port number (0-65535)");
  }
  request.trackingUrl = reader.optionalString("trackingUrl");
  return request;
}

std::string toJson(const RegisterApplicationMasterResponse& value) {
  JsonWriter out;
  out.startObject().key("maximumResourceCapability");
  writeResource(out, value.maximumResourceCapability);
  out.key("containersFromPreviousAttempts");
  writeContainers(out, value.containersFromPreviousAttempts);
  out.endObject();
  return out.str();
}

RegisterApplicationMasterResponse registerApplicationMasterResponseFromJson(
    const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  RegisterApplicationMasterResponse response;
  response.maximumResourceCapability = readResource(reader, "maximumResourceCapability");
  if (auto previous = reader.optionalArray("containersFromPreviousAttempts")) {
    response.containersFromPreviousAttempts = readContainers(*previous);
  }
  return response;
}

std::string toJson(const AllocateRequest& value) {
  JsonWriter out;
  out.startObject()
      .field("responseId", value.responseId)
      .field("progress", value.progress)
      .key("asks")
      .startArray();
  for (const ResourceRequest& ask : value.asks) {
    out.startObject().field("priority", ask.priority).key("resource");
    writeResource(out, ask.resource);
    out.field("numContainers", ask.numContainers)
        .field("resourceName", ask.resourceName)
        .field("relaxLocality", ask.relaxLocality)
        .endObject();
  }
  out.endArray().key("releases").startArray();
  for (const std::string& id : value.releases) out.value(id);
  out.endArray().endObject();
  return out.str();
}

AllocateRequest allocateRequestFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  AllocateRequest request;
  request.responseId = reader.requireInt64("responseId");
  if (request.responseId < 0) {
    throw JsonFieldError(reader.fieldPath("responseId"), "must not be negative");
  }
  request.progress = reader.optionalDouble("progress", 0);
  if (auto asks = reader.optionalArray("asks")) {
    for (size_t i = 0; i < asks->size(); ++i) {
      JsonObjectReader askReader = asks->objectAt(i);
      ResourceRequest ask;
      ask.priority = requireNonNegativeInt(askReader, "priority");
      ask.resource = readPositiveResource(askReader, "resource");
      ask.numContainers = requireNonNegativeInt(askReader, "numContainers");
      ask.resourceName = askReader.optionalString("resourceName", "*");
      if (ask.resourceName.empty()) {
        throw JsonFieldError(askReader.fieldPath("resourceName"), "must not be empty");
      }
      ask.relaxLocality = askReader.optionalBool("relaxLocality", true);
      request.asks.push_back(std::move(ask));
    }
  }
  if (auto releases = reader.optionalArray("releases")) {
    for (size_t i = 0; i < releases->size(); ++i) {
      std::string id = releases->stringAt(i);
      if (id.empty()) throw JsonFieldError(releases->elementPath(i), "must not be empty");
      request.releases.push_back(std::move(id));
    }
  }
  return request;
}

std::string toJson(const AllocateResponse& value) {
  JsonWriter out;
  out.startObject().field("responseId", value.responseId).key("allocatedContainers");
  writeContainers(out, value.allocatedContainers);
  out.key("completedContainers").startArray();
  for (const CompletedContainer& completed : value.completedContainers) {
    out.startObject()
        .field("containerId", completed.containerId)
        .field("exitStatus", completed.exitStatus)
        .field("state", completed.state)
        .field("diagnostics", completed.diagnostics)
        .endObject();
  }
  out.endArray().key("availableResources");
  writeResource(out, value.availableResources);
  out.field("numClusterNodes", value.numClusterNodes).endObject();
  return out.str();
}

AllocateResponse allocateResponseFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  AllocateResponse response;
  response.responseId = reader.requireInt64("responseId");
  response.allocatedContainers = readContainers(reader.requireArray("allocatedContainers"));
  JsonArrayReader completed = reader.requireArray("completedContainers");
  for (size_t i = 0; i < completed.size(); ++i) {
    JsonObjectReader item = completed.objectAt(i);
    CompletedContainer container;
    container.containerId = requireNonEmpty(item, "containerId");
    container.exitStatus = item.requireInt("exitStatus");
    container.state = item.optionalString("state", container_state::kComplete);
    container.diagnostics = item.optionalString("diagnostics");
    response.completedContainers.push_back(std::move(container));
  }
  response.availableResources = readResource(reader, "availableResources");
  response.numClusterNodes = reader.requireInt("numClusterNodes");
  return response;
}

std::string toJson(const FinishApplicationMasterRequest& value) {
  JsonWriter out;
  out.startObject()
      .field("finalStatus", value.finalStatus)
      .field("diagnostics", value.diagnostics)
      .endObject();
  return out.str();
}

FinishApplicationMasterRequest finishApplicationMasterRequestFromJson(
    const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  FinishApplicationMasterRequest request;
  request.finalStatus =
      requireOneOf(reader, "finalStatus",
                   {final_status::kSucceeded, final_status::kFailed, final_status::kKilled});
  request.diagnostics = reader.optionalString("diagnostics");
  return request;
}

std::string toJson(const FinishApplicationMasterResponse& value) {
  JsonWriter out;
  out.startObject().field("isUnregistered", value.isUnregistered).endObject();
  return out.str();
}

FinishApplicationMasterResponse finishApplicationMasterResponseFromJson(
    const rapidjson::Value& json) {
  return FinishApplicationMasterResponse{
      JsonObjectReader(json).optionalBool("isUnregistered", true)};
}

}  // namespace tide::rest
