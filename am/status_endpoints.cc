// The ApplicationMaster's HTTP API: executors' register/sync, and what a person (or `tide run`,
// `tide status`, Prometheus, the status page) reads: status, executors, jobs, the allocation
// history and decisions, /metrics and the page itself, plus PUT of the executor bounds.
// Rendering is kept apart from the loops in application_master.cc, and out of the AM's mutex:
// a handler copies what it needs under mu_ and writes JSON after letting go, so a status
// poller hammering the port does not hold up executors' syncs. /metrics and the history have
// their own synchronisation and never take mu_.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "am/application_master.h"
#include "am/status/request_pacer.h"
#include "am/status/status_page.h"
#include "common/config.h"
#include "rest/json.h"

namespace tide::am {

using rest::JsonWriter;

namespace {

// Decisions one request may ask for (the log keeps 1000).
constexpr size_t kMaxDecisionsPerRequest = 1000;

void writeStage(JsonWriter& w, const StageSummary& stage) {
  w.startObject()
      .field("id", stage.id)
      .field("state", stageStateName(stage.state))
      .field("tasks", stage.numTasks)
      .field("pending", stage.pending)
      .field("running", stage.running)
      .field("succeeded", stage.succeeded)
      .field("failedAttempts", stage.failedAttempts);
  w.key("dependsOn").startArray();
  for (const auto& dep : stage.dependsOn) w.value(dep);
  w.endArray();
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
    w.key("stages").startArray();
    for (const auto& stage : job.stages) writeStage(w, stage);
    w.endArray();
    w.key("failures").startArray();
    for (const auto& f : job.recentFailures) {
      w.startObject()
          .field("taskId", f.taskId)
          .field("stage", f.stageId)
          .field("index", f.index)
          .field("attempt", f.attempt)
          .field("executor", f.executorId)
          .field("reason", f.reason)
          .field("exitCode", f.exitCode)
          .field("stderrTail", f.stderrTail)
          .endObject();
    }
    w.endArray();
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

void ApplicationMaster::registerRoutes() {
  rest::HttpServer& e = *executorServer_;
  e.post("/api/v1/executors/register", [this](const httplib::Request& req, httplib::Response& res) {
    handleExecutorRegister(req, res);
  });
  e.post(R"(/api/v1/executors/([^/]+)/sync)",
         [this](const httplib::Request& req, httplib::Response& res) {
           handleExecutorSync(req, res);
         });
  e.post(R"(/api/v1/executors/([^/]+)/commit)",
         [this](const httplib::Request& req, httplib::Response& res) {
           handleExecutorCommit(req, res);
         });

  rest::HttpServer& s = *server_;
  // Handlers that take the AM's mutex, or a lock the loops take under it (decisions,
  // history), run on the control thread at normal priority: see control_thread.h.
  auto onControlThread = [this](rest::RouteHandler handler) -> rest::RouteHandler {
    return
        [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          control_.run([&] { handler(req, res); });
        };
  };
  // Before any route (unknown paths too): every thread of this server serves at low priority.
  // They are paced, too: over ui.maxRequestsPerSecond a request waits its turn.
  auto pacer = std::make_shared<RequestPacer>(config_.uiMaxRequestsPerSecond);
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
    res.set_content(metrics_.registry.render(), metrics::kPrometheusContentType);
  });
  s.get("/api/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, statusJson());
  });
  s.get("/api/v1/executors", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, executorsJson());
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
        if (!config_.session) {
          throw rest::RestError(409,
                                "this application master runs one job; start it with --session "
                                "to accept more");
        }
        std::string jobId;
        try {
          jobId = submitJob(parseJob(req.body));
        } catch (const JobError& e) {
          throw rest::RestError(400, e.what());
        }
        rest::replyJson(res, JsonWriter().startObject().field("id", jobId).endObject().str(), 201);
      }));
  // Persisted stages: which are kept, and dropping one (its executors' files go, and they idle
  // out after executorIdleTimeout again).
  s.get("/api/v1/cache", onControlThread([this](const httplib::Request&, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu_);
          JsonWriter w;
          w.startObject().key("stages").startArray();
          for (const CachedStageSummary& stage : scheduler_->cachedStages()) {
            w.startObject()
                .field("id", stage.stageId)
                .field("tasks", stage.numTasks)
                .field("missing", stage.missing)
                .field("bytes", stage.bytes)
                .key("executors")
                .startArray();
            for (const std::string& executor : stage.executors) w.value(executor);
            w.endArray().endObject();
          }
          w.endArray().endObject();
          rest::replyJson(res, w.str());
        }));
  s.del(R"(/api/v1/cache/(.+))",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          const std::string stageId = req.matches[1];
          {
            std::lock_guard<std::mutex> lock(mu_);
            const std::string problem = scheduler_->unpersist(stageId);
            if (!problem.empty()) {
              throw rest::RestError(problem.rfind("no stage", 0) == 0 ? 404 : 409, problem);
            }
            log_.info() << "unpersisted " << stageId;
          }
          JsonWriter reply;
          reply.startObject().field("unpersisted", stageId).endObject();
          rest::replyJson(res, reply.str());
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

void ApplicationMaster::handleBoundsUpdate(const httplib::Request& req, httplib::Response& res) {
  if (!config_.allocation.enabled) {
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
  const std::string error =
      changeBounds(min, initial, max, "PUT /api/v1/allocation/bounds", &applied);
  if (!error.empty()) {
    replyBadField(res, 400, fieldOfBoundsError(error), error);
    return;
  }
  JsonWriter w;
  writeBounds(w, applied);
  rest::replyJson(res, w.str());
}

// The newest published snapshot; before the first tick, one made now.
std::shared_ptr<const StatusSnapshot> ApplicationMaster::currentStatus() {
  if (auto snapshot = statusSnapshot_.latest()) return snapshot;
  std::lock_guard<std::mutex> lock(mu_);
  publishStatusSnapshot(clock_.nowMs());
  return statusSnapshot_.latest();
}

std::string ApplicationMaster::statusJson() {
  const std::shared_ptr<const StatusSnapshot> snapshot = currentStatus();
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
      .field("applicationId", identity_.applicationId)
      .field("attemptId", identity_.attemptId)
      .field("state", snapshot->stopping ? "STOPPING" : "RUNNING")
      .field("uptimeMs", clock_.nowMs() - startedAt_)
      .field("asOfMs", at - startedAt_)
      .field("pid", static_cast<int64_t>(::getpid()))
      .field("dynamicAllocation", config_.allocation.enabled);
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
  w.key("jobs").startArray();
  for (const auto& job : snapshot->jobs) writeJob(w, job, false);
  w.endArray();
  w.endObject();
  return w.str();
}

std::string ApplicationMaster::executorsJson() {
  const std::shared_ptr<const StatusSnapshot> snapshot = currentStatus();
  const TimeMs at = snapshot->takenAt;
  JsonWriter w;
  w.startObject().field("nowMs", at - startedAt_).key("executors").startArray();
  for (const ExecutorStatus& e : snapshot->executors) {
    const char* state = e.pendingRemoval ? "PENDING_REMOVAL" : e.runningTasks > 0 ? "BUSY" : "IDLE";
    w.startObject()
        .field("id", e.id)
        .field("host", e.host)
        .field("container", e.container)
        .field("pid", e.pid)
        .field("state", state)
        .field("cores", config_.allocation.executorCores)
        .field("runningTasks", e.runningTasks)
        .field("registeredAtMs", e.registeredAt >= 0 ? e.registeredAt - startedAt_ : -1)
        .field("idleSinceMs", e.idleSince >= 0 ? e.idleSince - startedAt_ : int64_t{-1})
        .field("idleForMs", e.idleSince >= 0 ? at - e.idleSince : int64_t{-1})
        .field("holdsCachedData", e.holdsCachedData)
        .field("holdsShuffleData", e.holdsShuffleData)
        .field("node", e.node);
    // Which data it holds, by stage id, for "why is this executor still here?".
    w.key("cachedStages").startArray();
    for (const std::string& stage : e.cachedStages) w.value(stage);
    w.endArray().key("shuffleStages").startArray();
    for (const std::string& stage : e.shuffleStages) w.value(stage);
    w.endArray();
    if (e.expiry.at == kInfiniteMs) {
      w.key("expiresInMs").null();
    } else {
      w.field("expiresInMs", std::max<int64_t>(0, e.expiry.at - at));
    }
    w.field("expiry", e.expiry.why).endObject();
  }
  w.endArray().endObject();
  return w.str();
}

std::string ApplicationMaster::jobsJson(const std::optional<std::string>& jobId) {
  JsonWriter w;
  if (jobId) {
    std::optional<JobSummary> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = scheduler_->jobSummary(*jobId);
    }
    if (!job) throw rest::RestError(404, "no job " + *jobId);
    writeJob(w, *job, true);
    return w.str();
  }
  std::vector<JobSummary> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs = scheduler_->jobSummaries();
  }
  w.startObject().key("jobs").startArray();
  for (const auto& job : jobs) writeJob(w, job, true);
  w.endArray().endObject();
  return w.str();
}

