#include "am/scheduler/job.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "common/config.h"
#include "common/enum_names.h"
#include "common/strings.h"
#include "rest/json.h"

namespace tide::am {
namespace {

const std::vector<std::string>& jobFields() {
  static const std::vector<std::string> fields = {"name", "stages", "pool", "output", "unpersist"};
  return fields;
}

const std::vector<std::string>& stageFields() {
  static const std::vector<std::string> fields = {
      "id",  "depends_on", "tasks",   "command", "builtin",         "sleep_ms", "env",
      "cwd", "cpus",       "timeout", "persist", "preferred_hosts", "executor"};
  return fields;
}

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw JobError(path.empty() ? problem : path + ": " + problem);
}

std::string memberPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string elementPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string singleQuoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

// The known name nearest to a misspelt one, when it is near enough to be a likely typo.
std::string didYouMean(std::string_view name, const std::vector<std::string>& known) {
  std::string best;
  size_t bestDistance = std::numeric_limits<size_t>::max();
  for (const std::string& candidate : known) {
    const size_t distance = editDistanceIgnoreCase(name, candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  const size_t allowed = std::max<size_t>(2, name.size() / 3);
  if (best.empty() || bestDistance > allowed) return "";
  return " (did you mean " + singleQuoted(best) + "?)";
}

std::string memberName(const rapidjson::Value::ConstMemberIterator& member) {
  return std::string(member->name.GetString(), member->name.GetStringLength());
}

// Strict: a misspelt field would otherwise be silently ignored and the stage run wrongly.
void rejectUnknownFields(const rapidjson::Value& object, const std::string& path,
                         const std::vector<std::string>& known) {
  for (auto member = object.MemberBegin(); member != object.MemberEnd(); ++member) {
    const std::string name = memberName(member);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      fail(memberPath(path, name), "unknown field" + didYouMean(name, known));
    }
  }
}

const rapidjson::Value* findMember(const rapidjson::Value& object, std::string_view key) {
  auto it = object.FindMember(rapidjson::Value(
      rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  return it == object.MemberEnd() ? nullptr : &it->value;
}

// The number itself when the value is one (a negative or fractional one is the problem),
// else its type.
std::string describeValue(const rapidjson::Value& value) {
  return value.IsNumber() ? rest::toJsonString(value) : rest::describeJsonType(value);
}

int readPositiveInt(const rapidjson::Value& value, const std::string& path) {
  if (!value.IsInt() || value.GetInt() < 1) {
    fail(path, "expected a positive integer, got " + describeValue(value));
  }
  return value.GetInt();
}

// "executor": {"cores": 8, "memory": "4g"}: cores a positive integer, memory a size as
// executor.memory takes it (a bare number is MiB).
ExecutorShape readExecutorShape(const rapidjson::Value& value, const std::string& path) {
  if (!value.IsObject()) {
    fail(path, "expected an object such as {\"cores\": 8, \"memory\": \"4g\"}, got " +
                   rest::describeJsonType(value));
  }
  rejectUnknownFields(value, path, {"cores", "memory"});
  ExecutorShape shape;
  if (const rapidjson::Value* cores = findMember(value, "cores")) {
    shape.cores = readPositiveInt(*cores, memberPath(path, "cores"));
  }
  if (const rapidjson::Value* memory = findMember(value, "memory")) {
    const std::string memoryPath = memberPath(path, "memory");
    int64_t bytes = 0;
    if (memory->IsInt64()) {
      if (memory->GetInt64() < 1) fail(memoryPath, "at least 1m");
      shape.memoryMb = memory->GetInt64();  // MiB, as a bare executor.memory
      bytes = -1;
    } else if (memory->IsString()) {
      try {
        bytes = parseSize(memory->GetString(), 1024 * 1024);
      } catch (const std::invalid_argument& e) {
        fail(memoryPath, "expected a size such as \"4g\" or \"512m\": " + std::string(e.what()));
      }
    } else {
      fail(memoryPath,
           "expected a size such as \"4g\" or \"512m\", got " + rest::describeJsonType(*memory));
    }
    if (bytes >= 0) {
      if (bytes < 1024 * 1024) fail(memoryPath, "at least 1m");
      shape.memoryMb = bytes / (1024 * 1024);
    }
  }
  if (!shape.cores && !shape.memoryMb) fail(path, "give \"cores\", \"memory\" or both");
  return shape;
}

std::string readString(const rapidjson::Value& value, const std::string& path) {
  if (!value.IsString()) fail(path, "expected a string, got " + rest::describeJsonType(value));
  return std::string(value.GetString(), value.GetStringLength());
}

std::vector<std::string> readStringArray(const rapidjson::Value& value, const std::string& path,
                                         const std::string& what) {
  if (!value.IsArray()) fail(path, "expected " + what + ", got " + rest::describeJsonType(value));
  std::vector<std::string> strings;
  strings.reserve(value.Size());
  for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
    strings.push_back(readString(value[i], elementPath(path, i)));
  }
  return strings;
}

int64_t readNonNegativeInt64(const rapidjson::Value& value, const std::string& path) {
  if (!value.IsInt64() || value.GetInt64() < 0) {
    fail(path, "expected a non-negative integer, got " + describeValue(value));
  }
  return value.GetInt64();
}

int64_t readTaskCount(const rapidjson::Value& value, const std::string& path) {
  if (value.IsInt64()) return value.GetInt64();  // the range is checkJob's
  if (value.IsUint64()) {
    fail(path, "at most " + std::to_string(kMaxTasksPerStage) + " tasks, got " +
                   rest::toJsonString(value));
  }
  fail(path, "expected a positive integer, got " + describeValue(value));
}

DurationMs readTimeout(const rapidjson::Value& value, const std::string& path) {
  if (value.IsString()) {
    const std::string text(value.GetString(), value.GetStringLength());
    try {
      const DurationMs ms = parseDuration(text, 1);
      return ms == kInfiniteMs ? 0 : ms;  // "infinity" means no timeout
    } catch (const std::invalid_argument& e) {
      fail(path, "expected a duration such as \"30s\" or a number of milliseconds: " +
                     std::string(e.what()));
    }
  }
  if (value.IsInt64() && value.GetInt64() >= 0) return value.GetInt64();
  fail(path, "expected a duration such as \"30s\" or a number of milliseconds, got " +
                 describeValue(value));
}

// What each task runs: "command" (an argv) or "builtin" ("noop", or "sleep" for "sleep_ms").
void readWork(const rapidjson::Value& value, const std::string& path, StageSpec& stage) {
  const rapidjson::Value* command = findMember(value, "command");
  const rapidjson::Value* builtin = findMember(value, "builtin");
  if (command != nullptr && builtin != nullptr) {
    fail(path, "give either \"command\" or \"builtin\", not both");
  }
  if (command == nullptr && builtin == nullptr) {
    fail(memberPath(path, "command"), "missing (give \"command\" or \"builtin\")");
  }
  if (command != nullptr) {
    stage.kind = TaskKind::kCommand;
    stage.command = readStringArray(*command, memberPath(path, "command"),
                                    "an argv array such as [\"sh\", \"-c\", \"...\"]");
  } else {
    const std::string name = readString(*builtin, memberPath(path, "builtin"));
    if (name == "noop") {
      stage.kind = TaskKind::kNoop;
    } else if (name == "sleep") {
      stage.kind = TaskKind::kSleep;
    } else {
      fail(memberPath(path, "builtin"),
           "unknown builtin " + singleQuoted(name) + " (expected 'noop' or 'sleep')");
    }
  }
  const rapidjson::Value* sleepMs = findMember(value, "sleep_ms");
  if (stage.kind == TaskKind::kSleep) {
    if (sleepMs == nullptr)
      fail(memberPath(path, "sleep_ms"), "missing (required by builtin 'sleep')");
    stage.sleepMs = readNonNegativeInt64(*sleepMs, memberPath(path, "sleep_ms"));
  } else if (sleepMs != nullptr) {
    fail(memberPath(path, "sleep_ms"), "only used with \"builtin\": \"sleep\"");
  }
}

// "env": {"NAME": "value"}; a name is non-empty and has no '='.
std::map<std::string, std::string> readEnvironment(const rapidjson::Value& env,
                                                   const std::string& envPath) {
  if (!env.IsObject()) {
    fail(envPath, "expected an object of strings, got " + rest::describeJsonType(env));
  }
  std::map<std::string, std::string> variables;
  for (auto member = env.MemberBegin(); member != env.MemberEnd(); ++member) {
    const std::string name = memberName(member);
    if (name.empty() || name.find('=') != std::string::npos) {
      fail(envPath, "invalid variable name " + singleQuoted(name));
    }
    variables[name] = readString(member->value, memberPath(envPath, name));
  }
  return variables;
}

StageSpec parseStage(const rapidjson::Value& value, const std::string& path) {
  if (!value.IsObject()) fail(path, "expected an object, got " + rest::describeJsonType(value));
  rejectUnknownFields(value, path, stageFields());
  StageSpec stage;

  const rapidjson::Value* id = findMember(value, "id");
  if (id == nullptr) fail(memberPath(path, "id"), "missing (every stage needs an id)");
  stage.id = readString(*id, memberPath(path, "id"));

  if (const rapidjson::Value* deps = findMember(value, "depends_on")) {
    stage.dependsOn =
        readStringArray(*deps, memberPath(path, "depends_on"), "an array of stage ids");
  }

  const rapidjson::Value* tasks = findMember(value, "tasks");
  if (tasks == nullptr) fail(memberPath(path, "tasks"), "missing (the number of tasks)");
  stage.numTasks = readTaskCount(*tasks, memberPath(path, "tasks"));

  readWork(value, path, stage);

  if (const rapidjson::Value* env = findMember(value, "env")) {
    stage.env = readEnvironment(*env, memberPath(path, "env"));
  }
  if (const rapidjson::Value* cwd = findMember(value, "cwd")) {
    stage.cwd = readString(*cwd, memberPath(path, "cwd"));
  }
  if (const rapidjson::Value* cpus = findMember(value, "cpus")) {
    stage.cpus = readPositiveInt(*cpus, memberPath(path, "cpus"));
  }
  if (const rapidjson::Value* executor = findMember(value, "executor")) {
    stage.executor = readExecutorShape(*executor, memberPath(path, "executor"));
  }
  if (const rapidjson::Value* timeout = findMember(value, "timeout")) {
    stage.timeoutMs = readTimeout(*timeout, memberPath(path, "timeout"));
  }
  if (const rapidjson::Value* persist = findMember(value, "persist")) {
    if (!persist->IsBool()) {
      fail(memberPath(path, "persist"),
           "expected a boolean, got " + rest::describeJsonType(*persist));
    }
    stage.persist = persist->GetBool();
  }
  if (const rapidjson::Value* hosts = findMember(value, "preferred_hosts")) {
    stage.preferredHosts =
        readStringArray(*hosts, memberPath(path, "preferred_hosts"), "an array of host names");
  }
  return stage;
}

// "line 3, column 7" for an offset into `text`, which is what a person looks for in an editor.
std::string describeOffset(std::string_view text, size_t offset) {
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

Job parseJobWithDefaultName(std::string_view json, const std::string& defaultName) {
  rapidjson::Document document;
  try {
    document = rest::parseJson(json);
  } catch (const rest::JsonParseError& e) {
    // JsonParseError's text is "malformed JSON at offset N: reason"; keep the reason only.
    const std::string what = e.what();
    const size_t colon = what.find(": ");
    const std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    fail("", "malformed JSON at " + describeOffset(json, e.offset()) + ": " + reason);
  }
  if (!document.IsObject()) {
    fail("", "expected a job object with \"stages\", got " + rest::describeJsonType(document));
  }
  rejectUnknownFields(document, "", jobFields());

  Job job;
  job.name = defaultName;
  if (const rapidjson::Value* name = findMember(document, "name")) {
    job.name = readString(*name, "name");
    if (job.name.empty()) fail("name", "must not be empty");
  }
  if (const rapidjson::Value* pool = findMember(document, "pool")) {
    job.pool = readString(*pool, "pool");
  }
  if (const rapidjson::Value* output = findMember(document, "output")) {
    job.output = readString(*output, "output");
  }
  if (const rapidjson::Value* unpersist = findMember(document, "unpersist")) {
    job.unpersist = readStringArray(*unpersist, "unpersist",
                                    "an array of persisted stages such as \"job-1/words\"");
    for (size_t i = 0; i < job.unpersist.size(); ++i) {
      if (!isPersistedStageReference(job.unpersist[i])) {
        fail(elementPath("unpersist", i),
             "expected a persisted stage as \"<job id>/<stage id>\", got " +
                 singleQuoted(job.unpersist[i]));
      }
    }
  }
  const rapidjson::Value* stages = findMember(document, "stages");
  if (stages == nullptr) fail("stages", "missing (a job needs at least one stage)");
  if (!stages->IsArray()) {
    fail("stages", "expected an array of stages, got " + rest::describeJsonType(*stages));
  }
  for (rapidjson::SizeType i = 0; i < stages->Size(); ++i) {
    job.stages.push_back(parseStage((*stages)[i], elementPath("stages", i)));
  }
  checkJob(job);
  return job;
}

bool isStageIdCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

// Depth-first search for a cycle; returns the cycle's stage ids ("a", "b", "a") or empty.
class CycleFinder {
 public:
  CycleFinder(const Job& job, const std::unordered_map<std::string, size_t>& indexById)
      : job_(job), indexById_(indexById), color_(job.stages.size(), kWhite) {}

  // The stage whose depends_on closes the first cycle found, and the cycle.
  std::optional<std::pair<size_t, std::vector<std::string>>> find() {
    for (size_t start = 0; start < job_.stages.size(); ++start) {
      if (color_[start] == kWhite && visit(start)) return std::make_pair(closingStage_, cycle_);
    }
    return std::nullopt;
  }

 private:
  enum Color { kWhite, kGrey, kBlack };

  bool visit(size_t stage) {
    color_[stage] = kGrey;
    stack_.push_back(stage);
    for (const std::string& dependency : job_.stages[stage].dependsOn) {
      if (isPersistedStageReference(dependency)) continue;  // an earlier job's: no cycle
      const size_t next = indexById_.at(dependency);
      if (color_[next] == kGrey) {
        auto from = std::find(stack_.begin(), stack_.end(), next);
        for (auto it = from; it != stack_.end(); ++it) cycle_.push_back(job_.stages[*it].id);
        cycle_.push_back(job_.stages[next].id);
        closingStage_ = stage;
        return true;
      }
      if (color_[next] == kWhite && visit(next)) return true;
    }
    stack_.pop_back();
    color_[stage] = kBlack;
    return false;
  }

  const Job& job_;
  const std::unordered_map<std::string, size_t>& indexById_;
  std::vector<Color> color_;
  std::vector<size_t> stack_;
  std::vector<std::string> cycle_;
  size_t closingStage_ = 0;
};

}  // namespace

bool isPersistedStageReference(std::string_view dependency) {
  const size_t slash = dependency.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == dependency.size()) {
    return false;
  }
  const std::string_view rest = dependency.substr(slash + 1);
  return rest.find('/') == std::string_view::npos &&
         std::all_of(dependency.begin(), dependency.begin() + static_cast<ptrdiff_t>(slash),
                     isStageIdCharacter) &&
         std::all_of(rest.begin(), rest.end(), isStageIdCharacter);
}

const char* taskKindName(TaskKind kind) {
  static constexpr const char* kNames[] = {"command", "noop", "sleep"};
  return enumName(kind, kNames);
}

void checkJob(const Job& job) {
  if (job.stages.empty()) fail("stages", "expected at least one stage");
  std::unordered_map<std::string, size_t> indexById;
  std::vector<std::string> ids;
  for (size_t i = 0; i < job.stages.size(); ++i) {
    const StageSpec& stage = job.stages[i];
    const std::string path = elementPath("stages", i);
    if (stage.id.empty()) fail(memberPath(path, "id"), "must not be empty");
    if (!std::all_of(stage.id.begin(), stage.id.end(), isStageIdCharacter)) {
      fail(memberPath(path, "id"),
           singleQuoted(stage.id) + " may only contain letters, digits, '-', '_' and '.'");
    }
    auto [existing, inserted] = indexById.emplace(stage.id, i);
    if (!inserted) {
      fail(memberPath(path, "id"), "duplicate stage id " + singleQuoted(stage.id) + " (also " +
                                       elementPath("stages", existing->second) + ")");
    }
    ids.push_back(stage.id);
    if (stage.numTasks < 1) {
      fail(memberPath(path, "tasks"),
           "expected a positive integer, got " + std::to_string(stage.numTasks));
    }
    if (stage.numTasks > kMaxTasksPerStage) {
      fail(memberPath(path, "tasks"), "at most " + std::to_string(kMaxTasksPerStage) +
                                          " tasks, got " + std::to_string(stage.numTasks));
    }
    if (stage.kind == TaskKind::kCommand) {
      if (stage.command.empty()) {
        fail(memberPath(path, "command"),
             "must not be empty (an argv such as [\"sh\", \"-c\", \"...\"])");
      }
      if (stage.command.front().empty()) {
        fail(elementPath(memberPath(path, "command"), 0), "the program must not be empty");
      }
    }
    if (stage.cpus && *stage.cpus < 1) {
      fail(memberPath(path, "cpus"),
           "expected a positive integer, got " + std::to_string(*stage.cpus));
    }
    if (stage.executor && stage.executor->cores && *stage.executor->cores < 1) {
      fail(memberPath(memberPath(path, "executor"), "cores"),
           "expected a positive integer, got " + std::to_string(*stage.executor->cores));
    }
    if (stage.timeoutMs < 0) fail(memberPath(path, "timeout"), "must not be negative");
    if (stage.sleepMs < 0) fail(memberPath(path, "sleep_ms"), "must not be negative");
  }
  for (size_t i = 0; i < job.stages.size(); ++i) {
    const std::string depsPath = memberPath(elementPath("stages", i), "depends_on");
    const std::vector<std::string>& deps = job.stages[i].dependsOn;
    for (size_t j = 0; j < deps.size(); ++j) {
      if (isPersistedStageReference(deps[j])) continue;  // checked against the session's data
      if (indexById.count(deps[j]) == 0) {
        fail(elementPath(depsPath, j),
             "unknown stage " + singleQuoted(deps[j]) + didYouMean(deps[j], ids));
      }
    }
  }
  CycleFinder finder(job, indexById);
  if (auto found = finder.find()) {
    std::string cycle;
    for (const std::string& id : found->second) cycle += (cycle.empty() ? "" : " -> ") + id;
    fail(memberPath(elementPath("stages", found->first), "depends_on"),
         "dependency cycle: " + cycle);
  }
}

Job parseJob(std::string_view json) {
  return parseJobWithDefaultName(json, "job");
}

Job loadJobFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JobError(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw JobError(path + ": cannot read: " + std::strerror(errno));
  try {
    Job job = parseJobWithDefaultName(text.str(), std::filesystem::path(path).stem().string());
    // {jobdir}: scripts and data kept next to the job file can be named wherever it is run.
    const std::string jobDir = std::filesystem::absolute(path).parent_path().string();
    const auto withJobDir = [&](std::string& text) {
      for (size_t at = text.find("{jobdir}"); at != std::string::npos;
           at = text.find("{jobdir}", at + jobDir.size())) {
        text.replace(at, 8, jobDir);
      }
    };
    withJobDir(job.output);
    for (StageSpec& stage : job.stages) {
      for (std::string& arg : stage.command) withJobDir(arg);
      for (auto& [name, value] : stage.env) withJobDir(value);
      withJobDir(stage.cwd);
    }
    if (!job.output.empty() && std::filesystem::path(job.output).is_relative()) {
      // Relative to the job file, like the paths a person writes next to it.
      job.output =
          (std::filesystem::absolute(path).parent_path() / job.output).lexically_normal().string();
    }
    return job;
  } catch (const JobError& e) {
    throw JobError(path + ": " + e.what());
  }
}

std::string substituteTaskPlaceholders(std::string_view text, std::string_view stageId,
                                       int64_t index, int attempt) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      const std::string_view rest = text.substr(i);
      if (startsWith(rest, "{task}")) {
        out += std::to_string(index);
        i += 6;
        continue;
      }
      if (startsWith(rest, "{stage}")) {
        out += stageId;
        i += 7;
        continue;
      }
      if (startsWith(rest, "{attempt}")) {
        out += std::to_string(attempt);
        i += 9;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace tide::am

namespace tide::am {

std::string jobToJson(const Job& job) {
  rest::JsonWriter out;
  const auto strings = [&](std::string_view key, const std::vector<std::string>& values) {
    out.key(key).startArray();
    for (const std::string& value : values) out.value(value);
    out.endArray();
  };
  out.startObject().field("name", job.name);
  if (!job.pool.empty()) out.field("pool", job.pool);
  if (!job.output.empty()) out.field("output", job.output);
  if (!job.unpersist.empty()) strings("unpersist", job.unpersist);
  out.key("stages").startArray();
  for (const StageSpec& stage : job.stages) {
    out.startObject().field("id", stage.id).field("tasks", stage.numTasks);
    if (!stage.dependsOn.empty()) strings("depends_on", stage.dependsOn);
    if (stage.kind == TaskKind::kCommand) {
      strings("command", stage.command);
    } else {
      out.field("builtin", taskKindName(stage.kind));
      if (stage.kind == TaskKind::kSleep) out.field("sleep_ms", stage.sleepMs);
    }
    if (!stage.env.empty()) {
      out.key("env").startObject();
      for (const auto& [key, value] : stage.env) out.field(key, value);
      out.endObject();
    }
    if (!stage.cwd.empty()) out.field("cwd", stage.cwd);
    if (stage.cpus) out.field("cpus", *stage.cpus);
    if (stage.executor) {
      out.key("executor").startObject();
      if (stage.executor->cores) out.field("cores", *stage.executor->cores);
      if (stage.executor->memoryMb) {
        out.field("memory", std::to_string(*stage.executor->memoryMb) + "m");
      }
      out.endObject();
    }
    if (stage.timeoutMs > 0) out.field("timeout", stage.timeoutMs);
    if (stage.persist) out.field("persist", true);
    if (!stage.preferredHosts.empty()) strings("preferred_hosts", stage.preferredHosts);
    out.endObject();
  }
  out.endArray().endObject();
  return out.str();
}

}  // namespace tide::am
