#pragma once

// What the ApplicationMaster's HTTP handlers (status_handlers.h) may read and do: a narrow
// interface the ApplicationMaster implements (as Kudu's MasterPathHandlers see the Master), so
// the handlers parse requests and render JSON and the core keeps its state and its lock to
// itself. Every method is thread-safe; each takes the AM's lock itself when it needs it, so a
// handler never holds it while it renders.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "am/scheduler/job.h"
#include "am/scheduler/task_scheduler.h"
#include "am/status/allocation_history.h"
#include "am/status/decision_log.h"
#include "am/status/status_snapshot.h"
#include "common/clock.h"
#include "common/status.h"
#include "rest/messages/executor.h"

namespace tide::am {

// Fixed for the AM's life: what the status documents say about the application.
struct MasterInfo {
  std::string applicationId;
  std::string attemptId;
  TimeMs startedAt = 0;
  bool dynamicAllocation = true;  // dynamicAllocation.enabled
  int executorCores = 1;
  bool session = false;            // accepts more jobs (POST /api/v1/jobs)
  int uiMaxRequestsPerSecond = 0;  // ui.maxRequestsPerSecond
  int recoveredFromAttempt = 0;    // the AM attempt this one took over from (0: none)
  int64_t executorMemoryMb = 0;    // an executor container's size, with executorCores
};

// The run's summary for `tide run --report`, copied under the AM's lock.
struct RunReport {
  std::string status;  // RUNNING, SUCCEEDED, FAILED or KILLED
  int64_t tasksSucceeded = 0;
  int64_t tasksFailed = 0;
  int peakExecutors = 0;
  int64_t launchedExecutors = 0;
  DurationMs executorMs = 0;  // summed lifetimes
  DurationMs durationMs = 0;
  std::vector<JobSummary> jobs;
  std::optional<std::string> diagnostics;  // the first failed job's message
};

class MasterControl {
 public:
  virtual ~MasterControl() = default;

  virtual const MasterInfo& info() const = 0;
  virtual TimeMs nowMs() const = 0;

  // Reads. status() and the history and decisions never take the AM's lock (the hot paths a
  // dashboard polls); the job and cache reads take it for a copy.
  virtual std::shared_ptr<const StatusSnapshot> status() = 0;
  virtual std::optional<JobSummary> job(const std::string& jobId) = 0;
  virtual std::vector<JobSummary> jobs() = 0;
  virtual std::vector<CachedStageSummary> cachedStages() = 0;
  virtual std::vector<DecisionRecord> decisions(size_t limit) = 0;
  virtual const AllocationHistory& history() const = 0;
  virtual std::string metricsText() const = 0;  // Prometheus text format

  // Control. submitJob throws JobError for a job that cannot run.
  virtual std::string submitJob(Job job) = 0;
  // kNotFound, or kFailedPrecondition (not persisted, its job still running).
  virtual Status unpersist(const std::string& stageId) = 0;
  // The values given replace the current bounds, validated like the config: kInvalidArgument
  // naming the field first ("max: must be at least 1"), kFailedPrecondition when dynamic
  // allocation is off. `applied` receives the bounds now in force.
  virtual Status changeBounds(std::optional<int> minExecutors, std::optional<int> initialExecutors,
                              std::optional<int> maxExecutors, const std::string& source,
                              allocation::Bounds* applied) = 0;

  // Executors. `remoteAddress`: where the registration came from (its block server's host).
  // kUnavailable: started but its container is not granted yet (retry); kNotFound: not one this
  // AM started.
  virtual Status registerExecutor(const rest::ExecutorRegistration& registration,
                                  const std::string& remoteAddress,
                                  rest::ExecutorRegistered* reply) = 0;
  // Takes the executor's task updates and answers with work, waiting up to the sync's
  // maxWaitMs for some when it brought none. kNotFound for an executor never registered.
  virtual Status syncExecutor(const std::string& executorId, const rest::ExecutorSync& sync,
                              rest::ExecutorSyncReply* reply) = 0;
  // The same without waiting on the caller's thread (the executor port holds a sync without
  // one): takes the updates and fills `reply` with the work there is; when there is none and
  // the executor may wait, `*holdMs` (> 0) says for how long, and the caller answers later with
  // resumeSync, once woken or at the end of that time.
  virtual Status beginSync(const std::string& executorId, const rest::ExecutorSync& sync,
                           rest::ExecutorSyncReply* reply, int64_t* holdMs) {
    *holdMs = 0;
    return syncExecutor(executorId, sync, reply);
  }
  // What a held sync still needs of the sync that began it.
  struct HeldSync {
    int freeSlots = 0;
    bool mayQueue = true;  // false when it gave queued tasks back (pipelining)
    static HeldSync of(const rest::ExecutorSync& sync) {
      return HeldSync{sync.freeSlots, sync.returned.empty()};
    }
  };
  // For a held sync: `*answered` when `reply` now carries something (work, kills, shutdown), or
  // always with `timedOut` (then an empty reply); otherwise it is held on.
  virtual Status resumeSync(const std::string& executorId, const HeldSync& held, bool timedOut,
                            rest::ExecutorSyncReply* reply, bool* answered) {
    (void)executorId, (void)held, (void)timedOut, (void)reply;
    *answered = true;
    return Status();
  }
  // The output commit protocol: may this task attempt commit (TaskScheduler::canCommit)? A
  // refusal carries its reason; an executor no longer registered is refused.
  virtual rest::CommitDecision decideCommit(const std::string& executorId,
                                            const rest::CommitRequest& request) = 0;

  // Logs. A file of an executor's kept logs ("stderr", "tasks/<stage>-<index>-<attempt>/stderr",
  // common/app_logs.h), read from its node manager with its container's token, also once the
  // executor is gone: kNotFound for an executor this AM never started (or a missing file),
  // kUnavailable when its node cannot be reached, kFailedPrecondition where executors have no
  // node manager (Slurm). Takes the AM's lock only to find the container.
  virtual Status executorLog(const std::string& executorId, const std::string& path,
                             std::optional<int64_t> tailBytes, std::string* content) {
    (void)executorId, (void)path, (void)tailBytes, (void)content;
    return Status::failedPrecondition("this application master keeps no executor logs");
  }
};

}  // namespace tide::am
