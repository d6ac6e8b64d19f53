#include "allocation/workload_trace.h"

#include <climits>
#include <fstream>
#include <map>
#include <set>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include "common/enum_names.h"

namespace tide::allocation {
namespace {

using Value = rapidjson::Value;

const char* typeName(TraceEvent::Type type) {
  static constexpr const char* kNames[] = {"stage", "uncache", "job_end", "set_bounds",
                                           "executor_lost"};
  return enumName(type, kNames, "unknown");
}

// What the lines read so far have declared, to check each new line against.
struct TraceHistory {
  TimeMs lastT = 0;
  std::map<std::string, int> stageLines;  // stage id -> line that submitted it
  std::set<std::string> jobs;             // named by a stage
  std::map<std::string, int> endedJobs;   // job -> line of its job_end
};

class LineParser {
 public:
  LineParser(const std::string& source, int line, const Value& object)
      : source_(source), line_(line), object_(object) {}

  [[noreturn]] void fail(const std::string& reason) const {
    throw TraceError(source_ + ":" + std::to_string(line_) + ": " + reason);
  }
  [[noreturn]] void failField(const std::string& field, const std::string& reason) const {
    fail("field '" + field + "': " + reason);
  }

  const Value* find(const char* field) const {
    auto it = object_.FindMember(field);
    return it == object_.MemberEnd() ? nullptr : &it->value;
  }

  const Value& require(const char* field) const {
    const Value* value = find(field);
    if (value == nullptr) failField(field, "missing");
    return *value;
  }

  std::string requireName(const char* field) const {
    const Value& value = require(field);
    if (!value.IsString() || value.GetStringLength() == 0) {
      failField(field, "expected a non-empty string");
    }
    return std::string(value.GetString(), value.GetStringLength());
  }

  std::optional<bool> optionalBool(const char* field) const {
    const Value* value = find(field);
    if (value == nullptr) return std::nullopt;
    if (!value->IsBool()) failField(field, "expected true or false");
    return value->GetBool();
  }

  std::optional<int> optionalCount(const char* field) const {
    const Value* value = find(field);
    if (value == nullptr) return std::nullopt;
    if (!value->IsInt64() || value->GetInt64() < 0 || value->GetInt64() > INT_MAX) {
      failField(field, "expected a non-negative integer");
    }
    return static_cast<int>(value->GetInt64());
  }

  // Task durations must be positive: a task ends strictly after the instant it starts in.
  DurationMs positiveDuration(const Value& value, const std::string& field) const {
    if (!value.IsInt64() || value.GetInt64() <= 0) {
      failField(field, "expected a positive integer (milliseconds)");
    }
    return value.GetInt64();
  }

  // Typos such as "task-ms" would otherwise silently fall back to a default.
  void rejectUnknownFields(TraceEvent::Type type, std::initializer_list<const char*> known) const {
    for (auto it = object_.MemberBegin(); it != object_.MemberEnd(); ++it) {
      const std::string name(it->name.GetString(), it->name.GetStringLength());
      if (name == "t" || name == "type") continue;
      bool isKnown = false;
      for (const char* field : known) isKnown = isKnown || name == field;
      if (!isKnown) {
        failField(name, std::string("not a field of a '") + typeName(type) + "' event");
      }
    }
  }

