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
#include "rest/json_fields.h"

namespace tide::am {

using rest::JsonWriter;

namespace {

// Decisions one request may ask for (the log keeps 1000).
constexpr size_t kMaxDecisionsPerRequest = 1000;
// Stages GET /api/v1/status lists (the running ones first, then the newest): the page's
// progress bars and timeline markers stay cheap with thousands of stages.
constexpr size_t kStatusStages = 200;
// Removed executors GET /api/v1/executors lists by default, and at most (?removed=).
constexpr int64_t kRemovedExecutorsDefault = 100;

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

// Documents of a struct's own fields, as field tables (rest/json_fields.h): the same writer
// the wire messages use.
const rest::JsonFields<FailedAttempt>& failedAttemptFields() {
  using F = FailedAttempt;
  static const rest::JsonFields<F> fields = rest::JsonFields<F>()
                                                .required("taskId", &F::taskId)
                                                .required("stage", &F::stageId)
                                                .required("index", &F::index)
                                                .required("attempt", &F::attempt)
                                                .required("executor", &F::executorId)
                                                .required("reason", &F::reason)
                                                .required("exitCode", &F::exitCode)
                                                .required("stderrTail", &F::stderrTail);
  return fields;
}

const rest::JsonFields<DecisionRecord>& decisionFields() {
  using D = DecisionRecord;
  static const rest::JsonFields<D> fields =
      rest::JsonFields<D>()
          .required("atMs", &D::atMs)
          .required("lastMs", &D::lastMs)
          .required("repeats", &D::repeats)
          .required("source", &D::source)
          .required("action", &D::action)
          .required("target", &D::target)
          .required("why", &D::why)
          .required("firstTarget", &D::firstTarget)
          .required("firstWhy", &D::firstWhy)
          .computed("summary", [](const D& d) { return d.summary(); });
  return fields;
}

// A clock time as AM uptime; -1 (not yet) stays -1.
TimeMs uptimeOf(TimeMs at, TimeMs startedAt) {
  return at >= 0 ? at - startedAt : -1;
}

// What the stage is and how far it got: in a job's stages and in the status's.
JsonWriter& writeStageProgress(JsonWriter& w, const StageSummary& stage) {
  return w.field("id", stage.id)
      .field("state", stageStateName(stage.state))
      .field("tasks", stage.numTasks)
      .field("pending", stage.pending)
      .field("running", stage.running)
      .field("succeeded", stage.succeeded)
      .field("failedAttempts", stage.failedAttempts);
}

void writeStage(JsonWriter& w, const StageSummary& stage) {
  writeStageProgress(w.startObject(), stage);
  writeStrings(w, "dependsOn", stage.dependsOn);
  w.field("resourceProfileId", stage.profile.id);
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

void writeJob(JsonWriter& w, const JobSummary& job, bool detailed, TimeMs startedAt) {
  w.startObject()
      .field("id", job.jobId)
      .field("name", job.name)
      .field("state", jobStateName(job.state))
      .field("message", job.message)
      .field("submittedMs", uptimeOf(job.submittedMs, startedAt))
      .field("completedMs", uptimeOf(job.completedMs, startedAt))
      .field("tasks", job.numTasks)
      .field("pending", job.pending)
      .field("running", job.running)
      .field("succeeded", job.succeeded)
      .field("failedAttempts", job.failedAttempts);
  if (detailed) {
    writeArray(w, "stages", job.stages, writeStage);
    w.key("failures");
    failedAttemptFields().writeArray(w, job.recentFailures);
  }
  w.endObject();
}

// What the cluster could hold of this application's executors, next to the target.
void writeCapacity(JsonWriter& w, const ClusterCapacity& capacity, const MasterInfo& info) {
  auto countOrNull = [&](std::string_view key, int count) {
    if (count < 0) {
      w.key(key).null();
    } else {
      w.field(key, count);
    }
  };
  w.key("capacity").startObject().field("known", capacity.fitTotal >= 0);
  countOrNull("executorsFitNow", capacity.fitNow);
  countOrNull("executorsFitTotal", capacity.fitTotal);
  w.field("executorMemoryMb", info.executorMemoryMb)
      .field("executorCores", info.executorCores)
      .field("source", capacity.source)
      .endObject();
}

// At most kStatusStages of all jobs' stages: the running ones, then the newest submitted,
// then waiting ones; listed by submission (waiting last). Returns how many were left out.
std::pair<std::vector<std::pair<const JobSummary*, const StageSummary*>>, size_t> statusStages(
    const std::vector<JobSummary>& jobs) {
  std::vector<std::pair<const JobSummary*, const StageSummary*>> all;
  for (const auto& job : jobs) {
    for (const auto& stage : job.stages) all.emplace_back(&job, &stage);
  }
  auto rank = [](const StageSummary& s) {  // lower first
    if (s.state == StageState::kRunning) return 0;
    return s.submittedMs >= 0 ? 1 : 2;
  };
  auto byRelevance = [&](const auto& a, const auto& b) {
    const int ra = rank(*a.second), rb = rank(*b.second);
    if (ra != rb) return ra < rb;
    return a.second->submittedMs > b.second->submittedMs;
  };
  const size_t omitted = all.size() > kStatusStages ? all.size() - kStatusStages : 0;
  if (omitted > 0) {
    std::stable_sort(all.begin(), all.end(), byRelevance);
    all.resize(kStatusStages);
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    const TimeMs ta = a.second->submittedMs < 0 ? INT64_MAX : a.second->submittedMs;
    const TimeMs tb = b.second->submittedMs < 0 ? INT64_MAX : b.second->submittedMs;
    return ta < tb;
  });
  return {std::move(all), omitted};
}

// GET /api/v1/status's parts.

// "allocation": the policy's view next to the containers', with Spark's per-ResourceProfile
// state (a target, maxNeeded and step for each executor shape).
void writeStatusAllocation(JsonWriter& w, const StatusSnapshot& snapshot, const MasterInfo& info) {
  const allocation::AllocationSnapshot& a = snapshot.allocation;
  const AllocatorSnapshot& c = snapshot.containers;
  const TimeMs at = snapshot.takenAt;
  w.key("allocation")
      .startObject()
      .field("target", a.target)
      .field("live", a.live)
      .field("pending", c.outstanding + c.starting)
      .field("pendingRemoval", a.pendingRemoval + c.releasing)
      .field("decommissioning", a.decommissioning)
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
      .field("peak", snapshot.peakExecutors);
  writeArray(w, "profiles", a.profiles, [&](JsonWriter& out, const allocation::ProfileSnapshot& p) {
    auto held = c.profiles.find(p.profile.id);
    const ProfileContainers containers =
        held == c.profiles.end() ? ProfileContainers{} : held->second;
    const bool isDefault = p.profile.id == allocation::kDefaultProfileId;
    out.startObject()
        .field("id", p.profile.id)
        .field("cores", isDefault ? info.executorCores : p.profile.executorCores)
        .field("memoryMb", isDefault ? info.executorMemoryMb : p.profile.executorMemoryMb)
        .field("target", p.target)
        .field("maxNeeded", p.maxNeeded)
        .field("numExecutorsToAdd", p.numExecutorsToAdd)
        .field("live", p.live)
        .field("pendingRemoval", p.pendingRemoval)
        .field("requested", containers.outstanding)
        .field("starting", containers.starting)
        .field("pendingTasks", p.pendingTasks)
        .field("runningTasks", p.runningTasks)
        .endObject();
  });
  w.endObject();
}

void writeStatusContainers(JsonWriter& w, const AllocatorSnapshot& c, TimeMs at) {
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
}

void writeStatusTasks(JsonWriter& w, const StatusSnapshot& snapshot) {
  int64_t succeeded = 0, failed = 0;
  for (const auto& job : snapshot.jobs) {
    succeeded += job.succeeded;
    failed += job.failedAttempts;
  }
  w.key("tasks")
      .startObject()
      .field("pending", snapshot.pendingTasks)
      .field("running", snapshot.runningTasks)
      .field("succeeded", succeeded)
      .field("failed", failed)
      .endObject();
}

// Every job's stages with their progress and times (bounded), for the page's stage bars and
// its timeline; GET /api/v1/jobs/{id} has each stage in full.
void writeStatusStages(JsonWriter& w, const std::vector<JobSummary>& jobs, TimeMs startedAt) {
  const auto [stages, omitted] = statusStages(jobs);
  writeArray(w, "stages", stages, [&](JsonWriter& out, const auto& entry) {
    const StageSummary& stage = *entry.second;
    writeStageProgress(out.startObject().field("job", entry.first->jobId), stage)
        .field("submittedMs", uptimeOf(stage.submittedMs, startedAt))
        .field("completedMs", uptimeOf(stage.completedMs, startedAt))
        .endObject();
  });
  w.field("stagesOmitted", static_cast<int64_t>(omitted));
}

void writeBounds(JsonWriter& w, const allocation::Bounds& bounds) {
  w.startObject()
      .field("min", bounds.minExecutors)
      .field("initial", bounds.initialExecutors)
      .field("max", bounds.maxExecutors)
      .endObject();
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
  e.post(R"(/api/v1/executors/([^/]+)/sync)", [this](const httplib::Request& req,
                                                     httplib::Response& res) {
    const std::string executorId = req.matches[1];
    const rest::ExecutorSync sync = rest::executorSyncFromJson(rest::parseJson(req.body));
    rest::ExecutorSyncReply reply;
    int64_t holdMs = 0;
    rest::throwIfError(master_.beginSync(executorId, sync, &reply, &holdMs));
    if (holdMs > 0) {
      // A long poll: held without a thread until work comes (the AM wakes the port) or holdMs.
      rest::DeferredReply later;
      later.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(holdMs);
      later.resume = [this, executorId, held = MasterControl::HeldSync::of(sync)](
                         httplib::Response& out, bool timedOut) {
        rest::ExecutorSyncReply work;
        bool answered = false;
        const Status status = master_.resumeSync(executorId, held, timedOut, &work, &answered);
        if (!status.ok()) {
          rest::replyError(out, rest::httpStatusOf(status.code()), status.message());
          return true;
        }
        if (answered) rest::replyJson(out, rest::toJson(work));
        return answered;
      };
      if (rest::deferReply(std::move(later))) return;
      bool answered = false;  // not on a server that holds replies: answer now, empty
      rest::throwIfError(master_.resumeSync(executorId, MasterControl::HeldSync::of(sync), true,
                                            &reply, &answered));
    }
    rest::replyJson(res, rest::toJson(reply));
  });
  e.post(R"(/api/v1/executors/([^/]+)/commit)", [this](const httplib::Request& req,
                                                       httplib::Response& res) {
    const rest::CommitRequest request = rest::commitRequestFromJson(rest::parseJson(req.body));
    rest::replyJson(res, rest::toJson(master_.decideCommit(req.matches[1], request)));
  });
}

rest::RouteHandler StatusHandlers::onControlThread(rest::RouteHandler handler) {
  // Handlers that take the AM's lock, or a lock the loops take under it (decisions, history),
  // run on the control thread at normal priority: see control_thread.h.
  return [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    control_.run([&] { handler(req, res); });
  };
}

void StatusHandlers::registerStatusRoutes(rest::HttpServer& s) {
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
  s.get("/api/v1/executors", [this](const httplib::Request& req, httplib::Response& res) {
    const int64_t removed = rest::queryInteger(req, "removed", kRemovedExecutorsDefault);
    rest::replyJson(res, executorsJson(static_cast<size_t>(removed)));
  });
  registerLogRoutes(s);
  registerJobRoutes(s);
  registerAllocationRoutes(s);
}

std::string StatusHandlers::failedAttemptExecutor(const std::string& stage, int64_t index,
                                                  int attempt) {
  // The failed attempts each job keeps (newest job first).
  std::string executorId;
  control_.run([&] {
    for (const JobSummary& job : master_.jobs()) {
      for (const FailedAttempt& failure : job.recentFailures) {
        if (failure.stageId == stage && failure.index == index && failure.attempt == attempt) {
          executorId = failure.executorId;
        }
      }
    }
  });
  if (executorId.empty()) {
    throw rest::RestError(404, "no failed attempt " + std::to_string(attempt) + " of task " +
                                   stage + ":" + std::to_string(index) +
                                   " is known (only failed attempts link to logs)");
  }
  return executorId;
}

void StatusHandlers::registerLogRoutes(rest::HttpServer& s) {
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
          replyLog(
              req, res, failedAttemptExecutor(stage, index, attempt),
              "tasks/" + taskDirName(stage, index, attempt) + "/" + std::string(req.matches[4]));
        });
}

