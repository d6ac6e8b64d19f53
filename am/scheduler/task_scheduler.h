#pragma once

// The AM's task scheduler (Spark's TaskSchedulerImpl and the DAGScheduler's stage bookkeeping):
// jobs are DAGs of stages; a stage becomes a TaskSet (TaskSetManager) once every stage it
// depends on has succeeded; executors' free slots are offered, shuffled, to the TaskSets in
// pool order (FIFO: job submission order, then stage submission order; FAIR: see
// scheduling_pool.h), at each locality level in turn, round-robin one task per offer per pass.
// A failed task goes back to the front of its stage's queue; the maxFailures-th failure of one
// task fails its job.
//
// Data: finished tasks' output blocks are registered in a BlockRegistry; a downstream task's
// launch lists where each of its input blocks is and prefers the executors and nodes holding
// most of its input bytes. A lost executor or a fetch failure loses blocks: the stages that
// wrote them run the missing tasks again (lineage) while the stages reading them wait, and
// neither counts toward task.maxFailures. Pure policy: no threads or sockets, time from the
// injected Clock, randomness from a seed; the caller serialises calls.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "allocation/resource_profile.h"
#include "am/containers/container_placement.h"
#include "am/scheduler/block_registry.h"
#include "am/scheduler/decommissioner.h"
#include "am/scheduler/exclude_on_failure_config.h"
#include "am/scheduler/health_tracker.h"
#include "am/scheduler/job.h"
#include "am/scheduler/listener_bus.h"
#include "am/scheduler/scheduler_listener.h"
#include "am/scheduler/scheduling_order.h"
#include "am/scheduler/scheduling_pool.h"
#include "am/scheduler/task_set_manager.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "rest/messages/executor.h"

namespace tide::am {

struct SchedulerConfig {
  int taskCpus = 1;         // task.cpus: the cpus a stage's task needs unless it says otherwise
  int maxTaskFailures = 4;  // task.maxFailures: failures of one task that fail its job
  size_t failedAttemptsKeptPerJob = 100;  // the most recent ones, for the status API
  LocalityWaits localityWaits;            // locality.wait[.process|.node|.rack]
  // A reduce task prefers the executors (and nodes) holding at least this fraction of its input
  // bytes (Spark's REDUCER_PREF_LOCS_FRACTION).
  double preferredLocationFraction = 0.2;
  // A stage re-run this often for lost outputs fails its job (Spark's
  // maxConsecutiveStageAttempts): data that keeps vanishing is not worth chasing forever.
  int maxStageReruns = 4;
  // scheduler.mode and scheduler.allocation.file.
  SchedulingMode mode = SchedulingMode::kFifo;
  std::vector<PoolConfig> pools;
  // speculation, speculation.quantile, speculation.multiplier.
  bool speculation = false;
  double speculationQuantile = 0.9;
  double speculationMultiplier = 3.0;
  DurationMs speculationMinThresholdMs = 100;          // speculation.minTaskRuntime
  DurationMs speculationTaskDurationThresholdMs = -1;  // speculation.task.duration.threshold
  int64_t slotsPerExecutor = 1;                        // executor.cores / task.cpus
  // The default resource profile's executors (executor.cores, executor.memory): a stage
  // without its own "executor" shape runs on these.
  int executorCores = 1;
  int64_t executorMemoryMb = 1024;
  DurationMs speculationIntervalMs = 100;   // speculation.interval
  ExcludeOnFailureConfig excludeOnFailure;  // excludeOnFailure.*
  // Pipelining (scheduler.queuedTasksPerExecutor, scheduler.queuedTaskWait): an executor may
  // hold this many tasks beyond its free slots, queued to start as a slot frees, so that a
  // slot does not sit idle for the round trip to the AM. Only tasks of stages whose mean
  // successful duration lets the queue drain within queuedTaskWaitMs are queued; 0: none
  // (Spark's behaviour).
  int queuedTasksPerExecutor = 0;
  DurationMs queuedTaskWaitMs = 50;

