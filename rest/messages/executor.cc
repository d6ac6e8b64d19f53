#include "rest/messages/executor.h"

#include <iterator>
#include <optional>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::rest {
namespace {

using json_check::atLeast;
using json_check::nonEmpty;

JsonCheck<std::string> oneOfQuoted(std::vector<std::string> choices) {
  return json_check::oneOf(std::move(choices), /*quoted=*/true);
}

const JsonFields<BlockInput>& blockInputFields() {
  static const JsonFields<BlockInput> fields =
      JsonFields<BlockInput>()
          .required("stageId", &BlockInput::stageId, nonEmpty())
          .required("mapIndex", &BlockInput::mapIndex, atLeast<int64_t>(0))
          .optional("executorId", &BlockInput::executorId, "")
          .optional("url", &BlockInput::url, "")
          .optional("path", &BlockInput::path, "")
          .optional("size", &BlockInput::size, 0, atLeast<int64_t>(0));
  return fields;
}

const JsonFields<BlockOutput>& blockOutputFields() {
  static const JsonFields<BlockOutput> fields =
      JsonFields<BlockOutput>()
          .required("partition", &BlockOutput::partition, atLeast<int64_t>(0))
          .optional("size", &BlockOutput::size, 0, atLeast<int64_t>(0));
  return fields;
}

// A command task needs a program to run.
void readArgv(const JsonObjectReader& reader, TaskLaunch& launch) {
  launch.argv = JsonValueCodec<std::vector<std::string>>::optional(reader, "argv", {});
  if (launch.kind == "command" && launch.argv.empty()) {
    throw JsonFieldError(reader.fieldPath("argv"), "a \"command\" task needs a program to run");
  }
  if (launch.kind == "command" && launch.argv.front().empty()) {
    throw JsonFieldError(reader.fieldPath("argv") + "[0]", "must not be empty");
  }
}

void readEnv(const JsonObjectReader& reader, TaskLaunch& launch) {
  std::optional<JsonObjectReader> env = reader.optionalObject("env");
  if (!env) return;
  for (const auto& member : env->value().GetObject()) {
    std::string name(member.name.GetString(), member.name.GetStringLength());
    if (name.empty() || name.find('=') != std::string::npos) {
      throw JsonFieldError(env->fieldPath(name), "not a valid environment variable name");
    }
    launch.env[name] = env->requireString(name);
  }
}

void writeEnv(JsonWriter& out, const TaskLaunch& launch) {
  out.key("env").startObject();
  for (const auto& [name, text] : launch.env) out.field(name, text);
  out.endObject();
}

// Inputs name blocks by a relative path that cannot leave the block store.
void readInputs(const JsonObjectReader& reader, TaskLaunch& launch) {
  std::optional<JsonArrayReader> inputs = reader.optionalArray("inputs");
  if (!inputs) return;
  launch.inputs.reserve(inputs->size());
  for (size_t i = 0; i < inputs->size(); ++i) {
    BlockInput input = blockInputFields().read(inputs->objectAt(i));
    if (input.path.empty() || input.path.find("..") != std::string::npos ||
        input.path.front() == '/') {
      throw JsonFieldError(inputs->elementPath(i) + ".path",
                           "expected a relative block path without '..'");
    }
    launch.inputs.push_back(std::move(input));
  }
}

void writeInputs(JsonWriter& out, const TaskLaunch& launch) {
  out.key("inputs");
  blockInputFields().writeArray(out, launch.inputs);
}

const JsonFields<TaskLaunch>& taskLaunchFields() {
  using L = TaskLaunch;
  static const JsonFields<L> fields =
      JsonFields<L>()
          .required("taskId", &L::taskId, atLeast<int64_t>(0))
          .optional("jobId", &L::jobId, "")
          .optional("stageId", &L::stageId, "")
          .optional("index", &L::index, 0, atLeast<int64_t>(0))
          .optional("attempt", &L::attempt, 0, atLeast(0))
          .required("kind", &L::kind, oneOfQuoted({"command", "noop", "sleep"}))
          .custom("argv", readArgv,
                  [](JsonWriter& out, const L& value) {
                    out.key("argv");
                    JsonValueCodec<std::vector<std::string>>::write(out, value.argv);
                  })
          .custom("env", readEnv, writeEnv)
          .optional("cwd", &L::cwd, "")
          .optional("timeoutMs", &L::timeoutMs, 0, atLeast<int64_t>(0))
          .optional("sleepMs", &L::sleepMs, 0, atLeast<int64_t>(0))
          .optional("cpus", &L::cpus, 1, atLeast(1))
          .custom("inputs", readInputs, writeInputs)
          .writeIf([](const L& value) { return !value.inputs.empty(); })
          .optional("collectDir", &L::collectDir, "")
          .writeIf([](const L& value) { return !value.collectDir.empty(); })
          .optional("speculative", &L::speculative, false)
          .writeIf([](const L& value) { return value.speculative; })
          .optional("queued", &L::queued, false)
          .writeIf([](const L& value) { return value.queued; });
  return fields;
}

bool fetchFailed(const TaskStatusUpdate& update) {
  return update.state == TaskState::kFetchFailed;
}

// In TaskState's order: the state's names exist only here, on the wire.
constexpr const char* kTaskStates[] = {"FINISHED", "FAILED", "KILLED", "FETCH_FAILED"};

void readTaskState(const JsonObjectReader& reader, TaskStatusUpdate& update) {
  const std::string state = reader.requireString("state");
  std::string expected;
  for (size_t i = 0; i < std::size(kTaskStates); ++i) {
    if (state == kTaskStates[i]) {
      update.state = static_cast<TaskState>(i);
      return;
    }
    expected += std::string(expected.empty() ? "" : ", ") + "\"" + kTaskStates[i] + "\"";
  }
  throw JsonFieldError(reader.fieldPath("state"),
                       "expected one of " + expected + ", got \"" + state + "\"");
}

const JsonFields<TaskStatusUpdate>& taskStatusUpdateFields() {
  using U = TaskStatusUpdate;
  static const JsonFields<U> fields =
      JsonFields<U>()
          .required("taskId", &U::taskId, atLeast<int64_t>(0))
          .custom("state", readTaskState,
                  [](JsonWriter& out, const U& value) {
                    out.field("state", taskStateName(value.state));
                  })
          .optional("exitCode", &U::exitCode, 0)
          .optional("reason", &U::reason, "")
          .optional("stderrTail", &U::stderrTail, "")
          .optional("durationMs", &U::durationMs, 0, atLeast<int64_t>(0))
          .objects("blocks", &U::blocks, blockOutputFields(), /*required=*/false)
          .writeIf([](const U& value) { return !value.blocks.empty(); })
          .custom(
              "failedInput",
              [](const JsonObjectReader& reader, U& update) {
                if (fetchFailed(update)) {
                  update.failedInput = blockInputFields().read(reader.requireObject("failedInput"));
                }
              },
              [](JsonWriter& out, const U& update) {
                if (!fetchFailed(update)) return;
                out.key("failedInput");
                blockInputFields().write(out, update.failedInput);
              });
  return fields;
}

// Task ids in "running", "returned", "kills" and "takeBack": non-negative integers.
template <typename T>
typename JsonFields<T>::Reader readIds(std::string key, std::vector<int64_t> T::*member) {
  return [key, member](const JsonObjectReader& reader, T& value) {
    std::optional<JsonArrayReader> array = reader.optionalArray(key);
    if (!array) return;
    std::vector<int64_t>& ids = value.*member;
    ids.reserve(array->size());
    for (size_t i = 0; i < array->size(); ++i) {
      int64_t id = array->int64At(i);
      if (id < 0) throw JsonFieldError(array->elementPath(i), "must not be negative");
      ids.push_back(id);
    }
  };
}

template <typename T>
typename JsonFields<T>::Writer writeIds(std::string key, std::vector<int64_t> T::*member) {
  return [key, member](JsonWriter& out, const T& value) {
    out.key(key).startArray();
    for (int64_t id : value.*member) out.value(id);
    out.endArray();
  };
}

const JsonFields<ExecutorRegistration>& registrationFields() {
  using R = ExecutorRegistration;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("executorId", &R::executorId, nonEmpty())
          .optional("containerId", &R::containerId, "")
          .optional("host", &R::host, "")
          .optional("port", &R::port, 0, json_check::inRange(0, 65535, "a port"))
          .optional("node", &R::node, "")
          .required("cores", &R::cores, atLeast(1))
          .optional("pid", &R::pid, 0, atLeast<int64_t>(0))
          .optional("resumed", &R::resumed, false)
          .custom("running", readIds("running", &R::running), writeIds("running", &R::running))
          .custom(
              "blocks",
              [](const JsonObjectReader& reader, R& value) {
                value.blocksReported = reader.has("blocks");
                value.blocks =
                    JsonValueCodec<std::vector<std::string>>::optional(reader, "blocks", {});
              },
              [](JsonWriter& out, const R& value) {
                if (!value.blocksReported) return;
                out.key("blocks");
                JsonValueCodec<std::vector<std::string>>::write(out, value.blocks);
              });
  return fields;
}

const JsonFields<ExecutorRegistered>& registeredFields() {
  using R = ExecutorRegistered;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .required("heartbeatIntervalMs", &R::heartbeatIntervalMs, atLeast<int64_t>(1))
          .required("taskSlots", &R::taskSlots, atLeast(1))
          .optional("queuedTaskWaitMs", &R::queuedTaskWaitMs, 0, atLeast<int64_t>(0));
  return fields;
}

// A migration names blocks by relative paths that cannot leave the block store.
void readMigrationBlocks(const JsonObjectReader& reader, BlockMigration& migration) {
  migration.blocks = JsonValueCodec<std::vector<std::string>>::optional(reader, "blocks", {});
  for (size_t i = 0; i < migration.blocks.size(); ++i) {
    const std::string& path = migration.blocks[i];
    if (path.empty() || path.find("..") != std::string::npos || path.front() == '/') {
      throw JsonFieldError(reader.fieldPath("blocks") + "[" + std::to_string(i) + "]",
                           "expected a relative block path without '..'");
    }
  }
}

// The fallback storage is one directory every executor reaches: named absolutely.
void readFallbackDir(const JsonObjectReader& reader, BlockMigration& migration) {
  migration.fallbackDir = JsonValueCodec<std::string>::optional(reader, "fallbackDir", "");
  if (!migration.fallbackDir.empty() && migration.fallbackDir.front() != '/') {
    throw JsonFieldError(reader.fieldPath("fallbackDir"), "expected an absolute path");
  }
}

const JsonFields<BlockMigration>& blockMigrationFields() {
  using M = BlockMigration;
  static const JsonFields<M> fields =
      JsonFields<M>()
          .required("id", &M::id, atLeast<int64_t>(1))
          .required("fromExecutor", &M::fromExecutor, nonEmpty())
          .optional("url", &M::url, "")
          .custom("blocks", readMigrationBlocks,
                  [](JsonWriter& out, const M& value) {
                    out.key("blocks");
                    JsonValueCodec<std::vector<std::string>>::write(out, value.blocks);
                  })
          .custom("fallbackDir", readFallbackDir, [](JsonWriter& out, const M& value) {
            if (value.fallbackDir.empty()) return;
            out.key("fallbackDir");
            out.value(value.fallbackDir);
          });
  return fields;
}

const JsonFields<BlockMigrationResult>& blockMigrationResultFields() {
  using R = BlockMigrationResult;
  static const JsonFields<R> fields = JsonFields<R>()
                                          .required("id", &R::id, atLeast<int64_t>(1))
                                          .required("ok", &R::ok)
                                          .optional("reason", &R::reason, "");
  return fields;
}

const JsonFields<ExecutorSync>& syncFields() {
  using S = ExecutorSync;
  static const JsonFields<S> fields =
      JsonFields<S>()
          .objects("updates", &S::updates, taskStatusUpdateFields(), /*required=*/false)
          .objects("migrated", &S::migrated, blockMigrationResultFields(), /*required=*/false)
          .writeIf([](const S& value) { return !value.migrated.empty(); })
          .custom("running", readIds("running", &S::running), writeIds("running", &S::running))
          .custom("returned", readIds("returned", &S::returned), writeIds("returned", &S::returned))
          .writeIf([](const S& value) { return !value.returned.empty(); })
          .required("freeSlots", &S::freeSlots, atLeast(0))
          .optional("maxWaitMs", &S::maxWaitMs, 0, atLeast<int64_t>(0))
          .optional("decommissioning", &S::decommissioning, false)
          .writeIf([](const S& value) { return value.decommissioning; });
  return fields;
}

const JsonFields<ExecutorSyncReply>& syncReplyFields() {
  using R = ExecutorSyncReply;
  static const JsonFields<R> fields =
      JsonFields<R>()
          .objects("launches", &R::launches, taskLaunchFields(), /*required=*/false)
          .custom("kills", readIds("kills", &R::kills), writeIds("kills", &R::kills))
          .custom("takeBack", readIds("takeBack", &R::takeBack), writeIds("takeBack", &R::takeBack))
          .writeIf([](const R& value) { return !value.takeBack.empty(); })
          .optional("shutdown", &R::shutdown, false)
          .optional("dropBlocks", &R::dropBlocks, {})
          .writeIf([](const R& value) { return !value.dropBlocks.empty(); })
          .objects("migrations", &R::migrations, blockMigrationFields(), /*required=*/false)
          .writeIf([](const R& value) { return !value.migrations.empty(); });
  return fields;
}

}  // namespace

