#pragma once

// The ApplicationMaster process's core: registers with the resource manager, runs the
// allocation loop (the policy's tick every dynamicAllocation.interval) and the RM heartbeat
// (containers asked for, granted, released), starts executors in granted containers, hands
// tasks to executors over their sync requests, and serves its status through StatusHandlers
// (status_handlers.h), which see it only as a MasterControl.
//
// Locking: one mutex, mu_, guards the policy, the scheduler, the allocator and the AM's own
// bookkeeping (each field below says what guards it). It is taken in one place, withState();
// the loops and executor syncs that wait on a condition variable take the lock withState hands
// their body. The loops only gather inputs, call the policy, the scheduler and the allocator,
// and carry out what they decide. The scheduler's events reach their consumers (the allocation
// policy, the metrics, the job bookkeeping here) through the scheduler's one listener list.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "allocation/allocation_policy.h"
#include "am/allocation_listener.h"
#include "am/config.h"
#include "am/containers/container_allocator.h"
#include "am/containers/heartbeat_pacer.h"
#include "am/containers/resource_manager_client.h"
#include "am/master_control.h"
#include "am/recovery/recovery_journal.h"
#include "am/scheduler/task_scheduler.h"
#include "am/status/allocation_history.h"
#include "am/status/decision_log.h"
#include "am/status/event_log.h"
#include "am/status/metrics.h"
#include "am/status/status_snapshot.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "rest/http_server.h"
#include "rest/messages/executor.h"

namespace tide::am {

struct AmIdentity {
  std::string applicationId;
  std::string attemptId;
  std::string appSecret;       // shared with executors; never logged
  std::string executorBinary;  // path of tide-executor
};

// How the application ended.
struct AmOutcome {
  std::string finalStatus;  // SUCCEEDED, FAILED or KILLED
  std::string diagnostics;
};

class StatusHandlers;

class ApplicationMaster : public MasterControl {
 public:
  ApplicationMaster(AmConfig config, AmIdentity identity,
                    std::unique_ptr<ResourceManagerClient> rm);
  ~ApplicationMaster();

  // Serves the status port, registers with the RM and starts the loops. Returns the port.
  int start();
  // Submits a job (throws JobError for a job that cannot run). Thread-safe.
  std::string submitJob(Job job) override;
  // Waits until every job is done (not in session mode) or stop is requested, then releases
  // every container and unregisters. Returns how it ended.
  AmOutcome run();
  // Ends the application (SIGTERM: KILLED; too many executor failures: FAILED).
  void requestStop(const std::string& finalStatus, const std::string& diagnostics);
  // The run's summary for `tide run --report`.
  std::string reportJson();
  int port() const { return port_; }
  // Jobs an earlier attempt had accepted, resubmitted from its journal by start(): main does
  // not submit --job again when there are any.
  int recoveredJobs() const { return recoveredJobs_; }
  std::string trackingUrl() const;
  // Changes the executor bounds of the running application (PUT /api/v1/allocation/bounds,
  // SIGHUP): see MasterControl::changeBounds. When applied, the policy clips its target at
  // once; the RM hears of it at the next tick.
  Status changeBounds(std::optional<int> minExecutors, std::optional<int> initialExecutors,
                      std::optional<int> maxExecutors, const std::string& source,
                      allocation::Bounds* applied = nullptr) override;
  // Notes in the decision log a bounds change that was refused (e.g. a SIGHUP with an invalid
  // file), so that "why did my change not apply?" is answered there too.
  void recordRejectedBoundsChange(const std::string& source, const std::string& error);