  // Reads task.cpus, task.maxFailures, locality.wait*, scheduler.mode and its allocation file,
  // speculation* and excludeOnFailure.*; a bad value is a ConfigError naming the key.
  static SchedulerConfig fromProperties(const Properties& properties);
};

// Free capacity of one executor. A task needs its stage's `cpus` slots.
struct WorkerOffer {
  std::string executorId;
  std::string host;
  int freeSlots = 0;
  // The resource profile the executor was started for: only stages of that profile get its
  // slots (Spark: tasks run only on executors of their stage's ResourceProfile).
  int profileId = allocation::kDefaultProfileId;
  // Tasks it may be handed beyond its free slots, queued (TaskLaunch::queued); only tasks of
  // stages short enough to pipeline (SchedulerConfig::queuedTasksPerExecutor).
  int queueRoom = 0;
};

// Block files an executor should delete: "<jobId>/<stage>" (shuffle data of an ended job, an
// unpersisted stage).
struct BlocksToDrop {
  std::string executorId;
  std::string prefix;
};

// A running task the scheduler wants stopped (its job failed or was cancelled, or another copy
// of it won).
struct TaskToKill {
  int64_t taskId = 0;
  std::string executorId;
};

enum class JobState { kRunning, kSucceeded, kFailed };
// kFailed: the stage whose task failed its job; kCancelled: other stages of a failed job.
enum class StageState { kWaiting, kRunning, kSucceeded, kFailed, kCancelled };

const char* jobStateName(JobState state);      // "RUNNING", "SUCCEEDED", "FAILED"
const char* stageStateName(StageState state);  // "WAITING", "RUNNING", ..., "CANCELLED"

// An attempt that ended without success: a failure, a lost executor, an unrequested kill.
struct FailedAttempt {
  int64_t taskId = 0;
  std::string stageId;  // the job's own stage id
  int64_t index = 0;
  int attempt = 0;
  std::string executorId;
  std::string reason;  // "exited with code 1", "executor e3 lost: heartbeat timed out", ...
  int exitCode = 0;
  std::string stderrTail;
  TimeMs timeMs = 0;
  bool countsTowardsFailures = false;  // false for lost executors and unrequested kills
};

struct StageSummary {
  std::string id;                // as in the job file
  std::string schedulerStageId;  // "<jobId>/<id>", as given to the listener
  StageState state = StageState::kWaiting;
  std::vector<std::string> dependsOn;
  int64_t numTasks = 0;
  int64_t pending = 0;  // ready to launch; 0 while the stage waits for its dependencies
  int64_t running = 0;
  int64_t succeeded = 0;
  int64_t failedAttempts = 0;  // failures, lost executors and unrequested kills
  int cpus = 1;
  allocation::ResourceProfile profile;  // the executors its tasks run on
  TimeMs submittedMs = -1;              // -1: not yet
  TimeMs completedMs = -1;
  DurationMs taskDurationSumMs = 0;  // over successful attempts
  DurationMs taskDurationMinMs = 0;
  DurationMs taskDurationMaxMs = 0;
  bool persist = false;
  int reruns = 0;  // times it ran again for lost outputs
  // Launches by locality level (PROCESS_LOCAL, NODE_LOCAL, NO_PREF, RACK_LOCAL, ANY).
  std::vector<int64_t> launchesByLocality = std::vector<int64_t>(kLocalityLevelCount, 0);
  int64_t speculativeLaunches = 0;
};

// Where a job is in its life: kept by the scheduler for each job, and shown in its summary.
struct JobProgress {
  JobState state = JobState::kRunning;
  std::string message;  // why it ended; empty while running
  TimeMs submittedMs = 0;
  TimeMs completedMs = -1;
  int64_t failedAttempts = 0;
  int64_t launched = 0;  // attempts launched, speculative ones included
};

struct JobSummary : JobProgress {
  std::string jobId;
  std::string name;
  std::string pool;
  int64_t numTasks = 0;
  int64_t pending = 0;
  int64_t running = 0;
  int64_t succeeded = 0;
  std::vector<StageSummary> stages;           // in job file order
  std::vector<FailedAttempt> recentFailures;  // oldest first, at most failedAttemptsKeptPerJob
};

// Where a persisted stage's blocks are, for the status API.
struct CachedStageSummary {
  std::string stageId;  // "<jobId>/<stage>"
  int64_t numTasks = 0;
  int64_t missing = 0;  // outputs lost with their executors
  int64_t bytes = 0;
  std::vector<std::string> executors;
};

// A task whose output a status update committed: what the recovery journal keeps of it.
struct CommittedTask {
  std::string jobId;
  std::string stageId;  // the job's own stage id
  int64_t index = 0;
  int attempt = 0;
  std::string node;             // of its executor ("" when unknown)
  bool stageCompleted = false;  // it was its stage's last task
};

// An executor the scheduler wants released, and why (for the decision log).
struct ExecutorToKill {
  std::string executorId;
  std::string reason;
};

class TaskScheduler {
 public:
  TaskScheduler(SchedulerConfig config, const Clock& clock, uint64_t seed);
  ~TaskScheduler();
  TaskScheduler(const TaskScheduler&) = delete;
  TaskScheduler& operator=(const TaskScheduler&) = delete;

