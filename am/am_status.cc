// The ApplicationMaster's HTTP API: executors' register/sync, and the status a person (or
// `tide run`, `tide status`) reads. Rendering is kept apart from the loops in
// application_master.cc.

#include <algorithm>

#include "am/application_master.h"
#include "common/config.h"
#include "rest/json.h"

namespace tide::am {

using rest::JsonWriter;

namespace {

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

}  // namespace

void ApplicationMaster::registerRoutes() {
  rest::HttpServer& s = *server_;
  s.post("/api/v1/executors/register", [this](const httplib::Request& req, httplib::Response& res) {
    handleExecutorRegister(req, res);
  });
  s.post(R"(/api/v1/executors/([^/]+)/sync)",
         [this](const httplib::Request& req, httplib::Response& res) {
           handleExecutorSync(req, res);
         });
  s.get("/api/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, statusJson());
  });
  s.get("/api/v1/executors", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, executorsJson());
  });
  s.get("/api/v1/jobs", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, jobsJson(std::nullopt));
  });
  s.get(R"(/api/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    rest::replyJson(res, jobsJson(std::string(req.matches[1])));
  });
  s.post("/api/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
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
  });
  s.get("/api/v1/allocation/decisions",
        [this](const httplib::Request& req, httplib::Response& res) {
          size_t limit = 100;
          if (req.has_param("limit")) {
            try {
              limit = static_cast<size_t>(std::stoul(req.get_param_value("limit")));
            } catch (const std::exception&) {
              throw rest::RestError(400, "limit: expected a non-negative integer");
            }
          }
          rest::replyJson(res, decisionsJson(limit));
        });
}

std::string ApplicationMaster::statusJson() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_.nowMs();
  const allocation::AllocationSnapshot a = allocation_.snapshot();
  const AllocatorSnapshot c = allocator_.snapshot();
  JsonWriter w;
  w.startObject()
      .field("applicationId", identity_.applicationId)
      .field("attemptId", identity_.attemptId)
      .field("state", stopping_ ? "STOPPING" : "RUNNING")
      .field("uptimeMs", now - startedAt_);
  w.key("allocation")
      .startObject()
      .field("target", a.target)
      .field("live", a.live)
      .field("pending", c.outstanding + c.starting)
      .field("pendingRemoval", a.pendingRemoval)
      .field("busy", a.busy)
      .field("idle", a.idle)
      .field("min", a.bounds.minExecutors)
      .field("initial", a.bounds.initialExecutors)
      .field("max", a.bounds.maxExecutors)
      .field("maxNeeded", a.maxNeeded)
      .field("numExecutorsToAdd", a.numExecutorsToAdd)
      .field("initializing", a.initializing)
      .field("launched", c.launched)
      .field("peak", peakExecutors_)
      .endObject();
  int64_t succeeded = 0, failed = 0;
  const auto jobs = scheduler_->jobSummaries();
  for (const auto& job : jobs) {
    succeeded += job.succeeded;
    failed += job.failedAttempts;
  }
  w.key("tasks")
      .startObject()
      .field("pending", scheduler_->pendingTaskCount())
      .field("running", scheduler_->runningTaskCount())
      .field("succeeded", succeeded)
      .field("failed", failed)
      .endObject();
  w.key("jobs").startArray();
  for (const auto& job : jobs) writeJob(w, job, false);
  w.endArray();
  w.endObject();
  return w.str();
}

std::string ApplicationMaster::executorsJson() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_.nowMs();
  JsonWriter w;
  w.startObject().key("executors").startArray();
  for (const auto* tracker : allocation_.monitor().all()) {
    auto it = executors_.find(tracker->id);
    const allocation::ExpiryInfo expiry = allocation_.monitor().expiryOf(*tracker);
    w.startObject()
        .field("id", tracker->id)
        .field("host", it != executors_.end() ? it->second.host : "")
        .field("container", it != executors_.end() ? it->second.containerId : "")
        .field("pid", it != executors_.end() ? it->second.pid : int64_t{0})
        .field("state", tracker->runningTasks > 0 ? "BUSY" : "IDLE")
        .field("cores", config_.allocation.executorCores)
        .field("runningTasks", tracker->runningTasks)
        .field("idleSinceMs", tracker->idleSince >= 0 ? now - tracker->idleSince : int64_t{-1})
        .field("holdsCachedData", !tracker->cachedData.empty())
        .field("holdsShuffleData", !tracker->shuffles.empty());
    if (expiry.at == kInfiniteMs) {
      w.key("expiresInMs").null();
    } else {
      w.field("expiresInMs", std::max<int64_t>(0, expiry.at - now));
    }
    w.field("expiry", expiry.why).endObject();
  }
  w.endArray().endObject();
  return w.str();
}

std::string ApplicationMaster::jobsJson(const std::optional<std::string>& jobId) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonWriter w;
  if (jobId) {
    auto job = scheduler_->jobSummary(*jobId);
    if (!job) throw rest::RestError(404, "no job " + *jobId);
    writeJob(w, *job, true);
    return w.str();
  }
  w.startObject().key("jobs").startArray();
  for (const auto& job : scheduler_->jobSummaries()) writeJob(w, job, true);
  w.endArray().endObject();
  return w.str();
}

std::string ApplicationMaster::decisionsJson(size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  JsonWriter w;
  w.startObject().key("decisions").startArray();
  for (const auto& d : decisions_.newest(limit)) {
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