std::string ApplicationMaster::decisionsJson(size_t limit) {
  const TimeMs now = clock_.nowMs();
  const std::vector<DecisionRecord> records = decisions_.newest(limit);  // its own lock
  JsonWriter w;
  w.startObject().field("nowMs", now - startedAt_).key("decisions").startArray();
  for (const auto& d : records) {
    w.startObject()
        .field("atMs", d.atMs)
        .field("lastMs", d.lastMs)
        .field("repeats", d.repeats)
        .field("source", d.source)
        .field("action", d.action)
        .field("target", d.target)
        .field("why", d.why)
        .endObject();
  }
  w.endArray().endObject();
  return w.str();
}

std::string ApplicationMaster::historyJson(TimeMs sinceMs) {
  const std::vector<AllocationPoint> points = history_.since(sinceMs);
  JsonWriter w;
  w.startObject()
      .field("nowMs", clock_.nowMs() - startedAt_)
      .field("capacity", history_.capacity())
      .field("thinned", history_.thinned());
  w.key("points").startArray();
  for (const auto& p : points) {
    w.startObject()
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
  }
  w.endArray().endObject();
  return w.str();
}

std::string ApplicationMaster::reportJson() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_.nowMs();
  DurationMs executorMs = executorMsClosed_;
  for (const auto& [id, executor] : executors_) executorMs += now - executor.registeredAt;
  int64_t succeeded = 0, failed = 0;
  const auto jobs = scheduler_->jobSummaries();
  for (const auto& job : jobs) {
    succeeded += job.succeeded;
    failed += job.failedAttempts;
  }
  std::string status = "RUNNING";
  if (stopOutcome_) {
    status = stopOutcome_->finalStatus;
  } else if (scheduler_->allJobsDone()) {
    status = failedJobMessages_.empty() ? "SUCCEEDED" : "FAILED";
  }
  JsonWriter w;
  w.startObject().field("status", status);
  w.key("tasks").startObject().field("succeeded", succeeded).field("failed", failed).endObject();
  w.key("executors")
      .startObject()
      .field("peak", peakExecutors_)
      .field("launched", allocator_.snapshot().launched)
      .endObject();
  w.field("executor_seconds", static_cast<double>(executorMs) / 1000.0)
      .field("duration_seconds", static_cast<double>(now - startedAt_) / 1000.0);
  w.key("stages").startArray();
  for (const auto& job : jobs) {
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
  if (!failedJobMessages_.empty()) w.field("diagnostics", failedJobMessages_.front());
  w.endObject();
  return w.str();
}

}  // namespace tide::am