  // Adds a subscriber to the scheduler's one listener list (it must outlive the scheduler);
  // every event goes to every subscriber, in subscription order. Subscribe before submitting.
  void subscribe(SchedulerListener& listener) { listeners_.subscribe(listener); }

  // Checks the job (checkJob; throws JobError) and submits the stages without dependencies.
  // Returns its id: "job-1", "job-2", ...
  std::string submitJob(Job job);
  // Fails a running job on request: pending tasks dropped, running ones to be killed.
  // False when the job is unknown or already over.
  bool cancelJob(const std::string& jobId, const std::string& reason);

  // Assigns pending tasks to the offered slots and counts them running. Task ids are
  // sequential from 1. With one offer (an executor's sync) every launch is for that executor;
  // otherwise executorOf(launch.taskId) says where each goes.
  std::vector<rest::TaskLaunch> resourceOffers(const std::vector<WorkerOffer>& offers);
  // The end of a task reported by `executorId`. False (and nothing changes) for an unknown
  // task id, a duplicate, or a task that runs on another executor.
  // When the update committed the task (its first success), `committed` says which task it was
  // (for the AM's recovery journal).
  bool statusUpdate(const rest::TaskStatusUpdate& update, const std::string& executorId,
                    std::optional<CommittedTask>* committed = nullptr);
  // The output commit coordinator (Spark's OutputCommitCoordinator): may this running attempt,
  // which has exited 0, turn its output into blocks and files in the job's output? The first
  // running attempt of a task to ask wins; every other is denied while the winner runs or once
  // the task has succeeded: a speculative loser, an attempt whose kill was asked for, one
  // reported from the wrong executor or no longer running (its executor was lost). A winner
  // that ends without succeeding (failed, killed, its executor lost) frees the task for the
  // next attempt. Returns "" when allowed, else why not.
  std::string canCommit(int64_t taskId, const std::string& executorId);
  // The executor is gone: its running tasks go back to the front of their stages and are
  // reported to the listener as failed. They count against task.maxFailures only when the
  // exit was caused by the application (Spark's exitCausedByApp: its container was killed for
  // memory or exited non-zero), not when the cluster lost it (preemption, a lost node, a kill
  // by the AM or the RM, a heartbeat timeout).
  void executorLost(const std::string& executorId, const std::string& reason,
                    bool exitCausedByApp = false);
  // An executor released on purpose (idle): the blocks it held are gone with it, and tasks
  // still on it (none, when the policy released it idle) run elsewhere: a running one as a lost
  // attempt (recorded, not counted toward task.maxFailures), a queued one pending again unstarted.
  void executorRemoved(const std::string& executorId);
  // Pipelining. A queued launch is the executor's but not started: it is counted as running in
  // the stage's and the status's counts (it is assigned), but the listeners (the allocation
  // policy, Spark's ExecutorMonitor) hear of its start only once the executor starts it, so to
  // them it is pending until then, as it would be in Spark, which does not pipeline.
  //   - the executor reported it running (or its end): started now
  void taskStarted(int64_t taskId, const std::string& executorId);
  //   - the executor handed it back unstarted: pending again, at the front of its stage, with no
  //     failure counted and nothing heard by the listeners. False when it was not queued there.
  bool queuedTaskReturned(int64_t taskId, const std::string& executorId);
  //   - tasks queued on the executor and not started
  int queuedTasksOn(const std::string& executorId) const;
  //   - queued tasks on executors other than `idleExecutor` to ask back, once each (another
  //     executor is idle while nothing is pending: they should run there instead)
  std::vector<TaskToKill> takeBackQueuedTasksFor(const std::string& idleExecutor);
  //   - the tasks queued on `executorId` not asked back yet, asked back now (it is leaving:
  //     a decommissioning executor starts no new task, as in Spark), ascending
  std::vector<TaskToKill> takeBackQueuedTasksOn(const std::string& executorId);

