// Graceful decommissioning from the AM's side (decommission.enabled; the bookkeeping is
// am/scheduler/decommissioner.h): the policy chose an idle executor; it stops taking tasks, its
// task outputs go to peers over their syncs, the scheduler's block registry moves each output
// a peer took, and the executor is released once nothing is left to move, or
// executor.decommission.forceKillTimeout has passed. Every step is in the decision log.

#include "am/application_master.h"

namespace tide::am {

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
  const std::string why =
      decommissioner_.start(executorId, scheduler_->outputsToMigrate(executorId), migrationPeers());
  log_.info() << why;
  recordDecision("containers", "migrate", allocator_.target(), why, "");
  // Peers hear of their migrations at their next sync: wake the ones waiting for work.
  workAvailable_.notify_all();
  releaseDecommissioned(now);
}

std::vector<rest::BlockMigration> ApplicationMaster::migrationsFor(const std::string& peer) {
  std::vector<rest::BlockMigration> migrations;
  if (!decommissioner_.hasWorkFor(peer)) return migrations;
  for (MigrationAssignment& assignment : decommissioner_.takeFor(peer)) {
    rest::BlockMigration migration;
    migration.id = assignment.id;
    migration.fromExecutor = assignment.fromExecutor;
    auto from = executors_.find(assignment.fromExecutor);
    migration.url = from == executors_.end() ? "" : from->second.blockUrl;
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
      log_.warn() << "migration " << result.id << " to " << peer << " failed: " << result.reason;
    }
    if (!done) continue;
    // The registry moves it only if it is still the output on the leaving executor. Journaled
    // after: a record lost in a crash only means the output is made again after the restart.
    if (scheduler_->outputMigrated(done->output.stageId, done->output.index, done->fromExecutor,
                                   peer, node)) {
      journal(JournalRecord::outputMigrated(done->output.stageId, done->output.index,
                                            done->fromExecutor, peer, node));
    }
  }
  releaseDecommissioned(now);
}

void ApplicationMaster::releaseDecommissioned(TimeMs now) {
  for (const FinishedDecommission& done : decommissioner_.takeFinished()) {
    log_.info() << done.why;
    recordDecision("containers", "decommissioned", allocator_.target(), done.why, "");
    if (executors_.count(done.executorId) == 0) continue;  // lost meanwhile: already gone
    releaseExecutor(done.executorId, done.finished ? "decommissioned" : "decommission_unfinished",
                    done.why, now,
                    done.finished ? allocation::ExecutorExit::kDecommissionFinished
                                  : allocation::ExecutorExit::kOther);
  }
}

}  // namespace tide::am