const char* taskStateName(TaskState state) {
  return enumName(state, kTaskStates);
}

// ---------------------------------------------------------------------------------------------
// Encoders and decoders: the tables above. A sync with a thousand updates is one pass over
// one buffer.

// The commit protocol's two small messages.

std::string toJson(const CommitRequest& value) {
  JsonWriter out;
  out.startObject().field("taskId", value.taskId).endObject();
  return out.str();
}

std::string toJson(const CommitDecision& value) {
  JsonWriter out;
  out.startObject().field("allowed", value.allowed).field("reason", value.reason).endObject();
  return out.str();
}

CommitRequest commitRequestFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  CommitRequest request;
  request.taskId = reader.requireInt64("taskId");
  if (request.taskId < 1) throw JsonFieldError("taskId", "must be at least 1");
  return request;
}

CommitDecision commitDecisionFromJson(const rapidjson::Value& json) {
  JsonObjectReader reader(json);
  CommitDecision decision;
  decision.allowed = reader.requireBool("allowed");
  decision.reason = reader.optionalString("reason");
  return decision;
}

std::string toJson(const TaskLaunch& value) {
  return taskLaunchFields().toJson(value);
}
std::string toJson(const TaskStatusUpdate& value) {
  return taskStatusUpdateFields().toJson(value);
}
TIDE_JSON_CODEC(ExecutorRegistration, executorRegistrationFromJson, registrationFields)
TIDE_JSON_CODEC(ExecutorRegistered, executorRegisteredFromJson, registeredFields)
TIDE_JSON_CODEC(ExecutorSync, executorSyncFromJson, syncFields)
TIDE_JSON_CODEC(ExecutorSyncReply, executorSyncReplyFromJson, syncReplyFields)

TaskLaunch taskLaunchFromJson(const rapidjson::Value& json, const std::string& path) {
  return taskLaunchFields().read(JsonObjectReader(json, path));
}

TaskStatusUpdate taskStatusUpdateFromJson(const rapidjson::Value& json, const std::string& path) {
  return taskStatusUpdateFields().read(JsonObjectReader(json, path));
}

}  // namespace tide::rest