  // Running tasks of failed or cancelled jobs (or losing speculative copies) that the caller
  // should kill, once each. They stay running until their executor reports them (or is lost).
  std::vector<TaskToKill> takeTasksToKill();
  // Block files executors should delete, once each.
  std::vector<BlocksToDrop> takeBlocksToDrop();

  // Drops a persisted stage ("job-1/words") of an ended job: its blocks are deleted and its
  // executors idle out after executorIdleTimeout again. kNotFound for an unknown stage,
  // kFailedPrecondition when it is not (or no longer) persisted or its job still runs.
  Status unpersist(const std::string& stageId);
  std::vector<CachedStageSummary> cachedStages() const;
  // Pending tasks of runnable stages by the node they prefer.
  std::map<std::string, int64_t> pendingTasksByPreferredNode() const;
  // Where containers should be asked, per resource profile (Spark's ExecutorAllocationManager
  // keeps rpIdToHostToLocalTaskCount and numLocalityAwareTasksPerResourceProfileId): each
  // profile's submitted stages' tasks by the nodes they prefer (a task preferring two nodes
  // counts on both), how many prefer some node, and the tasks one of its executors runs (its
  // cores / the widest of those stages' cpus). As in Spark, a stage's tasks count until the
  // stage completes. Profiles with no such task are left out.
  std::map<int, LocalityHints> containerPlacementHints() const;
  // Stage ids ("<jobId>/<stage>") with blocks on the executor.
  std::vector<std::string> stagesHeldBy(const std::string& executorId) const;
  // Graceful decommissioning. The task outputs on the executor worth handing to a peer: shuffle
  // output a stage of its running job still has to read, and a persisted stage's blocks.
  std::vector<OutputToMigrate> outputsToMigrate(const std::string& executorId) const;
  // A peer took a task output off `fromExecutor`: its readers fetch it from `toExecutor` (on
  // `toNode`) from now on, and the allocation policy hears that the peer holds the data. False
  // when the output is no longer the one on `fromExecutor` (lost or made again meanwhile).
  bool outputMigrated(const std::string& stageId, int64_t index, const std::string& fromExecutor,
                      const std::string& toExecutor, const std::string& toNode);
  const BlockRegistry& blocks() const { return blocks_; }

  // Recovery (issue 12): what an earlier AM attempt journaled, replayed into a fresh scheduler
  // (jobs resubmitted first, in their order) before the first offer. Each returns "" or why the
  // record does not fit the jobs (a journal that does not match: the caller stops with it).
  //   - an attempt launched before: later launches of the index get higher attempt numbers
  std::string restoreLaunchedAttempt(const std::string& jobId, const std::string& stageId,
                                     int64_t index, int attempt);
  //   - a committed task: succeeded, its output registered where it is (a stage whose tasks are
  //     all committed completes, and the stages after it are submitted)
  std::string restoreCommitted(const std::string& jobId, const std::string& stageId, int64_t index,
                               int attempt, const std::string& executorId, const std::string& node,
                               DurationMs durationMs, const std::vector<rest::BlockOutput>& blocks);
  //   - a task still running on an executor that survived: running there under its task id
  std::string restoreRunning(int64_t taskId, const std::string& jobId, const std::string& stageId,
                             int64_t index, int attempt, const std::string& executorId,
                             const std::string& node);
  //   - an adopted executor reported the blocks it holds: the outputs recorded on it with a
  //     block missing are lost (made again where still needed). Returns how many were lost.
  int64_t keepOnlyHeldOutputs(const std::string& executorId, const std::set<std::string>& held,
                              const std::string& why);
  // Task ids continue above `highest` (ids of the earlier attempt's tasks are never reused).
  void continueTaskIdsAfter(int64_t highest) { nextTaskId_ = std::max(nextTaskId_, highest + 1); }

