// The ApplicationMaster's HTTP handlers (status_handlers.h). Rendering is kept apart from the
// loops in application_master.cc, and out of the AM's lock: a handler asks the core for a copy
// and writes JSON after, so a status poller hammering the port does not hold up executors'
// syncs. /metrics, status, executors, the history and the decisions never take the AM's lock.

#include "am/status_handlers.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "am/status/metrics.h"
#include "am/status/request_pacer.h"
#include "am/status/status_page.h"
#include "common/app_logs.h"
#include "common/config.h"
#include "rest/http_status.h"
#include "rest/json.h"

namespace tide::am {

using rest::JsonWriter;

namespace {

// Decisions one request may ask for (the log keeps 1000).
constexpr size_t kMaxDecisionsPerRequest = 1000;

// The shapes every document here repeats: `"key": [each item written by write]`, and a list
// document `{"nowMs": ..., "key": [...]}` (executors, decisions).
template <typename Items, typename Write>
JsonWriter& writeArray(JsonWriter& w, std::string_view key, const Items& items, Write write) {
  w.key(key).startArray();
  for (const auto& item : items) write(w, item);
  return w.endArray();
}

template <typename Items>
JsonWriter& writeStrings(JsonWriter& w, std::string_view key, const Items& items) {
  return writeArray(w, key, items, [](JsonWriter& out, const std::string& s) { out.value(s); });
}

template <typename Items, typename Write>
std::string listDocument(TimeMs nowMs, std::string_view key, const Items& items, Write write) {
  JsonWriter w;
  w.startObject().field("nowMs", nowMs);
  writeArray(w, key, items, write).endObject();
  return w.str();
}

void writeStage(JsonWriter& w, const StageSummary& stage) {
  w.startObject()
      .field("id", stage.id)
      .field("state", stageStateName(stage.state))
      .field("tasks", stage.numTasks)
      .field("pending", stage.pending)
      .field("running", stage.running)
      .field("succeeded", stage.succeeded)
      .field("failedAttempts", stage.failedAttempts);
  writeStrings(w, "dependsOn", stage.dependsOn);
  const DurationMs duration =
      stage.submittedMs < 0
          ? 0
          : (stage.completedMs >= 0 ? stage.completedMs : stage.submittedMs) - stage.submittedMs;
  w.field("durationMs", stage.completedMs >= 0 ? duration : int64_t{-1});
  w.key("taskDurationMs")
      .startObject()
      .field("mean", stage.succeeded > 0 ? stage.taskDurationSumMs / stage.succeeded : 0)
      .field("min", stage.taskDurationMinMs)
      .field("max", stage.taskDurationMaxMs)
      .endObject();
  // Data: how local its launches were, how often it re-ran for lost outputs.
  w.field("persist", stage.persist).field("reruns", stage.reruns);
  w.field("speculativeLaunches", stage.speculativeLaunches);
  w.key("locality").startObject();
  for (int level = 0; level < kLocalityLevelCount; ++level) {
    w.field(taskLocalityName(static_cast<TaskLocality>(level)),
            stage.launchesByLocality[static_cast<size_t>(level)]);
  }
  w.endObject();
  w.endObject();
}

void writeJob(JsonWriter& w, const JobSummary& job, bool detailed) {
  w.startObject()
      .field("id", job.jobId)
      .field("name", job.name)
      .field("state", jobStateName(job.state))
      .field("message", job.message)
      .field("tasks", job.numTasks)
      .field("pending", job.pending)
      .field("running", job.running)
      .field("succeeded", job.succeeded)
      .field("failedAttempts", job.failedAttempts);
  if (detailed) {
    writeArray(w, "stages", job.stages, writeStage);
    writeArray(w, "failures", job.recentFailures, [](JsonWriter& out, const FailedAttempt& f) {
      out.startObject()
          .field("taskId", f.taskId)
          .field("stage", f.stageId)
          .field("index", f.index)
          .field("attempt", f.attempt)
          .field("executor", f.executorId)
          .field("reason", f.reason)
          .field("exitCode", f.exitCode)
          .field("stderrTail", f.stderrTail)
          .endObject();
    });
  }
  w.endObject();
}

void writeBounds(JsonWriter& w, const allocation::Bounds& bounds) {
  w.startObject()
      .field("min", bounds.minExecutors)
      .field("initial", bounds.initialExecutors)
      .field("max", bounds.maxExecutors)
      .endObject();
}

// A non-negative integer query parameter, or `fallback` when absent; 400 naming it otherwise.
int64_t queryInteger(const httplib::Request& req, const char* name, int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string text = req.get_param_value(name);
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw rest::RestError(
      400, std::string(name) + ": expected a non-negative integer, got '" + text + "'");
}

// The field an error from validateBounds is about: its first word ("min=5 is greater than
// max=2" -> "min", "max: must be at least 1" -> "max").
std::string fieldOfBoundsError(const std::string& message) {
  const size_t end = message.find_first_of("=: ");
  return message.substr(0, end);
}

// People and tools reading the status port are served at the lowest CPU priority (nice 19 for
// the serving thread only: on Linux, nice is per thread). On a busy machine the job's
// executors and the AM's loops come first, so a dashboard or a load test polling this port
// cannot slow the job down (bench/status_load). The hot paths (status, executors, history,
// decisions, metrics) never take the AM's mutex, so a reader that waits for the CPU holds
// nobody up; only the rare jobs, cache and bounds calls take it, for a copy.
void serveAtLowPriority() {
  thread_local bool lowered = false;
  if (lowered) return;
  lowered = true;
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
}

void replyBadField(httplib::Response& res, int status, const std::string& field,
                   const std::string& message) {
  JsonWriter w;
  w.startObject()
      .key("error")
      .startObject()
      .field("code", status)
      .field("message", message)
      .field("field", field)
      .endObject()
      .endObject();
  rest::replyJson(res, w.str(), status);
}

}  // namespace

void StatusHandlers::registerExecutorRoutes(rest::HttpServer& e) {
  e.post("/api/v1/executors/register", [this](const httplib::Request& req, httplib::Response& res) {
    const auto registration = rest::executorRegistrationFromJson(rest::parseJson(req.body));
    rest::ExecutorRegistered reply;
    rest::throwIfError(master_.registerExecutor(registration, req.remote_addr, &reply));
    rest::replyJson(res, rest::toJson(reply));
  });
  e.post(R"(/api/v1/executors/([^/]+)/sync)",
         [this](const httplib::Request& req, httplib::Response& res) {
           const rest::ExecutorSync sync = rest::executorSyncFromJson(rest::parseJson(req.body));
           rest::ExecutorSyncReply reply;
           rest::throwIfError(master_.syncExecutor(req.matches[1], sync, &reply));
           rest::replyJson(res, rest::toJson(reply));
         });
  e.post(R"(/api/v1/executors/([^/]+)/commit)", [this](const httplib::Request& req,
                                                       httplib::Response& res) {
    const rest::CommitRequest request = rest::commitRequestFromJson(rest::parseJson(req.body));
    rest::replyJson(res, rest::toJson(master_.decideCommit(req.matches[1], request)));
  });
}

void StatusHandlers::registerStatusRoutes(rest::HttpServer& s) {
  // Handlers that take the AM's lock, or a lock the loops take under it (decisions, history),
  // run on the control thread at normal priority: see control_thread.h.
  auto onControlThread = [this](rest::RouteHandler handler) -> rest::RouteHandler {
    return
        [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          control_.run([&] { handler(req, res); });
        };
  };
  // Before any route (unknown paths too): every thread of this server serves at low priority.
  // They are paced, too: over ui.maxRequestsPerSecond a request waits its turn.
  auto pacer = std::make_shared<RequestPacer>(master_.info().uiMaxRequestsPerSecond);
  s.native().set_pre_routing_handler([pacer](const httplib::Request&, httplib::Response&) {
    serveAtLowPriority();
    pacer->wait();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(statusPageHtml()), "text/html; charset=utf-8");
  });
  s.get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(master_.metricsText(), metrics::kPrometheusContentType);
  });
  s.get("/api/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, statusJson());
  });
  s.get("/api/v1/executors", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, executorsJson());
  });
  // An executor's or a failed task attempt's stdout or stderr, from its node manager (the
  // browser holds only this AM's token; the AM holds the containers' tokens).
  s.get(R"(/api/v1/executors/([^/]+)/logs/(stdout|stderr))",
        [this](const httplib::Request& req, httplib::Response& res) {
          replyLog(req, res, req.matches[1], req.matches[2]);
        });
  s.get(R"(/api/v1/tasks/([^/]+)/([0-9]{1,9})/([0-9]{1,9})/logs/(stdout|stderr))",
        [this](const httplib::Request& req, httplib::Response& res) {
          const std::string stage = req.matches[1];
          const int64_t index = std::stoll(req.matches[2]);
          const int attempt = std::stoi(req.matches[3]);
          // The executor that ran it: the failed attempts each job keeps (newest job first).
          std::string executorId;
          control_.run([&] {
            for (const JobSummary& job : master_.jobs()) {
              for (const FailedAttempt& failure : job.recentFailures) {
                if (failure.stageId == stage && failure.index == index &&
                    failure.attempt == attempt) {
                  executorId = failure.executorId;
                }
              }
            }
          });
          if (executorId.empty()) {
            throw rest::RestError(404, "no failed attempt " + std::to_string(attempt) +
                                           " of task " + stage + ":" + std::to_string(index) +
                                           " is known (only failed attempts link to logs)");
          }
          replyLog(
              req, res, executorId,
              "tasks/" + taskDirName(stage, index, attempt) + "/" + std::string(req.matches[4]));
        });
  s.get("/api/v1/jobs", onControlThread([this](const httplib::Request&, httplib::Response& res) {
          rest::replyJson(res, jobsJson(std::nullopt));
        }));
  s.get(R"(/api/v1/jobs/([^/]+))",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          rest::replyJson(res, jobsJson(std::string(req.matches[1])));
        }));
  s.post(
      "/api/v1/jobs", onControlThread([this](const httplib::Request& req, httplib::Response& res) {
        if (!master_.info().session) {
          throw rest::RestError(409,
                                "this application master runs one job; start it with --session "
                                "to accept more");
        }
        std::string jobId;
        try {
          jobId = master_.submitJob(parseJob(req.body));
        } catch (const JobError& e) {
          throw rest::RestError(400, e.what());
        }
        rest::replyJson(res, JsonWriter().startObject().field("id", jobId).endObject().str(), 201);
      }));
  // Persisted stages: which are kept, and dropping one (its executors' files go, and they idle
  // out after executorIdleTimeout again).
  s.get("/api/v1/cache", onControlThread([this](const httplib::Request&, httplib::Response& res) {
          rest::replyJson(res, cacheJson());
        }));
  s.del(R"(/api/v1/cache/(.+))",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          const std::string stageId = req.matches[1];
          rest::throwIfError(master_.unpersist(stageId));
          rest::replyJson(
              res, JsonWriter().startObject().field("unpersisted", stageId).endObject().str());
        }));
  s.get("/api/v1/allocation/decisions",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          const int64_t limit = queryInteger(req, "limit", 100);
          rest::replyJson(res, decisionsJson(static_cast<size_t>(
                                   std::min<int64_t>(limit, kMaxDecisionsPerRequest))));
        }));
  s.get("/api/v1/allocation/history",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          // Without `since`, the whole history; with it, only what came after (the page polls so).
          const TimeMs since = req.has_param("since") ? queryInteger(req, "since", 0) : -1;
          rest::replyJson(res, historyJson(since));
        }));
  s.put("/api/v1/allocation/bounds",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          handleBoundsUpdate(req, res);
        }));
}

