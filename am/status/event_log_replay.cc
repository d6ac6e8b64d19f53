#include "am/status/event_log_replay.h"

#include <fstream>
#include <map>

#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::am {
namespace {

using rest::JsonObjectReader;
using rest::JsonWriter;

// Applies one record; throws what the JSON readers throw (a missing or mistyped field).
void apply(ReplayedApplication& app, std::map<std::string, size_t>& executorIndex,
           std::map<std::string, size_t>& stageIndex, const std::string& type,
           const JsonObjectReader& r) {
  if (type == "application") {
    app.application = eventLogApplicationFields().read(r);
  } else if (type == "executorAdded") {
    ExecutorLifetime e = executorAddedFields().read(r);
    if (executorIndex.emplace(e.id, app.executors.size()).second) {
      app.executors.push_back(std::move(e));
    }
  } else if (type == "executorRemoved") {
    auto it = executorIndex.find(r.requireString("id"));
    if (it != executorIndex.end()) {
      ExecutorLifetime& e = app.executors[it->second];
      e.removedAtMs = r.requireInt64("atMs");
      e.removedReason = r.optionalString("reason");
    }
  } else if (type == "stageSubmitted") {
    StageSubmission stage = stageSubmittedFields().read(r);
    auto [it, added] = stageIndex.emplace(stage.stageId, app.stages.size());
    if (added) {
      app.stages.push_back(std::move(stage));
    } else {
      app.stages[it->second] = std::move(stage);  // a re-run: its latest submission
    }
  } else if (type == "executorsDropped") {
    app.executorsDropped += r.requireUint64("count");
  } else if (type == "point") {
    app.history->record(allocationPointFromJson(r.value()));
  } else if (type == "snapshot") {
    app.last.status = rest::toJsonString(r.requireObject("status").value());
    app.last.executors = rest::toJsonString(r.requireObject("executors").value());
    for (const auto& e :
         r.requireObject("executors").requireArray("executors").value().GetArray()) {
      if (e.IsObject() && e.HasMember("cores") && e["cores"].IsInt()) {
        app.executorCores = e["cores"].GetInt();
      }
    }
    app.last.jobs = rest::toJsonString(r.requireObject("jobs").value());
    app.last.decisions = rest::toJsonString(r.requireObject("decisions").value());
  } else if (type == "end") {
    app.ended = true;
    app.finalStatus = r.requireString("finalStatus");
    app.diagnostics = r.optionalString("diagnostics");
    app.endedAtEpochMs = r.requireInt64("endedAtEpochMs");
  }
  // Other types are from a newer tide of the same version: skipped.
  if (r.has("atMs")) app.lastEventMs = std::max(app.lastEventMs, r.requireInt64("atMs"));
}

void checkHeader(const JsonObjectReader& r) {
  if (r.optionalString("type") != "header" || r.optionalString("format") != kEventLogFormat) {
    throw std::runtime_error(std::string("not a tide event log: expected a header record with "
                                         "\"format\": \"") +
                             kEventLogFormat + "\"");
  }
  const int version = r.requireInt("version");
  if (version > kEventLogVersion || version < 1) {
    throw std::runtime_error("event log version " + std::to_string(version) +
                             " is not one this tide reads (up to " +
                             std::to_string(kEventLogVersion) + "; written by tide " +
                             r.optionalString("tide", "?") + ")");
  }
}

}  // namespace

std::string ReplayedApplication::name() const {
  if (last.jobs.empty()) return "";
  const rapidjson::Document jobs = rest::parseJson(last.jobs);
  if (!jobs.HasMember("jobs") || !jobs["jobs"].IsArray() || jobs["jobs"].Empty()) return "";
  return rest::optionalString(jobs["jobs"][0], "name");
}

ReplayedApplication replayEventLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EventLogError(path + ": cannot be read");
  return replayEventLog(in, path);
}