  // Exclusion on failure (excludeOnFailure.enabled): executors excluded for the application,
  // and ones to release (excludeOnFailure.killExcludedExecutors), once each.
  std::vector<ExcludedExecutor> excludedExecutors() const;
  bool isExecutorExcluded(const std::string& executorId) const;
  // And, when a stage is unschedulable while an executor idles, that executor (Spark's
  // killExcludedIdleExecutor), so that a new one can take its place.
  std::vector<ExecutorToKill> takeExcludedExecutorsToKill();

  // Speculation (Spark's checkSpeculatableTasks): marks tasks running longer than multiplier x
  // the median successful duration, once quantile of their stage has succeeded, for a second
  // copy. Call it often; it looks at most once per speculation.interval. Returns how many were
  // marked.
  int checkSpeculatableTasks();

  int64_t pendingTaskCount() const;
  // Launched tasks, queued ones included (those are assigned, not pending).
  int64_t runningTaskCount() const { return static_cast<int64_t>(runningTasks_.size()); }
  // Of which queued on their executor, not yet started.
  int64_t queuedTaskCount() const { return queuedTasks_; }
  bool hasPendingTasks() const { return pendingTaskCount() > 0; }
  // Task ids running on the executor, ascending.
  std::vector<int64_t> runningTasksOn(const std::string& executorId) const;
  // Where a running task runs; nullopt when it is not running.
  std::optional<std::string> executorOf(int64_t taskId) const;
  // No job is running (also true before the first submission).
  bool allJobsDone() const;

  std::optional<JobSummary> jobSummary(const std::string& jobId) const;
  std::vector<JobSummary> jobSummaries() const;  // in submission order
  // Per-task records the scheduler holds: running tasks, re-queued tasks and failure counts.
  // Stays proportional to running and troubled tasks, not to stage sizes.
  size_t materializedTaskRecords() const;

  const SchedulerConfig& config() const { return config_; }
  // The resource profiles of the stages submitted so far (the default one always): a stage's
  // "executor" shape is resolved to one at job submission.
  const allocation::ResourceProfiles& profiles() const { return profiles_; }
  // Recovery: a profile the previous attempt numbered (its executors keep it).
  void restoreProfile(const allocation::ResourceProfile& profile) { profiles_.restore(profile); }

 private:
  struct StageRun;
  struct JobRun;
  struct RunningTask {
    JobRun* job = nullptr;
    size_t stage = 0;  // index into job->stages
    TaskAttempt attempt;
    std::string executorId;
    TimeMs startMs = 0;  // for a queued task: when it was handed out, until it starts
    bool speculative = false;
    bool queued = false;         // handed out ahead of a free slot and not started yet
    bool takeBackAsked = false;  // queued, and asked back for another executor
  };