  // MasterControl: what the HTTP handlers read and do.
  const MasterInfo& info() const override { return info_; }
  TimeMs nowMs() const override { return clock_.nowMs(); }
  std::shared_ptr<const StatusSnapshot> status() override;
  std::optional<JobSummary> job(const std::string& jobId) override;
  std::vector<JobSummary> jobs() override;
  std::vector<CachedStageSummary> cachedStages() override;
  std::vector<DecisionRecord> decisions(size_t limit) override;
  const AllocationHistory& history() const override { return history_; }
  std::string metricsText() const override;
  Status unpersist(const std::string& stageId) override;
  Status registerExecutor(const rest::ExecutorRegistration& registration,
                          const std::string& remoteAddress,
                          rest::ExecutorRegistered* reply) override;
  Status syncExecutor(const std::string& executorId, const rest::ExecutorSync& sync,
                      rest::ExecutorSyncReply* reply) override;
  Status beginSync(const std::string& executorId, const rest::ExecutorSync& sync,
                   rest::ExecutorSyncReply* reply, int64_t* holdMs) override;
  Status resumeSync(const std::string& executorId, const HeldSync& held, bool timedOut,
                    rest::ExecutorSyncReply* reply, bool* answered) override;
  rest::CommitDecision decideCommit(const std::string& executorId,
                                    const rest::CommitRequest& request) override;
  Status executorLog(const std::string& executorId, const std::string& path,
                     std::optional<int64_t> tailBytes, std::string* content) override;

 private:
  // Writes reportJson() to config_.reportFile (run() does, before it unregisters).
  void writeReport();

  using StateLock = std::unique_lock<std::mutex>;

  // The one place mu_ is taken: runs `body` under it and returns what it returns. A body that
  // waits on a condition variable takes the lock as its argument (`[&](StateLock& lock)`) and
  // waits on that; the lock is held again whenever the wait returns.
  template <typename Body>
  auto withState(Body&& body) {
    StateLock lock = lockState();
    if constexpr (std::is_invocable_v<Body&, StateLock&>) {
      return body(lock);
    } else {
      return body();
    }
  }

  struct Executor {
    std::string id;
    std::string host;
    std::string containerId;
    int64_t pid = 0;
    int slots = 1;
    TimeMs registeredAt = 0;
    TimeMs lastSeen = 0;
    std::vector<int64_t> kills;
    std::vector<int64_t> takeBack;        // queued tasks to ask back at its next sync
    std::string node;                     // its node manager's node: the unit of locality
    std::string blockUrl;                 // where it serves its blocks ("" for none)
    std::vector<std::string> blockDrops;  // block prefixes to delete, sent at its next sync
    // Adopted from the previous AM attempt and not yet registered again with this one.
    bool adopted = false;
    // Chosen for removal with decommission.enabled: gets no tasks, hands its blocks to peers
    // (decommissioner_), then is released.
    bool decommissioning = false;
    TimeMs decommissionStartedAt = 0;
    int profileId = 0;  // the resource profile it was started for; runs only its stages' tasks
  };

  // mu_, taken: for withState, and for the heartbeat loop, whose body holds it in two pieces
  // around the call to the resource manager.
  StateLock lockState() { return StateLock(mu_); }

  // The AM's two ports: executors' syncs (bearer app secret) and the status API and pages.
  rest::HttpServerOptions executorServerOptions() const;
  rest::HttpServerOptions statusServerOptions() const;
  // The steps of run(): until the job ends (and am.keepAlive after it) or a stop, with the
  // outcome; the loops woken and joined; every executor let go in one last heartbeat; the
  // event log's last record.
  AmOutcome waitForTheEnd();
  void stopLoops();
  void releaseExecutors();
  void closeEventLog(const AmOutcome& outcome);