void StatusHandlers::replyLog(const httplib::Request& req, httplib::Response& res,
                              const std::string& executorId, const std::string& path) {
  std::optional<int64_t> tail;
  if (req.has_param("tail")) tail = queryInteger(req, "tail", 0);
  std::string content;
  rest::throwIfError(master_.executorLog(executorId, path, tail, &content));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(content, "text/plain; charset=utf-8");
}

void StatusHandlers::handleBoundsUpdate(const httplib::Request& req, httplib::Response& res) {
  if (!master_.info().dynamicAllocation) {
    throw rest::RestError(409,
                          "dynamicAllocation.enabled is false: the executor count is fixed at "
                          "executor.instances");
  }
  const rapidjson::Document body = rest::parseJson(req.body);
  if (!body.IsObject()) {
    throw rest::RestError(400, "expected a JSON object such as {\"max\": 8}");
  }
  for (auto it = body.MemberBegin(); it != body.MemberEnd(); ++it) {
    const std::string name = it->name.GetString();
    if (name != "min" && name != "initial" && name != "max") {
      replyBadField(res, 400, name,
                    "field '" + name + "': unknown; expected some of min, initial, max");
      return;
    }
  }
  rest::JsonObjectReader reader(body);
  auto optionalCount = [&](const char* name) -> std::optional<int> {
    if (!reader.hasNonNull(name)) return std::nullopt;
    return reader.requireInt(name);
  };
  std::optional<int> min, initial, max;
  try {
    min = optionalCount("min");
    initial = optionalCount("initial");
    max = optionalCount("max");
  } catch (const rest::JsonFieldError& e) {  // a string, a fraction, beyond int
    replyBadField(res, 400, e.fieldPath(), e.what());
    return;
  }
  if (!min && !initial && !max) {
    throw rest::RestError(400, "expected at least one of min, initial, max");
  }
  allocation::Bounds applied;
  const Status changed =
      master_.changeBounds(min, initial, max, "PUT /api/v1/allocation/bounds", &applied);
  if (changed.code() == StatusCode::kInvalidArgument) {
    replyBadField(res, rest::httpStatusOf(changed.code()), fieldOfBoundsError(changed.message()),
                  changed.message());
    return;
  }
  rest::throwIfError(changed);
  JsonWriter w;
  writeBounds(w, applied);
  rest::replyJson(res, w.str());
}

