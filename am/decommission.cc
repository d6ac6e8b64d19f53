// Graceful decommissioning from the AM's side (decommission.enabled; the bookkeeping is
// am/scheduler/decommissioner.h): the policy chose an idle executor; it stops taking tasks, its
// task outputs go to peers over their syncs, the scheduler's block registry moves each output
// a peer took, and the executor is released once nothing is left to move, or
// executor.decommission.forceKillTimeout has passed. Shuffle output no peer takes goes to the
// fallback storage (storage.decommission.fallbackStorage.path), copied there by the leaving
// executor itself. Every step is in the decision log.

#include <filesystem>
#include <iterator>
#include <system_error>

#include "am/application_master.h"

namespace tide::am {

std::string ApplicationMaster::fallbackStorageDir() const {
  const std::string& path = decommissioner_.config().fallbackPath;
  if (path.empty()) return "";
  return (path == "/" ? "" : path) + "/" + identity_.applicationId;
}

std::string ApplicationMaster::blockUrlOf(const std::string& holder) const {
  if (holder == kFallbackStorageId) {
    const std::string dir = fallbackStorageDir();
    return dir.empty() ? "" : "file://" + dir;
  }
  auto it = executors_.find(holder);
  return it == executors_.end() ? "" : it->second.blockUrl;
}

void ApplicationMaster::cleanUpFallbackStorage() {
  const std::string dir = fallbackStorageDir();
  if (dir.empty() || !decommissioner_.config().fallbackCleanUp) return;
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  if (error) {
    log_.warn() << "could not delete the fallback storage " << dir << ": " << error.message();
  } else {
    log_.info() << "deleted the fallback storage " << dir
                << " (storage.decommission.fallbackStorage.cleanUp)";
  }
}

std::vector<std::string> ApplicationMaster::migrationPeers() const {
  std::vector<std::string> peers;
  for (const auto& [id, executor] : executors_) {
    if (!executor.decommissioning && !executor.adopted && !executor.blockUrl.empty()) {
      peers.push_back(id);
    }
  }
  return peers;
}

void ApplicationMaster::startDecommission(const std::string& executorId, TimeMs now) {
  auto it = executors_.find(executorId);
  if (it == executors_.end() || it->second.decommissioning) return;
  it->second.decommissioning = true;
  it->second.decommissionStartedAt = now;
  const std::string why =
      decommissioner_.start(executorId, scheduler_->outputsToMigrate(executorId), migrationPeers());
  log_.info() << why;
  recordDecision("containers", "migrate", allocator_.target(), why, "");
  // Tasks handed to it ahead of a free slot (pipelining) and not started: asked back at its
  // next sync, to run elsewhere (Spark gives a decommissioning executor no new task).
  const std::vector<TaskToKill> queued = scheduler_->takeBackQueuedTasksOn(executorId);
  if (!queued.empty()) {
    for (const TaskToKill& task : queued) it->second.takeBack.push_back(task.taskId);
    const std::string asked = executorId + " decommissioning: asking back " +
                              std::to_string(queued.size()) +
                              (queued.size() == 1 ? " queued task" : " queued tasks") +
                              " not started, to run on other executors";
    log_.info() << asked;
    recordDecision("containers", "take_back", allocator_.target(), asked, "");
  }
  // Peers hear of their migrations at their next sync: wake the ones waiting for work.
  wakeExecutors();
  releaseDecommissioned(now);
}

std::vector<rest::BlockMigration> ApplicationMaster::migrationsFor(const std::string& peer) {
  std::vector<rest::BlockMigration> migrations;
  if (!decommissioner_.hasWorkFor(peer)) return migrations;
  for (MigrationAssignment& assignment : decommissioner_.takeFor(peer)) {
    rest::BlockMigration migration;
    migration.id = assignment.id;
    migration.fromExecutor = assignment.fromExecutor;
    if (assignment.toFallback) {
      migration.fallbackDir = fallbackStorageDir();  // the leaving executor copies its own
    } else {
      migration.url = blockUrlOf(assignment.fromExecutor);
    }
    migration.blocks = std::move(assignment.output.blocks);
    migrations.push_back(std::move(migration));
  }
  return migrations;
}

void ApplicationMaster::migrationsReported(const std::string& peer,
                                           const std::vector<rest::BlockMigrationResult>& results,
                                           TimeMs now) {
  auto it = executors_.find(peer);
  const std::string node = it == executors_.end() ? "" : it->second.node;
  for (const rest::BlockMigrationResult& result : results) {
    std::optional<MigrationAssignment> done =
        decommissioner_.onResult(peer, result, migrationPeers());
    if (!result.ok) {
      log_.warn() << "migration " << result.id << " by " << peer << " failed: " << result.reason;
    }
    if (!done) continue;
    // Copied to the fallback storage: on no executor from now on, and on no node.
    const std::string to = done->toFallback ? kFallbackStorageId : peer;
    const std::string toNode = done->toFallback ? "" : node;
    // The registry moves it only if it is still the output on the leaving executor. Journaled
    // after: a record lost in a crash only means the output is made again after the restart.
    if (scheduler_->outputMigrated(done->output.stageId, done->output.index, done->fromExecutor, to,
                                   toNode)) {
      journal(JournalRecord::outputMigrated(done->output.stageId, done->output.index,
                                            done->fromExecutor, to, toNode));
    }
  }
  releaseDecommissioned(now);
}

void ApplicationMaster::decommissionAsked(const std::string& executorId, TimeMs now) {
  auto it = executors_.find(executorId);
  if (it == executors_.end() || it->second.decommissioning) return;
  if (!config_.allocation.decommissionEnabled) {
    if (decommissionIgnored_.insert(executorId).second) {
      log_.warn() << executorId
                  << " asks to be decommissioned; ignored (decommission.enabled=false)";
    }
    return;
  }
  const std::string why = "decommissioning " + executorId + ": asked to leave (SIGPWR)";
  log_.info() << why;
  recordDecision("containers", "decommission", allocator_.target(), why, "");
  allocation_.onExecutorDecommissioning(executorId);
  startDecommission(executorId, now);
}

void ApplicationMaster::queuedTasksHandedBack(const std::string& executorId, size_t count) {
  const std::string why = executorId + " handed back " + std::to_string(count) +
                          (count == 1 ? " queued task" : " queued tasks") +
                          " unstarted (decommissioning): pending again for other executors";
  log_.info() << why;
  recordDecision("containers", "handed_back", allocator_.target(), why, "");
}

void ApplicationMaster::releaseDecommissioned(TimeMs now) {
  std::vector<FinishedDecommission> over = decommissioner_.takeFinished();
  for (const FinishedDecommission& done : over) {
    log_.info() << done.why;
    recordDecision("containers", "decommissioned", allocator_.target(), done.why, "");
  }
  over.insert(over.end(), std::make_move_iterator(awaitingTasks_.begin()),
              std::make_move_iterator(awaitingTasks_.end()));
  awaitingTasks_.clear();
  for (FinishedDecommission& done : over) {
    auto it = executors_.find(done.executorId);
    if (it == executors_.end()) continue;  // lost meanwhile: already gone
    const bool forced =
        now - it->second.decommissionStartedAt >= decommissioner_.config().forceKillTimeout;
    if (!scheduler_->runningTasksOn(done.executorId).empty()) {
      if (!forced) {
        awaitingTasks_.push_back(std::move(done));  // its tasks end first
        continue;
      }
      // Still running at forceKillTimeout: those tasks run again elsewhere, not counted.
      scheduler_->executorLost(done.executorId,
                               "decommissioned with tasks still running after " +
                                   formatDuration(decommissioner_.config().forceKillTimeout) +
                                   " (executor.decommission.forceKillTimeout)");
    }
    releaseExecutor(done.executorId, done.finished ? "decommissioned" : "decommission_unfinished",
                    done.why, now,
                    done.finished ? allocation::ExecutorExit::kDecommissionFinished
                                  : allocation::ExecutorExit::kOther);
  }
}

}  // namespace tide::am