  // Loops.
  void allocationLoop();
  void heartbeatLoop();
  void launchLoop();
  // history.dir: every second, what the status API shows goes to the event log (not under mu_).
  void eventLogLoop();
  void writeEventLog(bool last = false);
  void openEventLog();
  // The methods below run under mu_ (called from inside withState).
  void applyTick(const allocation::TickResult& result, TimeMs now);
  // After a tick: the history point, the gauges, the allocator's waiting state, the status.
  void observeTick(TimeMs now, double tickSeconds);
  // Copies what the status endpoints show into statusSnapshot_. `wait`: even if a reader
  // holds it (else skipped then, for the next tick).
  void publishStatusSnapshot(TimeMs now, bool wait = true);
  void applyAllocatorActions(AllocatorActions& actions, TimeMs now);
  // `reason` and `detail` as RemovedExecutor's; `exit` as the policy counts it.
  void releaseExecutor(const std::string& executorId, const std::string& reason,
                       const std::string& detail, TimeMs now,
                       allocation::ExecutorExit exit = allocation::ExecutorExit::kOther);
  // Graceful decommissioning (am/decommission.cc), under mu_. The policy chose the executor:
  // it gets no more tasks and its blocks go to peers.
  void startDecommission(const std::string& executorId, TimeMs now);
  // Releases the executors whose decommissioning is over and that run no task (every tick, and
  // after migrations and task ends).
  void releaseDecommissioned(TimeMs now);
  // The executor was asked to leave (SIGPWR): with decommission.enabled it is decommissioned
  // as if the policy had chosen it, running tasks and all; else the request is ignored.
  void decommissionAsked(const std::string& executorId, TimeMs now);
  // A decommissioning executor handed back queued tasks unstarted: the decision log says so.
  void queuedTasksHandedBack(const std::string& executorId, size_t count);
  // A sync's report of the queued tasks the executor started and of those it gives back.
  void queuedTasksReported(const std::string& executorId, const std::vector<int64_t>& started,
                           const std::vector<int64_t>& returned);
  // A sync's task updates, each commit journaled before anything depends on it; true when any
  // task committed.
  bool taskUpdatesReported(const std::string& executorId,
                           const std::vector<rest::TaskStatusUpdate>& updates);
  // A peer's reports of the migrations it was given.
  void migrationsReported(const std::string& peer,
                          const std::vector<rest::BlockMigrationResult>& results, TimeMs now);
  // What `peer` is to take from decommissioning executors, for its sync reply.
  std::vector<rest::BlockMigration> migrationsFor(const std::string& peer);
  // Executors that may take blocks: registered, neither decommissioning nor adopted-unseen.
  std::vector<std::string> migrationPeers() const;
  // Where a reader fetches the blocks `holder` holds: its block server, "file://<dir>" for the
  // fallback storage (kFallbackStorageId), "" when it is gone.
  std::string blockUrlOf(const std::string& holder) const;
  // storage.decommission.fallbackStorage.path/<application id>, as Spark's FallbackStorage
  // lays it out; "" without a fallback storage.
  std::string fallbackStorageDir() const;
  // storage.decommission.fallbackStorage.cleanUp: the application's fallback directory goes
  // when the application has ended for good. Not under mu_.
  void cleanUpFallbackStorage();
  void forgetExecutor(const std::string& executorId, const std::string& reason,
                      const std::string& detail, TimeMs now);
  void detectSilentExecutors(TimeMs now);
  // excludeOnFailure.killExcludedExecutors: executors the scheduler excluded are released.
  void releaseExcludedExecutors(TimeMs now);
  void routeKills();
  // Under mu_: held syncs look for work again (new tasks, kills, releases, stopping): those
  // waiting here on workAvailable_ and those the executor port holds without a thread.
  void wakeExecutors();
  // Outside mu_: fsyncs the journal up to `position` for a sync's reply.
  Status makeDurable(RecoveryJournal& journal, uint64_t position);
  // Fills `reply` with what the executor should do now: true when that is something (tasks,
  // kills, blocks to drop, or shutting down), false when it may wait for work.
  // `mayQueue`: it may be handed tasks beyond its free slots (not when it just handed some
  // back: they would come straight back to it).
  bool takeWork(const std::string& executorId, int freeSlots, bool mayQueue,
                rest::ExecutorSyncReply& reply);
  // Recovery (am_recovery.cc). Opens the journal of this application (before registering);
  // throws JournalError for one that cannot be read.
  void openJournal();
  // Under mu_: adopts the previous attempt's executors and replays the journal into the
  // scheduler, the allocator and the policy. Throws JournalError when it does not fit.
  void recover(const std::vector<rest::Container>& previousContainers);
  // Under mu_, for recover(): the executors of the journal whose containers still run are
  // adopted, the other containers released; returns the adopted executors' ids.
  std::set<std::string> adoptExecutors(const std::vector<rest::Container>& previousContainers);
  // Under mu_, for recover(): what the previous attempts did, in order, into the scheduler and
  // the policy; returns the executors that held committed output.
  std::set<std::string> replayJournal();
  // Under mu_: appends a record (sync: and fsyncs). A journal that cannot be written fails
  // the application (its next attempt could not recover what this one did).
  void journal(const JournalRecord& record, bool sync = false);
  void journalSync();
  void journalFailed(const std::string& error);
  // The AM's executor port as executors reach it: https:// when the AM serves TLS. The same in
  // every executor's environment and in the address file.
  std::string executorEndpoint() const;
  // Where executors find the address of the AM's executor port (its current attempt).
  std::string amAddressFile() const;
  void writeAmAddressFile();
  // Under mu_: the registration of an executor of the previous attempt, adopted by this one;
  // of a new executor, added to the AM, the policy, the event log and the journal; and what
  // either is told in reply.
  void readoptExecutor(Executor& executor, const rest::ExecutorRegistration& registration,
                       const std::string& remoteAddress);
  Executor& addExecutor(const rest::ExecutorRegistration& registration,
                        const std::string& remoteAddress);
  void answerRegistration(const Executor& executor, rest::ExecutorRegistered* reply) const;
  // Where a registering executor serves its blocks ("" for none): the host it registers (its
  // node's configured host), else where it reached us from; https:// when the AM serves TLS,
  // since every server of a TLS cluster speaks HTTPS only.
  std::string blockUrlOf(const rest::ExecutorRegistration& registration,
                         const std::string& remoteAddress) const;
  // Under mu_: an adopted executor registers again: its running tasks are matched.
  void resumeExecutor(Executor& executor, const rest::ExecutorRegistration& registration);
  // `fromTarget`: what the target was before this decision (-1: unchanged), as DecisionLog.
  void recordDecision(const std::string& source, const std::string& action, int target,
                      const std::string& why, const std::string& key, int fromTarget = -1);
  // `cores`: executor.cores of the executor (its resource profile's); 0: the default's.
  ExecutorTemplate executorTemplate(int cores = 0) const;
  // Refuses (JobError naming the stage) a job whose stage asks for an executor shape no node
  // can hold, or that needs a target per profile the policy does not keep.
  void checkStageShapes(const Job& job) const;
  // The policy's targets per profile into the allocator, each profile's shape first.
  void applyTargets(const std::map<int, int>& targets);
  // Task slots of an executor of the profile: its cores / task.cpus (at least 1).
  int slotsOf(int profileId) const;
  ExecutorLaunch executorLaunchFor(const std::string& executorId, const std::string& containerId);