void StatusHandlers::registerJobRoutes(rest::HttpServer& s) {
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
}

void StatusHandlers::registerAllocationRoutes(rest::HttpServer& s) {
  s.get("/api/v1/allocation/decisions",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          const int64_t limit = rest::queryInteger(req, "limit", 100);
          rest::replyJson(res, decisionsJson(static_cast<size_t>(
                                   std::min<int64_t>(limit, kMaxDecisionsPerRequest))));
        }));
  s.get("/api/v1/allocation/history",
        onControlThread([this](const httplib::Request& req, httplib::Response& res) {
          // Without `since`, the whole history; with it, only what came after (the page polls so).
          const TimeMs since = req.has_param("since") ? rest::queryInteger(req, "since", 0) : -1;
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
  if (req.has_param("tail")) tail = rest::queryInteger(req, "tail", 0);
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
  JsonWriter w;
  w.startObject()
      .field("applicationId", info.applicationId)
      .field("attemptId", info.attemptId)
      .field("state", snapshot->stopping ? "STOPPING" : "RUNNING")
      .field("uptimeMs", master_.nowMs() - info.startedAt)
      .field("asOfMs", snapshot->takenAt - info.startedAt)
      .field("pid", static_cast<int64_t>(::getpid()))
      .field("recoveredFromAttempt", info.recoveredFromAttempt)
      .field("dynamicAllocation", info.dynamicAllocation);
  writeStatusAllocation(w, *snapshot, info);
  writeStatusContainers(w, snapshot->containers, snapshot->takenAt);
  writeStatusTasks(w, *snapshot);
  writeCapacity(w, snapshot->capacity, info);
  writeArray(w, "jobs", snapshot->jobs, [&](JsonWriter& out, const JobSummary& job) {
    writeJob(out, job, false, info.startedAt);
  });
  writeStatusStages(w, snapshot->jobs, info.startedAt);
  w.endObject();
  return w.str();
}

std::string StatusHandlers::executorsJson(size_t removedLimit) {
  const std::shared_ptr<const StatusSnapshot> snapshot = master_.status();
  const TimeMs at = snapshot->takenAt;
  const TimeMs startedAt = master_.info().startedAt;
  const int cores = master_.info().executorCores;
  JsonWriter w;
  w.startObject().field("nowMs", at - startedAt);
  writeArray(w, "executors", snapshot->executors, [&](JsonWriter& w, const ExecutorStatus& e) {
    const char* state = e.pendingRemoval     ? "PENDING_REMOVAL"
                        : e.decommissioning  ? "DECOMMISSIONING"
                        : e.runningTasks > 0 ? "BUSY"
                                             : "IDLE";
    w.startObject()
        .field("id", e.id)
        .field("host", e.host)
        .field("container", e.container)
        .field("pid", e.pid)
        .field("state", state)
        .field("cores", e.profile.executorCores > 0 ? e.profile.executorCores : cores)
        .field("resourceProfileId", e.profile.id)
        .field("memoryMb", e.profile.executorMemoryMb > 0 ? e.profile.executorMemoryMb
                                                          : master_.info().executorMemoryMb)
        .field("runningTasks", e.runningTasks)
        .field("registeredAtMs", uptimeOf(e.registeredAt, startedAt))
        .field("idleSinceMs", uptimeOf(e.idleSince, startedAt))
        .field("idleForMs", e.idleSince >= 0 ? at - e.idleSince : int64_t{-1})
        .field("holdsCachedData", e.holdsCachedData)
        .field("holdsShuffleData", e.holdsShuffleData)
        .field("node", e.node)
        .field("excluded", e.excluded);
    if (e.decommissioning) {
      w.key("decommissioning")
          .startObject()
          .field("outputsLeft", e.migrationsLeft)
          .field("blocksMigrated", e.blocksMigrated)
          .endObject();
    }
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
  // Gone ones, newest first, with why (Spark's dead executors): the timeline's ended bars.
  w.key("removed").startArray();
  const size_t removedCount = snapshot->removed ? snapshot->removed->size() : 0;
  for (size_t i = 0; i < removedCount && i < removedLimit; ++i) {
    const RemovedExecutor& e = (*snapshot->removed)[i];
    w.startObject()
        .field("id", e.id)
        .field("host", e.host)
        .field("container", e.container)
        .field("registeredAtMs", uptimeOf(e.registeredAt, startedAt))
        .field("removedAtMs", e.removedAt - startedAt)
        .field("reason", e.reason)
        .field("why", e.why)
        .endObject();
  }
  w.endArray().field("removedTotal", snapshot->removedTotal).endObject();
  return w.str();
}

std::string StatusHandlers::jobsJson(const std::optional<std::string>& jobId) {
  JsonWriter w;
  if (jobId) {
    const std::optional<JobSummary> job = master_.job(*jobId);
    if (!job) throw rest::RestError(404, "no job " + *jobId);
    writeJob(w, *job, true, master_.info().startedAt);
    return w.str();
  }
  return jobsDocument(master_.jobs(), master_.info().startedAt);
}

std::string jobsDocument(const std::vector<JobSummary>& jobs, TimeMs startedAt) {
  JsonWriter w;
  w.startObject();
  writeArray(w, "jobs", jobs, [startedAt](JsonWriter& out, const JobSummary& job) {
    writeJob(out, job, true, startedAt);
  });
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
                      [](JsonWriter& w, const DecisionRecord& d) { decisionFields().write(w, d); });
}

std::string StatusHandlers::historyJson(TimeMs sinceMs) {
  // The series starts with this attempt of the AM; say so when an earlier one died.
  const int from = master_.info().recoveredFromAttempt;
  return allocationHistoryDocument(
      master_.nowMs() - master_.info().startedAt, master_.history(), sinceMs,
      from > 0 ? "recovered from attempt " + std::to_string(from) : "");
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