 private:
  const std::string& source_;
  int line_;
  const Value& object_;
};

// "stragglers": [{"task": 3, "ms": 20000}, ...]: tasks whose first attempt is slow.
void parseStragglers(const LineParser& p, const Value& stragglers, TraceEvent& event) {
  if (!stragglers.IsArray()) {
    p.failField("stragglers", "expected an array of {\"task\": INDEX, \"ms\": DURATION}");
  }
  for (rapidjson::SizeType i = 0; i < stragglers.Size(); ++i) {
    const std::string field = "stragglers[" + std::to_string(i) + "]";
    const Value& straggler = stragglers[i];
    if (!straggler.IsObject()) p.failField(field, "expected {\"task\": INDEX, \"ms\": DURATION}");
    for (auto it = straggler.MemberBegin(); it != straggler.MemberEnd(); ++it) {
      const std::string name(it->name.GetString(), it->name.GetStringLength());
      if (name != "task" && name != "ms") p.failField(field, "unknown field '" + name + "'");
    }
    auto task = straggler.FindMember("task");
    auto ms = straggler.FindMember("ms");
    if (task == straggler.MemberEnd()) p.failField(field + ".task", "missing");
    if (ms == straggler.MemberEnd()) p.failField(field + ".ms", "missing");
    if (!task->value.IsInt64() || task->value.GetInt64() < 0 ||
        task->value.GetInt64() >= event.taskCount) {
      p.failField(field + ".task",
                  "expected a task index from 0 to " + std::to_string(event.taskCount - 1));
    }
    const int64_t index = task->value.GetInt64();
    const DurationMs duration = p.positiveDuration(ms->value, field + ".ms");
    if (!event.stragglers.emplace(index, duration).second) {
      p.failField(field + ".task", "task " + std::to_string(index) + " is listed twice");
    }
  }
}

void parseStage(const LineParser& p, TraceHistory& history, TraceEvent& event) {
  p.rejectUnknownFields(event.type, {"stage", "tasks", "task_ms", "cache", "shuffle", "job", "cpus",
                                     "executor_cores", "stragglers"});
  event.stage = p.requireName("stage");
  auto earlier = history.stageLines.find(event.stage);
  if (earlier != history.stageLines.end()) {
    p.failField("stage", "stage '" + event.stage + "' was already submitted on line " +
                             std::to_string(earlier->second));
  }

  const Value& tasks = p.require("tasks");
  const Value* taskMs = p.find("task_ms");
  if (tasks.IsArray()) {
    if (taskMs != nullptr) p.failField("task_ms", "not allowed when 'tasks' lists the durations");
    if (tasks.Empty()) p.failField("tasks", "expected at least one task");
    event.taskDurations.reserve(tasks.Size());
    for (rapidjson::SizeType i = 0; i < tasks.Size(); ++i) {
      event.taskDurations.push_back(
          p.positiveDuration(tasks[i], "tasks[" + std::to_string(i) + "]"));
    }
    event.taskCount = static_cast<int64_t>(event.taskDurations.size());
  } else if (tasks.IsInt64()) {
    if (tasks.GetInt64() <= 0) p.failField("tasks", "expected a positive number of tasks");
    event.taskCount = tasks.GetInt64();
    if (taskMs == nullptr) p.failField("task_ms", "missing (needed when 'tasks' is a count)");
    event.uniformTaskMs = p.positiveDuration(*taskMs, "task_ms");
  } else {
    p.failField("tasks", "expected an integer or an array of durations");
  }

  if (const Value* stragglers = p.find("stragglers")) parseStragglers(p, *stragglers, event);

  if (auto cpus = p.optionalCount("cpus")) {
    if (*cpus == 0) p.failField("cpus", "expected a positive number of cores per task");
    event.cpus = *cpus;
  }
  if (auto cores = p.optionalCount("executor_cores")) {
    if (*cores == 0) p.failField("executor_cores", "expected a positive number of cores");
    event.executorCores = *cores;
  }
  event.cache = p.optionalBool("cache").value_or(false);
  event.shuffle = p.optionalBool("shuffle").value_or(false);
  if (p.find("job") != nullptr) event.job = p.requireName("job");
  // Shuffle output is held until its job ends; without a job it would be held forever.
  if (event.shuffle && event.job.empty())
    p.failField("job", "missing (needed when 'shuffle' is true)");
  if (!event.job.empty()) {
    auto ended = history.endedJobs.find(event.job);
    if (ended != history.endedJobs.end()) {
      p.failField("job",
                  "job '" + event.job + "' already ended on line " + std::to_string(ended->second));
    }
    history.jobs.insert(event.job);
  }
  history.stageLines.emplace(event.stage, event.line);
}

void parseUncache(const LineParser& p, const TraceHistory& history, TraceEvent& event) {
  p.rejectUnknownFields(event.type, {"stage"});
  event.stage = p.requireName("stage");
  if (history.stageLines.count(event.stage) == 0) {
    p.failField("stage", "unknown stage '" + event.stage + "' (no earlier line submits it)");
  }
}

void parseJobEnd(const LineParser& p, TraceHistory& history, TraceEvent& event) {
  p.rejectUnknownFields(event.type, {"job"});
  event.job = p.requireName("job");
  if (history.jobs.count(event.job) == 0) {
    p.failField("job", "unknown job '" + event.job + "' (no earlier stage names it)");
  }
  auto ended = history.endedJobs.find(event.job);
  if (ended != history.endedJobs.end()) {
    p.failField("job",
                "job '" + event.job + "' already ended on line " + std::to_string(ended->second));
  }
  history.endedJobs.emplace(event.job, event.line);
}

void parseSetBounds(const LineParser& p, TraceEvent& event) {
  p.rejectUnknownFields(event.type, {"min", "initial", "max"});
  event.minExecutors = p.optionalCount("min");
  event.initialExecutors = p.optionalCount("initial");
  event.maxExecutors = p.optionalCount("max");
  if (!event.minExecutors && !event.initialExecutors && !event.maxExecutors) {
    p.fail("a 'set_bounds' event needs at least one of 'min', 'initial', 'max'");
  }
}

TraceEvent parseLine(const std::string& source, int lineNumber, const std::string& text,
                     TraceHistory& history) {
  rapidjson::Document document;
  document.Parse(text.c_str(), text.size());
  const std::string where = source + ":" + std::to_string(lineNumber) + ": ";
  if (document.HasParseError()) {
    throw TraceError(where + "invalid JSON at column " +
                     std::to_string(document.GetErrorOffset() + 1) + ": " +
                     rapidjson::GetParseError_En(document.GetParseError()));
  }
  if (!document.IsObject()) throw TraceError(where + "expected a JSON object");

  LineParser p(source, lineNumber, document);
  TraceEvent event;
  event.line = lineNumber;

  const Value& t = p.require("t");
  if (!t.IsInt64() || t.GetInt64() < 0) {
    p.failField("t", "expected a non-negative integer (milliseconds)");
  }
  event.t = t.GetInt64();
  if (event.t < history.lastT) {
    p.failField("t", std::to_string(event.t) + " is earlier than the previous event's t=" +
                         std::to_string(history.lastT));
  }

  const Value& type = p.require("type");
  const std::string typeText = type.IsString() ? type.GetString() : "";
  if (typeText == "stage") {
    event.type = TraceEvent::Type::kStage;
    parseStage(p, history, event);
  } else if (typeText == "uncache") {
    event.type = TraceEvent::Type::kUncache;
    parseUncache(p, history, event);
  } else if (typeText == "job_end") {
    event.type = TraceEvent::Type::kJobEnd;
    parseJobEnd(p, history, event);
  } else if (typeText == "set_bounds") {
    event.type = TraceEvent::Type::kSetBounds;
    parseSetBounds(p, event);
  } else if (typeText == "executor_lost") {
    event.type = TraceEvent::Type::kExecutorLost;
    p.rejectUnknownFields(event.type, {});
  } else {
    p.failField("type", (type.IsString() ? "unknown event type '" + typeText + "'"
                                         : std::string("expected a string")) +
                            " (one of stage, uncache, job_end, set_bounds, executor_lost)");
  }
  history.lastT = event.t;
  return event;
}

bool isBlank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

Trace parseTrace(std::istream& in, const std::string& source) {
  Trace trace;
  trace.source = source;
  TraceHistory history;
  std::string text;
  int lineNumber = 0;
  while (std::getline(in, text)) {
    ++lineNumber;
    if (isBlank(text)) continue;
    trace.events.push_back(parseLine(source, lineNumber, text, history));
  }
  if (in.bad()) throw TraceError(source + ": read error");
  return trace;
}

Trace loadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError(path + ": cannot open the trace file");
  return parseTrace(in, path);
}

}  // namespace tide::allocation