  // The task scheduler's subscribers (besides the allocation policy's AllocationListener).
  class JobEndListener;
  class TaskMetricsListener;
  class EventLogListener;

  // Set at construction, then only read: no lock.
  AmConfig config_;
  AmIdentity identity_;
  AmMetrics metrics_;  // before rm_, which reports its calls into it; its own synchronisation
  std::unique_ptr<ResourceManagerClient> rm_;  // called outside mu_, from one thread at a time
  SteadyClock clock_;
  TimeMs startedAt_;
  MasterInfo info_;
  Logger log_{"am"};

  std::mutex mu_;
  // Each of these waits under mu_ (withState's lock) and is notified with or after the change
  // it waits for, made under mu_.
  std::condition_variable workAvailable_;  // new tasks or kills: wakes executors' long polls
  uint64_t wakeGeneration_ = 0;            // guarded by mu_: wakeExecutors() calls so far
  std::condition_variable heartbeatWake_;  // heartbeatRequested_ or stopping_: heartbeat now
  std::condition_variable stateChanged_;   // jobs ended or stop requested
  std::condition_variable launchWake_;     // launchQueue_ has work, or stopping_

  // The policy (dynamicAllocation.policy), the scheduler and the allocator. Guarded by mu_.
  std::unique_ptr<allocation::AllocationPolicy> allocationPolicy_;
  allocation::AllocationPolicy& allocation_;              // *allocationPolicy_
  AllocationListener allocationListener_;                 // subscribed to scheduler_
  std::unique_ptr<JobEndListener> jobEndListener_;        // subscribed to scheduler_
  std::unique_ptr<TaskMetricsListener> metricsListener_;  // subscribed to scheduler_
  std::unique_ptr<EventLogListener> eventLogListener_;    // subscribed to scheduler_
  std::unique_ptr<TaskScheduler> scheduler_;
  ContainerAllocator allocator_;
  Decommissioner decommissioner_;
  // Decommissionings that are over while their executor still runs tasks (one it started
  // before it heard it was leaving): released once they end, as Spark's executor exits only
  // with no task running, or at executor.decommission.forceKillTimeout.
  std::vector<FinishedDecommission> awaitingTasks_;
  std::set<std::string> decommissionIgnored_;  // asked with decommission.enabled=false: warned

