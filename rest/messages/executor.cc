#include "rest/messages/executor.h"

#include <optional>
#include <string_view>

#include "rest/json.h"

namespace tide::rest {
namespace {

constexpr std::string_view kTaskKinds[] = {"command", "noop", "sleep"};
constexpr std::string_view kTaskStates[] = {"FINISHED", "FAILED", "KILLED", "FETCH_FAILED"};

// ---------------------------------------------------------------------------------------------
// Writers: each writes one value into a stream, so a sync with a thousand updates is one pass
// over one buffer.

void writeBlockInput(JsonWriter& out, const BlockInput& value) {
  out.startObject()
      .field("stageId", value.stageId)
      .field("mapIndex", value.mapIndex)
      .field("executorId", value.executorId)
      .field("url", value.url)
      .field("path", value.path)
      .field("size", value.size)
      .endObject();
}

void writeTaskLaunch(JsonWriter& out, const TaskLaunch& value) {
  out.startObject()
      .field("taskId", value.taskId)
      .field("jobId", value.jobId)
      .field("stageId", value.stageId)
      .field("index", value.index)
      .field("attempt", value.attempt)
      .field("kind", value.kind)
      .key("argv")
      .startArray();
  for (const std::string& arg : value.argv) out.value(arg);
  out.endArray().key("env").startObject();
  for (const auto& [name, text] : value.env) out.field(name, text);
  out.endObject()
      .field("cwd", value.cwd)
      .field("timeoutMs", value.timeoutMs)
      .field("sleepMs", value.sleepMs)
      .field("cpus", value.cpus);
  if (!value.inputs.empty()) {
    out.key("inputs").startArray();
    for (const BlockInput& input : value.inputs) writeBlockInput(out, input);
    out.endArray();
  }
  if (!value.collectDir.empty()) out.field("collectDir", value.collectDir);
  if (value.speculative) out.field("speculative", true);
  out.endObject();
}

void writeTaskStatusUpdate(JsonWriter& out, const TaskStatusUpdate& value) {
  out.startObject()
      .field("taskId", value.taskId)
      .field("state", value.state)
      .field("exitCode", value.exitCode)
      .field("reason", value.reason)
      .field("stderrTail", value.stderrTail)
      .field("durationMs", value.durationMs);
  if (!value.blocks.empty()) {
    out.key("blocks").startArray();
    for (const BlockOutput& block : value.blocks) {
      out.startObject().field("partition", block.partition).field("size", block.size).endObject();
    }
    out.endArray();
  }
  if (value.state == "FETCH_FAILED") {
    out.key("failedInput");
    writeBlockInput(out, value.failedInput);
  }
  out.endObject();
}

void writeIds(JsonWriter& out, std::string_view key, const std::vector<int64_t>& ids) {
  out.key(key).startArray();
  for (int64_t id : ids) out.value(id);
  out.endArray();
}

// ---------------------------------------------------------------------------------------------
// Readers: the shared checks, each naming the field it refuses.

std::string requireNonEmptyString(const JsonObjectReader& reader, std::string_view key) {
  std::string value = reader.requireString(key);
  if (value.empty()) throw JsonFieldError(reader.fieldPath(key), "must not be empty");
  return value;
}

template <typename Integer>
Integer checkAtLeast(const JsonObjectReader& reader, std::string_view key, Integer value,
                     Integer minimum) {
  if (value < minimum) {
    throw JsonFieldError(reader.fieldPath(key), "must be at least " + std::to_string(minimum) +
                                                    ", got " + std::to_string(value));
  }
  return value;
}

template <size_t N>
std::string requireOneOf(const JsonObjectReader& reader, std::string_view key,
                         const std::string_view (&choices)[N]) {
  std::string value = reader.requireString(key);
  std::string expected;
  for (std::string_view choice : choices) {
    if (value == choice) return value;
    expected += expected.empty() ? "" : ", ";
    expected += "\"" + std::string(choice) + "\"";
  }
  throw JsonFieldError(reader.fieldPath(key),
                       "expected one of " + expected + ", got \"" + value + "\"");
}

// Task ids in "running" and "kills": non-negative integers.
std::vector<int64_t> readIds(const JsonObjectReader& reader, std::string_view key) {
  std::vector<int64_t> ids;
  std::optional<JsonArrayReader> array = reader.optionalArray(key);
  if (!array) return ids;
  ids.reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    int64_t id = array->int64At(i);
    if (id < 0) throw JsonFieldError(array->elementPath(i), "must not be negative");
    ids.push_back(id);
  }
  return ids;
}

BlockInput readBlockInput(const JsonObjectReader& reader) {
  BlockInput input;
  input.stageId = requireNonEmptyString(reader, "stageId");
  input.mapIndex = checkAtLeast<int64_t>(reader, "mapIndex", reader.requireInt64("mapIndex"), 0);
  input.executorId = reader.optionalString("executorId");
  input.url = reader.optionalString("url");
  input.path = reader.optionalString("path");
  input.size = checkAtLeast<int64_t>(reader, "size", reader.optionalInt64("size", 0), 0);
  return input;
}

TaskLaunch readTaskLaunch(const JsonObjectReader& reader) {
  TaskLaunch launch;
  launch.taskId = checkAtLeast<int64_t>(reader, "taskId", reader.requireInt64("taskId"), 0);
  launch.jobId = reader.optionalString("jobId");
  launch.stageId = reader.optionalString("stageId");
  launch.index = checkAtLeast<int64_t>(reader, "index", reader.optionalInt64("index", 0), 0);
  launch.attempt = checkAtLeast(reader, "attempt", reader.optionalInt("attempt", 0), 0);
  launch.kind = requireOneOf(reader, "kind", kTaskKinds);
  if (std::optional<JsonArrayReader> argv = reader.optionalArray("argv")) {
    launch.argv.reserve(argv->size());
    for (size_t i = 0; i < argv->size(); ++i) launch.argv.push_back(argv->stringAt(i));
  }
  if (launch.kind == "command" && launch.argv.empty()) {
    throw JsonFieldError(reader.fieldPath("argv"), "a \"command\" task needs a program to run");
  }
  if (launch.kind == "command" && launch.argv.front().empty()) {
    throw JsonFieldError(reader.fieldPath("argv") + "[0]", "must not be empty");
  }
  if (std::optional<JsonObjectReader> env = reader.optionalObject("env")) {
    for (const auto& member : env->value().GetObject()) {
      std::string name(member.name.GetString(), member.name.GetStringLength());
      if (name.empty() || name.find('=') != std::string::npos) {
        throw JsonFieldError(env->fieldPath(name), "not a valid environment variable name");
      }
      launch.env[name] = env->requireString(name);
    }
  }
  launch.cwd = reader.optionalString("cwd");
  launch.timeoutMs =
      checkAtLeast<int64_t>(reader, "timeoutMs", reader.optionalInt64("timeoutMs", 0), 0);
  launch.sleepMs = checkAtLeast<int64_t>(reader, "sleepMs", reader.optionalInt64("sleepMs", 0), 0);
  launch.cpus = checkAtLeast(reader, "cpus", reader.optionalInt("cpus", 1), 1);
  if (std::optional<JsonArrayReader> inputs = reader.optionalArray("inputs")) {
    launch.inputs.reserve(inputs->size());
    for (size_t i = 0; i < inputs->size(); ++i) {
      BlockInput input = readBlockInput(inputs->objectAt(i));
      if (input.path.empty() || input.path.find("..") != std::string::npos ||
          input.path.front() == '/') {
        throw JsonFieldError(inputs->elementPath(i) + ".path",
                             "expected a relative block path without '..'");
      }
      launch.inputs.push_back(std::move(input));
    }
  }
  launch.collectDir = reader.optionalString("collectDir");
  launch.speculative = reader.optionalBool("speculative", false);
  return launch;
}

TaskStatusUpdate readTaskStatusUpdate(const JsonObjectReader& reader) {
  TaskStatusUpdate update;
  update.taskId = checkAtLeast<int64_t>(reader, "taskId", reader.requireInt64("taskId"), 0);
  update.state = requireOneOf(reader, "state", kTaskStates);
  update.exitCode = reader.optionalInt("exitCode", 0);
  update.reason = reader.optionalString("reason");
  update.stderrTail = reader.optionalString("stderrTail");
  update.durationMs =
      checkAtLeast<int64_t>(reader, "durationMs", reader.optionalInt64("durationMs", 0), 0);
  if (std::optional<JsonArrayReader> blocks = reader.optionalArray("blocks")) {
    for (size_t i = 0; i < blocks->size(); ++i) {
      JsonObjectReader block = blocks->objectAt(i);
      BlockOutput output;
      output.partition =
          checkAtLeast<int64_t>(block, "partition", block.requireInt64("partition"), 0);
      output.size = checkAtLeast<int64_t>(block, "size", block.optionalInt64("size", 0), 0);
      update.blocks.push_back(output);
    }
  }
  if (update.state == "FETCH_FAILED") {
    update.failedInput = readBlockInput(reader.requireObject("failedInput"));
  }
  return update;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Encoders

std::string toJson(const ExecutorRegistration& value) {
  JsonWriter out;
  out.startObject()
      .field("executorId", value.executorId)
      .field("containerId", value.containerId)
      .field("host", value.host)
      .field("port", value.port)
      .field("node", value.node)
      .field("cores", value.cores)
      .field("pid", value.pid)
      .endObject();
  return out.str();
}

std::string toJson(const ExecutorRegistered& value) {
  JsonWriter out;
  out.startObject()
      .field("heartbeatIntervalMs", value.heartbeatIntervalMs)
      .field("taskSlots", value.taskSlots)
      .endObject();
  return out.str();
}

std::string toJson(const TaskLaunch& value) {
  JsonWriter out;
  writeTaskLaunch(out, value);
  return out.str();
}

std::string toJson(const TaskStatusUpdate& value) {
  JsonWriter out;
  writeTaskStatusUpdate(out, value);
  return out.str();
}

std::string toJson(const ExecutorSync& value) {
  JsonWriter out;
  out.startObject().key("updates").startArray();
  for (const TaskStatusUpdate& update : value.updates) writeTaskStatusUpdate(out, update);
  out.endArray();
  writeIds(out, "running", value.running);
  out.field("freeSlots", value.freeSlots).field("maxWaitMs", value.maxWaitMs).endObject();
  return out.str();
}

std::string toJson(const ExecutorSyncReply& value) {
  JsonWriter out;
  out.startObject().key("launches").startArray();
  for (const TaskLaunch& launch : value.launches) writeTaskLaunch(out, launch);
  out.endArray();
  writeIds(out, "kills", value.kills);
  out.field("shutdown", value.shutdown);
  if (!value.dropBlocks.empty()) {
    out.key("dropBlocks").startArray();
    for (const std::string& prefix : value.dropBlocks) out.value(prefix);
    out.endArray();
  }
  out.endObject();
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Decoders

ExecutorRegistration executorRegistrationFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ExecutorRegistration registration;
  registration.executorId = requireNonEmptyString(reader, "executorId");
  registration.containerId = reader.optionalString("containerId");
  registration.host = reader.optionalString("host");
  registration.port = reader.optionalInt("port", 0);
  if (registration.port < 0 || registration.port > 65535) {
    throw JsonFieldError(reader.fieldPath("port"),
                         "expected a port in 0..65535, got " + std::to_string(registration.port));
  }
  registration.node = reader.optionalString("node");
  registration.cores = checkAtLeast(reader, "cores", reader.requireInt("cores"), 1);
  registration.pid = checkAtLeast<int64_t>(reader, "pid", reader.optionalInt64("pid", 0), 0);
  return registration;
}

ExecutorRegistered executorRegisteredFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ExecutorRegistered registered;
  registered.heartbeatIntervalMs = checkAtLeast<int64_t>(
      reader, "heartbeatIntervalMs", reader.requireInt64("heartbeatIntervalMs"), 1);
  registered.taskSlots = checkAtLeast(reader, "taskSlots", reader.requireInt("taskSlots"), 1);
  return registered;
}

TaskLaunch taskLaunchFromJson(const rapidjson::Value& json, const std::string& path) {
  return readTaskLaunch(JsonObjectReader(json, path));
}

TaskStatusUpdate taskStatusUpdateFromJson(const rapidjson::Value& json, const std::string& path) {
  return readTaskStatusUpdate(JsonObjectReader(json, path));
}

ExecutorSync executorSyncFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ExecutorSync sync;
  if (std::optional<JsonArrayReader> updates = reader.optionalArray("updates")) {
    sync.updates.reserve(updates->size());
    for (size_t i = 0; i < updates->size(); ++i) {
      sync.updates.push_back(readTaskStatusUpdate(updates->objectAt(i)));
    }
  }
  sync.running = readIds(reader, "running");
  sync.freeSlots = checkAtLeast(reader, "freeSlots", reader.requireInt("freeSlots"), 0);
  sync.maxWaitMs =
      checkAtLeast<int64_t>(reader, "maxWaitMs", reader.optionalInt64("maxWaitMs", 0), 0);
  return sync;
}

ExecutorSyncReply executorSyncReplyFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  ExecutorSyncReply reply;
  if (std::optional<JsonArrayReader> launches = reader.optionalArray("launches")) {
    reply.launches.reserve(launches->size());
    for (size_t i = 0; i < launches->size(); ++i) {
      reply.launches.push_back(readTaskLaunch(launches->objectAt(i)));
    }
  }
  reply.kills = readIds(reader, "kills");
  reply.shutdown = reader.optionalBool("shutdown", false);
  if (std::optional<JsonArrayReader> drops = reader.optionalArray("dropBlocks")) {
    for (size_t i = 0; i < drops->size(); ++i) reply.dropBlocks.push_back(drops->stringAt(i));
  }
  return reply;
}

}  // namespace tide::rest