ReplayedApplication replayEventLog(std::istream& in, const std::string& path) {
  ReplayedApplication app;
  app.file = path;
  std::map<std::string, size_t> executorIndex;
  std::map<std::string, size_t> stageIndex;
  std::string text;
  size_t number = 0;
  while (std::getline(in, text)) {
    ++number;
    const bool complete = !in.eof();  // getline stopped at a newline
    const bool last = !complete || in.peek() == std::char_traits<char>::eof();
    if (text.empty()) continue;
    try {
      const rapidjson::Document record = rest::parseJson(text);
      const JsonObjectReader r(record);
      if (number == 1) {
        checkHeader(r);
        continue;
      }
      const std::string type = r.requireString("type");
      if (type == "header") {
        checkHeader(r);  // a later attempt's
      } else {
        apply(app, executorIndex, stageIndex, type, r);
      }
    } catch (const std::exception& e) {
      // A line the AM did not finish (killed mid-write) is the last, without its newline.
      if (last && !complete && number > 1) {
        app.tornTail = true;
        break;
      }
      throw EventLogError(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  if (number == 0) throw EventLogError(path + ":1: empty: not a tide event log");
  if (app.application.applicationId.empty()) {
    throw EventLogError(path + ": no application record");
  }
  return app;
}

std::string replayedStatusDocument(const ReplayedApplication& app) {
  rapidjson::Document doc;
  if (!app.last.status.empty()) {
    doc = rest::parseJson(app.last.status);
  } else {
    doc.SetObject();
  }
  auto& a = doc.GetAllocator();
  auto set = [&](const char* name, rapidjson::Value value) {
    if (doc.HasMember(name)) doc.RemoveMember(name);
    doc.AddMember(rapidjson::Value(name, a), value, a);
  };
  auto text = [&](const std::string& s) { return rapidjson::Value(s.c_str(), a); };
  set("applicationId", text(app.application.applicationId));
  set("attemptId", text(app.application.attemptId));
  set("state", text(app.state()));
  set("finalStatus", text(app.ended ? app.finalStatus : ""));
  set("diagnostics", text(app.ended ? app.diagnostics
                                    : "the application master ended without writing its end "
                                      "(killed?); this is its log up to its last record"));
  set("name", text(app.name()));
  set("user", text(app.application.user));
  set("startedAtEpochMs", rapidjson::Value(app.application.startedAtEpochMs));
  set("endedAtEpochMs", rapidjson::Value(app.endedAtEpochMs));
  set("incomplete", rapidjson::Value(!app.ended));
  set("tornTail", rapidjson::Value(app.tornTail));
  set("uptimeMs", rapidjson::Value(app.lastEventMs));
  return rest::toJsonString(doc);
}

std::string replayedExecutorsDocument(const ReplayedApplication& app) {
  JsonWriter w;
  w.startObject().field("nowMs", app.lastEventMs).field("dropped", app.executorsDropped);
  w.key("executors").startArray();
  for (const ExecutorLifetime& e : app.executors) {
    const bool removed = e.removedAtMs >= 0;
    w.startObject()
        .field("id", e.id)
        .field("host", e.host)
        .field("container", e.container)
        .field("pid", e.pid)
        .field("state", removed ? "REMOVED" : "LIVE")
        .field("cores", e.cores > 0 ? e.cores : app.executorCores)
        .field("resourceProfileId", e.resourceProfileId);
    if (e.memoryMb > 0) w.field("memoryMb", e.memoryMb);
    w.field("runningTasks", 0)
        .field("registeredAtMs", e.addedAtMs)
        .field("removedAtMs", e.removedAtMs)
        .field("removedReason", e.removedReason)
        .field("idleSinceMs", int64_t{-1})
        .field("idleForMs", int64_t{-1})
        .field("holdsCachedData", false)
        .field("holdsShuffleData", false)
        .field("node", e.node);
    w.key("cachedStages").startArray().endArray();
    w.key("shuffleStages").startArray().endArray();
    w.key("expiresInMs").null();
    // The page's "expires" column: why it went.
    w.field("expiry", removed ? "removed: " + e.removedReason : "").endObject();
  }
  w.endArray().endObject();
  return w.str();
}

std::string replayedJobsDocument(const ReplayedApplication& app) {
  if (app.last.jobs.empty()) return R"({"jobs":[]})";
  rapidjson::Document doc = rest::parseJson(app.last.jobs);
  std::map<std::string, int> profileOf;
  for (const StageSubmission& stage : app.stages)
    profileOf[stage.stageId] = stage.resourceProfileId;
  if (profileOf.empty() || !doc.IsObject() || !doc.HasMember("jobs") || !doc["jobs"].IsArray()) {
    return app.last.jobs;
  }
  auto& a = doc.GetAllocator();
  for (auto& job : doc["jobs"].GetArray()) {
    if (!job.IsObject() || !job.HasMember("stages") || !job["stages"].IsArray()) continue;
    const std::string jobId = rest::optionalString(job, "id");
    for (auto& stage : job["stages"].GetArray()) {
      if (!stage.IsObject()) continue;
      auto found = profileOf.find(jobId + "/" + rest::optionalString(stage, "id"));
      if (found == profileOf.end()) continue;
      if (stage.HasMember("resourceProfileId")) stage.RemoveMember("resourceProfileId");
      stage.AddMember("resourceProfileId", rapidjson::Value(found->second), a);
    }
  }
  return rest::toJsonString(doc);
}

}  // namespace tide::am