std::string StatusHandlers::statusJson() {
  const std::shared_ptr<const StatusSnapshot> snapshot = master_.status();
  const MasterInfo& info = master_.info();
  const allocation::AllocationSnapshot& a = snapshot->allocation;
  const AllocatorSnapshot& c = snapshot->containers;
  const TimeMs at = snapshot->takenAt;
  int64_t succeeded = 0, failed = 0;
  for (const auto& job : snapshot->jobs) {
    succeeded += job.succeeded;
    failed += job.failedAttempts;
  }
  JsonWriter w;
  w.startObject()
      .field("applicationId", info.applicationId)
      .field("attemptId", info.attemptId)
      .field("state", snapshot->stopping ? "STOPPING" : "RUNNING")
      .field("uptimeMs", master_.nowMs() - info.startedAt)
      .field("asOfMs", at - info.startedAt)
      .field("pid", static_cast<int64_t>(::getpid()))
      .field("recoveredFromAttempt", info.recoveredFromAttempt)
      .field("dynamicAllocation", info.dynamicAllocation);
  w.key("allocation")
      .startObject()
      .field("target", a.target)
      .field("live", a.live)
      .field("pending", c.outstanding + c.starting)
      .field("pendingRemoval", a.pendingRemoval + c.releasing)
      .field("busy", a.busy)
      .field("idle", a.idle)
      .field("min", a.bounds.minExecutors)
      .field("initial", a.bounds.initialExecutors)
      .field("max", a.bounds.maxExecutors)
      .field("maxNeeded", a.maxNeeded)
      .field("numExecutorsToAdd", a.numExecutorsToAdd)
      .field("initializing", a.initializing)
      .field("backlogTimerInMs", a.addTime >= 0 ? std::max<int64_t>(0, a.addTime - at) : -1)
      .field("launched", c.launched)
      .field("peak", snapshot->peakExecutors)
      .endObject();
  w.key("containers")
      .startObject()
      .field("requested", c.outstanding)
      .field("starting", c.starting)
      .field("running", c.running)
      .field("releasing", c.releasing)
      .field("waitingMs",
             c.outstanding > 0 && c.outstandingSince >= 0 ? at - c.outstandingSince : int64_t{0})
      .field("recentFailures", c.recentFailures)
      .endObject();
  w.key("tasks")
      .startObject()
      .field("pending", snapshot->pendingTasks)
      .field("running", snapshot->runningTasks)
      .field("succeeded", succeeded)
      .field("failed", failed)
      .endObject();
  writeArray(w, "jobs", snapshot->jobs,
             [](JsonWriter& out, const JobSummary& job) { writeJob(out, job, false); });
  w.endObject();
  return w.str();
}

