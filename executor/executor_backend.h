#pragma once

// The executor's side of the AM conversation (rest/messages/executor.h): register, then sync
// in a loop, feeding the AM's launches and kills to the TaskRunner and its updates back.
//
// Sync timing, which is what makes the executor fast:
//   - updates pending (a task ended, so a slot is free): sync at once, not holding them back;
//   - nothing running, being started or queued, and nothing to say: a long poll (maxWaitMs =
//     the heartbeat interval), so new work reaches the executor as soon as the AM has it;
//   - tasks running, none ended: wait until one ends or the heartbeat interval has passed.
// With builtin noop tasks one round trip reports a batch and fetches the next.
//
// Pipelining: the AM may hand out tasks ahead of a free slot (TaskLaunch::queued). When a task
// ends, the next queued one starts before the sync that reports the end, so the slot is not
// idle for the round trip. A queued task goes back to the AM unstarted (ExecutorSync::returned)
// when the AM asks for it (another executor idles) or once it has waited queuedTaskWaitMs for a
// slot (it sits behind a long task); on registering with a new AM attempt every queued task is
// dropped (the new attempt runs them again, as launches that never reached this executor).
//
// When it leaves:
//   - the AM says shutdown                        -> exit status 0
//   - requestStop() (SIGTERM from the node manager) -> 0
//   - the AM answers 404 (it forgot this executor) -> 1
//   - the AM refuses the secret (401/403) or answers anything else unexpected -> 1
//   - the AM stays unreachable (transport errors, 502/503/504) for network.timeout -> 1;
//     shorter outages are retried with exponential backoff and jitter.
// While the AM is unreachable the executor looks at TIDE_AM_ADDRESS_FILE: when a new attempt of
// the AM has written another address there (the old attempt died), the executor registers
// again with it (`resumed`, with the tasks it runs), keeps its tasks and blocks, and goes on.
// Before returning it kills its running tasks' process groups.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/logging.h"
#include "executor/block_store.h"
#include "executor/executor_settings.h"
#include "executor/task_runner.h"
#include "rest/http_client.h"
#include "rest/messages/executor.h"

namespace tide::executor {

class ExecutorBackend {
 public:
  // `runner` (and `blocks`, when given) must outlive the backend. The AM's dropBlocks are
  // deleted from `blocks`.
  ExecutorBackend(ExecutorSettings settings, TaskRunner& runner, BlockStore* blocks = nullptr);
  ExecutorBackend(const ExecutorBackend&) = delete;
  ExecutorBackend& operator=(const ExecutorBackend&) = delete;

  // Registers and syncs until one of the reasons above; returns the exit status.
  int run();

  // Asks run() to leave: kills the running tasks right away and wakes every wait. A sync the
  // AM is holding is waited out (at most the heartbeat interval). Thread-safe.
  void requestStop(const std::string& why);
  // Graceful decommissioning asked from outside (SIGPWR, as Spark's executor takes it): every
  // sync from now on says so (ExecutorSync::decommissioning); the AM decides what follows.
  // Thread-safe.
  void requestDecommission() { decommissionRequested_ = true; }

  // Graceful decommissioning: how this executor takes a task output off a decommissioning
  // peer when the AM asks (BlockMigrator::migrate). Set before run(); without it a migration
  // is reported failed.
  using Migrate = std::function<rest::BlockMigrationResult(const rest::BlockMigration&)>;
  void setMigrate(Migrate migrate) { migrate_ = std::move(migrate); }

  // Why run() returned ("the AM released this executor", ...); empty while it runs.
  std::string exitReason() const;

  // The output commit protocol: asks the AM whether the task attempt (which exited 0) may
  // commit its output. "" when allowed, else why not; an AM that cannot be asked is a denial
  // (the attempt's output is then discarded and the task runs again). Thread-safe: it has its
  // own connection, since the sync's may be held by the AM.
  std::string askToCommit(int64_t taskId);