  // submitJob's steps: the job checked against what the scheduler holds (persisted inputs,
  // executor shapes), then its JobRun planned: stages linked to their parents and profiles,
  // final stages given their output directories.
  void checkPersistedInputs(const Job& job) const;
  void checkTasksFitExecutors(const Job& job) const;
  std::unique_ptr<JobRun> planJobRun(Job job);
  void planStageRun(JobRun& run, size_t stage,
                    const std::unordered_map<std::string, size_t>& indexById);
  static void assignCollectDirs(JobRun& run);
  void submitStage(JobRun& job, size_t stage);
  // The stage of a job by its own id, for recovery; sets `why` when there is none.
  std::pair<JobRun*, size_t> findStage(const std::string& jobId, const std::string& stageId,
                                       std::string* why);
  void completeStage(JobRun& job, size_t stage);
  // The stage's tasks' preferred places from where their inputs are (and preferred_hosts).
  void updatePreferences(JobRun& job, size_t stage);
  std::vector<rest::BlockInput> inputsOf(const JobRun& job, size_t stage, int64_t index) const;
  // A task's output blocks are in: registered, and reported to the allocation policy.
  void registerOutput(JobRun& job, size_t stage, int64_t index, const std::string& executorId,
                      const std::vector<rest::BlockOutput>& blocks);
  // Outputs lost (executor gone, fetch failed): their stages run the missing tasks again.
  void handleLostOutputs(const std::map<std::string, std::vector<int64_t>>& lost,
                         const std::string& why);
  void rerunStage(JobRun& job, size_t stage, const std::vector<int64_t>& indices,
                  const std::string& why);
  // statusUpdate's outcomes for a removed running attempt: it finished (a success unless
  // another attempt holds the commit), or it was killed (retried when nobody asked for that).
  void taskFinished(const RunningTask& task, const rest::TaskStatusUpdate& update,
                    const std::string& executorId, TimeMs now,
                    std::optional<CommittedTask>* committed);
  void taskKilled(const RunningTask& task, const rest::TaskStatusUpdate& update,
                  bool killRequested);
  void handleFetchFailure(const RunningTask& task, int64_t taskId,
                          const rest::TaskStatusUpdate& update);
  // The job ended: shuffle data released, its blocks dropped unless persisted, its
  // unpersist list carried out.
  void releaseJobData(JobRun& job);
  void dropStageBlocks(const std::string& stageId, const std::set<std::string>& executors);
  // The other running copies of a task that just succeeded.
  void killOtherCopies(const JobRun& job, size_t stage, int64_t index, int64_t winner);
  // The active TaskSets in the order offers go to them.
  std::vector<std::pair<JobRun*, size_t>> sortedTaskSets() const;
  // resourceOffers' steps: the offers recorded, shuffled and trimmed by exclusion; a stage's
  // pending tasks given to them, level by level; its speculative copies into the free slots left.
  struct OfferRound;
  OfferRound startOfferRound(const std::vector<WorkerOffer>& offers);
  void launchPendingTasks(JobRun& job, size_t stage, const std::vector<WorkerOffer>& offers,
                          OfferRound& round, std::vector<rest::TaskLaunch>& launches);
  void launchSpeculativeCopies(JobRun& job, size_t stage, const std::vector<WorkerOffer>& offers,
                               OfferRound& round, std::vector<rest::TaskLaunch>& launches);
  std::optional<TaskOffer> speculativeOffer(JobRun& job, size_t stage,
                                            const std::string& executorId,
                                            const TaskExcluded& excluded);
  // The stage's tasks that may not run on this offer (exclusion on failure); empty without it.
  TaskExcluded excludedTasks(const StageRun& stage, const WorkerOffer& offer) const;
  void failJob(JobRun& job, std::optional<size_t> failedStage, const std::string& message);
  rest::TaskLaunch launchTask(JobRun& job, size_t stage, const TaskOffer& offer,
                              const std::string& executorId, bool speculative, bool queued = false);
  // How many tasks of the stage an executor may hold queued: what its slots drain within
  // queuedTaskWaitMs at the stage's mean task duration so far (0 before any task succeeded).
  int queueDepthFor(const StageRun& stage) const;
  // A queued task starts (at `startMs`): the listeners hear of it now.
  void startQueued(RunningTask& task, TimeMs startMs);
  // A removed queued attempt that never started: its task is pending again (front of its
  // stage, same attempt number) unless it no longer needs to run.
  void requeueUnstarted(const RunningTask& task);
  // Takes a running task out of every index; returns it and whether its kill was requested.
  RunningTask removeRunning(int64_t taskId, bool* killRequested);
  // A removed running attempt failed: recorded, counted toward task.maxFailures while its
  // stage runs (failing the job at the limit), else retried.
  void failAttempt(const RunningTask& task, int64_t taskId, const std::string& reason, int exitCode,
                   const std::string& stderrTail, bool killRequested);
  // An attempt ended without success through no fault of the task (lost executor,
  // unrequested kill): retried at the front of its stage without counting a failure.
  void retryWithoutCounting(const RunningTask& task, int64_t taskId, const std::string& reason,
                            bool killRequested);
  // The executor is gone, lost or released: its blocks are lost (lineage), its running tasks
  // ended as `why` (failed toward task.maxFailures when `exitCausedByApp`, else retried without
  // counting), its queued ones pending again.
  void dropExecutor(const std::string& executorId, const std::string& why, bool exitCausedByApp);
  // The task has no attempt running any more: a speculative copy it was marked for will not
  // run, and the policy stops counting it as pending.
  void dropSpeculationMark(StageRun& stage, int64_t index);
  // Tells the listeners that a removed running attempt ended (a speculative copy as such).
  void taskEnded(const RunningTask& task, TaskOutcome outcome);
  // Counts a failed attempt in its stage and job and keeps its record (the newest
  // failedAttemptsKeptPerJob of the job).
  void recordFailedAttempt(const RunningTask& task, int64_t taskId, const std::string& reason,
                           int exitCode, const std::string& stderrTail, bool countsTowardsFailures);
  // Exclusion on failure: may this offer run tasks of the stage at all, and task `index`?
  bool offerExcludedForStage(const StageRun& stage, const WorkerOffer& offer) const;
  // After a round of offers that launched nothing for the stage: is one of its pending tasks
  // excluded on every live executor (Spark's getCompletelyExcludedTaskIfAny)?
  std::optional<int64_t> completelyExcludedTask(const JobRun& job, size_t stage) const;
  void setUnschedulable(StageRun& stage, bool unschedulable);
  // A stage whose task `stuck` can run on no live executor (-1: any of its pending tasks), as
  // Spark's resourceOffers handles it: kill an idle executor to make room, else report the stage
  // unschedulable to the policy (or, without dynamic allocation, fail the job), and fail the job
  // once that has not helped within unschedulableTaskSetTimeout. True when the job failed.
  bool handleUnschedulable(JobRun& job, size_t stageIndex, int64_t stuck, TimeMs now);
  void queueKill(const std::string& executorId, const std::string& reason);
  StageSummary summarizeStage(const JobRun& job, size_t stage) const;
  JobSummary summarizeJob(const JobRun& job) const;