std::string StatusHandlers::executorsJson() {
  const std::shared_ptr<const StatusSnapshot> snapshot = master_.status();
  const TimeMs at = snapshot->takenAt;
  const TimeMs startedAt = master_.info().startedAt;
  const int cores = master_.info().executorCores;
  return listDocument(
      at - startedAt, "executors", snapshot->executors,
      [&](JsonWriter& w, const ExecutorStatus& e) {
        const char* state = e.pendingRemoval     ? "PENDING_REMOVAL"
                            : e.runningTasks > 0 ? "BUSY"
                                                 : "IDLE";
        w.startObject()
            .field("id", e.id)
            .field("host", e.host)
            .field("container", e.container)
            .field("pid", e.pid)
            .field("state", state)
            .field("cores", cores)
            .field("runningTasks", e.runningTasks)
            .field("registeredAtMs", e.registeredAt >= 0 ? e.registeredAt - startedAt : -1)
            .field("idleSinceMs", e.idleSince >= 0 ? e.idleSince - startedAt : int64_t{-1})
            .field("idleForMs", e.idleSince >= 0 ? at - e.idleSince : int64_t{-1})
            .field("holdsCachedData", e.holdsCachedData)
            .field("holdsShuffleData", e.holdsShuffleData)
            .field("node", e.node)
            .field("excluded", e.excluded);
        // Which data it holds, by stage id, for "why is this executor still
        // here?".
        writeStrings(w, "cachedStages", e.cachedStages);
        writeStrings(w, "shuffleStages", e.shuffleStages);
        if (e.expiry.at == kInfiniteMs) {
          w.key("expiresInMs").null();
        } else {
          w.field("expiresInMs", std::max<int64_t>(0, e.expiry.at - at));
        }
        w.field("expiry", e.expiry.why).endObject();
      });
}