  DecisionLog decisions_;  // its own mutex (taken inside mu_ too, never around it)
  AllocationHistory history_{AllocationHistory::kDefaultCapacity,
                             HistoryMemory::kWhole};  // its own mutex: read without mu_
  StatusSnapshotBox statusSnapshot_;                  // its own synchronisation: read without mu_

  // The AM's bookkeeping. Guarded by mu_.
  bool jobEndedSincePublish_ = false;  // publish at once: "job done" and the status agree
  TimeMs waitingSince_ = -1;           // outstanding requests reported as waiting since then
  std::map<std::string, Executor> executors_;  // registered and not released
  RemovedExecutors removedExecutors_;          // those that were, and why they went
  ClusterCapacity clusterCapacity_;            // the last heartbeat's
  rest::Resource maximumCapability_;           // the largest node's, from registration
  std::set<std::string> releasedExecutors_;    // told to shut down at their next sync
  std::set<std::string> startingExecutors_;    // started by the backend, not yet granted
  std::deque<std::pair<rest::Container, std::string>> launchQueue_;
  // Every executor's container as launched (or adopted), kept after the executor goes: where
  // its logs are (executorLog). Its own mutex (taken inside mu_ too, never around it), so that
  // the log handlers never wait for the AM's lock.
  std::mutex executorContainersMutex_;
  std::map<std::string, rest::Container> executorContainers_;
  bool heartbeatRequested_ = false;
  std::optional<AmOutcome> stopOutcome_;
  bool stopping_ = false;
  int jobsSubmitted_ = 0;
  std::vector<std::string> failedJobMessages_;
  int peakExecutors_ = 0;
  allocation::RemovalCounts reportedRemovals_;  // the policy's counters as /metrics has them
  DurationMs executorMsClosed_ = 0;             // lifetimes of executors already gone

  // The HTTP side: set up by start(), then only read. The handlers outlive the servers that
  // call them (declared before them, stopped in the destructor).
  std::unique_ptr<StatusHandlers> handlers_;
  std::unique_ptr<rest::HttpServer> server_;  // the status port (ui.port): people and tools
  int port_ = 0;
  // Executors' register and sync have a server of their own: a crowd of status readers (a
  // dashboard, a load test) can then never hold the worker threads executors need.
  std::unique_ptr<rest::HttpServer> executorServer_;
  int executorPort_ = 0;
  std::vector<std::thread> threads_;  // the loops; started by start(), joined by run()
  // history.dir's event log: set by start(), then only read (it has its own lock); null for none.
  std::unique_ptr<EventLog> eventLog_;
  bool eventLogWarned_ = false;  // by the event log loop, then by run() after joining it

  // Recovery. Set by start(), then only read, except journal_ (guarded by mu_).
  std::string stagingDir_;  // <am.stagingDir>/<application id>; "" without a journal
  std::shared_ptr<RecoveryJournal> journal_;  // shared: syncExecutor fsyncs it unlocked
  uint64_t journaledCommits_ = 0;             // journal position after the last commit record (mu_)
  int attemptNumber_ = 1;
  int recoveredFrom_ = 0;  // the attempt this one took over from (0: none)
  int recoveredJobs_ = 0;
};

}  // namespace tide::am