 private:
  // A POST to the AM, retried while the AM cannot be reached. nullopt: run() must leave
  // (unreachable for network.timeout, or stop requested); leave() has been called.
  std::optional<rest::HttpResponse> postToAm(const std::string& path, const std::string& body,
                                             int64_t maxWaitMs);
  bool registerWithAm(bool resumed = false);
  // The address in TIDE_AM_ADDRESS_FILE when it names another AM than the current one.
  std::optional<std::string> newAmAddress() const;
  // Talks to the AM at `address` from now on (both connections).
  void switchAm(const std::string& address);
  // The AM address now, and how many times it changed.
  std::pair<std::string, int> currentAm() const;
  // Records why the executor leaves; the first reason wins.
  void leave(int exitStatus, const std::string& why, bool asError);
  bool leaving() const;
  // Answers that are neither a success nor an outage: 401/403, 404 and the rest.
  void leaveOnRefusal(const std::string& call, const rest::HttpResponse& response);

  // run()'s rounds until it leaves: wait for work or the heartbeat, gather what there is to
  // report into one sync, send it, act on the reply.
  void syncUntilLeaving();
  void waitForWork(std::chrono::steady_clock::time_point lastSent);
  // Fills `sync` with what happened since the last one; true when it has nothing to report
  // (and may then be held by the AM).
  bool gatherSync(RunnerReport& report, rest::ExecutorSync& sync);
  // The sync's JSON; notes its tasks as in flight and empties its updates and migrations.
  std::string encodeSync(rest::ExecutorSync& sync);
  // nullopt: run() must leave (unreachable, refused, or an unreadable reply).
  std::optional<rest::ExecutorSyncReply> exchangeSync(const std::string& body, int64_t maxWaitMs);
  // Drops, kills, takes back, launches and migrates as the reply says; false when the AM
  // released this executor.
  bool applyReply(const rest::ExecutorSyncReply& reply);
  bool syncAgainAtOnce(bool idle, const rest::ExecutorSyncReply& reply,
                       std::chrono::steady_clock::time_point lastSent) const;
  // While two rounds of tasks per slot are queued, the slots stay busy without the AM: task
  // updates then wait up to updateBatchWindow() after the last sync to go in one sync, sparing
  // the AM and this executor a round trip (and the AM a journal fsync) per short task.
  bool batchesUpdates() const;
  size_t batchQueueFloor() const;
  std::chrono::milliseconds updateBatchWindow() const;
  // Kills the tasks still running and waits (bounded) for them to exit.
  void stopTasks();

  ExecutorSettings settings_;
  TaskRunner& runner_;
  BlockStore* blocks_;
  Migrate migrate_;
  // Migrations done since the last sync, reported in the next one. The run() thread's.
  std::atomic<bool> decommissionRequested_{false};
  std::vector<rest::BlockMigrationResult> migrated_;
  // Queued tasks taken back unstarted, returned in the next sync. The run() thread's.
  std::vector<int64_t> handedBack_;
  Logger log_{"executor"};                    // before client_, whose options log through it
  std::unique_ptr<rest::HttpClient> client_;  // the run() thread's
  std::mutex commitMutex_;
  std::unique_ptr<rest::HttpClient> commitClient_;  // guarded by commitMutex_
  int commitClientGeneration_ = 0;                  // guarded by commitMutex_
  std::string commitAddress_;                       // guarded by commitMutex_: its AM
  // Task ids in the sync being sent (its updates and running tasks): what a re-registration
  // with a new AM attempt reports. The run() thread's.
  std::vector<int64_t> inFlight_;
  bool resuming_ = false;  // registering again from inside postToAm; the run() thread's
  std::chrono::milliseconds heartbeatInterval_{1000};
  // How long a queued task may wait for a slot before it is handed back (0: no limit).
  int64_t queuedTaskWaitMs_ = 0;
  std::string syncPath_;
  std::mt19937_64 jitter_;  // spreads the retries of executors that lost the AM together

  mutable std::mutex mutex_;
  std::string amAddress_;  // guarded by mutex_
  int amGeneration_ = 0;   // guarded by mutex_: switches so far
  std::condition_variable stopRequested_;
  bool leaving_ = false;
  int exitStatus_ = 0;
  std::string exitReason_;
};

}  // namespace tide::executor