std::string StatusHandlers::jobsJson(const std::optional<std::string>& jobId) {
  JsonWriter w;
  if (jobId) {
    const std::optional<JobSummary> job = master_.job(*jobId);
    if (!job) throw rest::RestError(404, "no job " + *jobId);
    writeJob(w, *job, true);
    return w.str();
  }
  w.startObject();
  writeArray(w, "jobs", master_.jobs(),
             [](JsonWriter& out, const JobSummary& job) { writeJob(out, job, true); });
  w.endObject();
  return w.str();
}

std::string StatusHandlers::cacheJson() {
  JsonWriter w;
  w.startObject();
  writeArray(w, "stages", master_.cachedStages(),
             [](JsonWriter& out, const CachedStageSummary& stage) {
               out.startObject()
                   .field("id", stage.stageId)
                   .field("tasks", stage.numTasks)
                   .field("missing", stage.missing)
                   .field("bytes", stage.bytes);
               writeStrings(out, "executors", stage.executors).endObject();
             });
  w.endObject();
  return w.str();
}

std::string StatusHandlers::decisionsJson(size_t limit) {
  const TimeMs now = master_.nowMs();
  const std::vector<DecisionRecord> records = master_.decisions(limit);  // its own lock
  return listDocument(now - master_.info().startedAt, "decisions", records,
                      [](JsonWriter& w, const DecisionRecord& d) {
                        w.startObject()
                            .field("atMs", d.atMs)
                            .field("lastMs", d.lastMs)
                            .field("repeats", d.repeats)
                            .field("source", d.source)
                            .field("action", d.action)
                            .field("target", d.target)
                            .field("why", d.why)
                            .endObject();
                      });
}

std::string StatusHandlers::historyJson(TimeMs sinceMs) {
  const AllocationHistory& history = master_.history();
  const std::vector<AllocationPoint> points = history.since(sinceMs);
  JsonWriter w;
  w.startObject()
      .field("nowMs", master_.nowMs() - master_.info().startedAt)
      .field("capacity", history.capacity())
      .field("thinned", history.thinned());
  // The series starts with this attempt of the AM; say so when an earlier one died.
  if (const int from = master_.info().recoveredFromAttempt; from > 0) {
    w.field("note", "recovered from attempt " + std::to_string(from));
  }
  writeArray(w, "points", points, [](JsonWriter& out, const AllocationPoint& p) {
    out.startObject()
        .field("atMs", p.atMs)
        .field("target", p.target)
        .field("live", p.live)
        .field("busy", p.busy)
        .field("pendingExecutors", p.pendingExecutors)
        .field("pendingTasks", p.pendingTasks)
        .field("runningTasks", p.runningTasks)
        .field("min", p.minExecutors)
        .field("max", p.maxExecutors)
        .endObject();
  });
  w.endObject();
  return w.str();
}

std::string runReportJson(const RunReport& report) {
  JsonWriter w;
  w.startObject().field("status", report.status);
  w.key("tasks")
      .startObject()
      .field("succeeded", report.tasksSucceeded)
      .field("failed", report.tasksFailed)
      .endObject();
  w.key("executors")
      .startObject()
      .field("peak", report.peakExecutors)
      .field("launched", report.launchedExecutors)
      .endObject();
  w.field("executor_seconds", static_cast<double>(report.executorMs) / 1000.0)
      .field("duration_seconds", static_cast<double>(report.durationMs) / 1000.0);
  w.key("stages").startArray();
  for (const auto& job : report.jobs) {
    for (const auto& stage : job.stages) {
      w.startObject()
          .field("job", job.jobId)
          .field("id", stage.id)
          .field("state", stageStateName(stage.state))
          .field("tasks", stage.numTasks)
          .field("succeeded", stage.succeeded)
          .field("failedAttempts", stage.failedAttempts)
          .field("duration_seconds",
                 stage.completedMs >= 0
                     ? static_cast<double>(stage.completedMs - stage.submittedMs) / 1000.0
                     : 0.0)
          .endObject();
    }
  }
  w.endArray();
  if (report.diagnostics) w.field("diagnostics", *report.diagnostics);
  w.endObject();
  return w.str();
}

}  // namespace tide::am