  SchedulerConfig config_;
  const Clock& clock_;
  allocation::ResourceProfiles profiles_;
  ListenerBus listeners_;
  std::unique_ptr<SchedulingOrder> order_;  // from config_.mode, chosen once
  std::mt19937_64 random_;
  int64_t nextJobNumber_ = 1;
  int64_t nextTaskId_ = 1;
  int64_t nextStageSubmission_ = 0;
  std::vector<std::unique_ptr<JobRun>> jobs_;  // submission order
  std::unordered_map<std::string, JobRun*> jobsById_;
  // The FIFO pool: (job number, stage submission number) -> the stage's TaskSet.
  std::map<std::pair<int64_t, int64_t>, std::pair<JobRun*, size_t>> activeTaskSets_;
  std::unordered_map<int64_t, RunningTask> runningTasks_;
  std::unordered_map<std::string, std::set<int64_t>> runningByExecutor_;
  std::unordered_set<int64_t> killRequested_;
  int64_t queuedTasks_ = 0;         // entries of runningTasks_ with `queued`
  int64_t queuedNotAskedBack_ = 0;  // of which not `takeBackAsked`
  std::vector<TaskToKill> tasksToKill_;
  BlockRegistry blocks_;
  std::unordered_map<std::string, std::pair<JobRun*, size_t>> stagesById_;  // "<jobId>/<id>"
  std::unordered_map<std::string, std::string> executorNodes_;              // from offers
  std::unordered_map<std::string, int> executorProfiles_;                   // from offers
  std::set<std::string> persisted_;  // persisted stages of ended jobs, until unpersisted
  std::vector<BlocksToDrop> blocksToDrop_;
  TimeMs lastSpeculationCheckMs_ = -1;
  std::unique_ptr<HealthTracker> health_;  // with excludeOnFailure.enabled
  std::vector<ExecutorToKill> excludedToKill_;
};

}  // namespace tide::am
