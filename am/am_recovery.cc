// Work-preserving restarts of the AM (issue 12): the recovery journal of the application, the
// adoption of the previous attempt's executors, and the replay of what that attempt did. The
// journal's format and its pure encode/replay are in am/recovery/recovery_journal.h; this file
// only connects it to the AM's state.

#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "am/application_master.h"
#include "am/recovery/staging_directory.h"
#include "common/atomic_file.h"

namespace tide::am {
namespace {

// "appattempt_1700000000000_0001_000002" -> 2; "app-attempt-1" -> 1.
int attemptNumberOf(const std::string& attemptId) {
  size_t end = attemptId.size();
  size_t start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(attemptId[start - 1]))) --start;
  if (start == end) return 1;
  try {
    return std::max(1, std::stoi(attemptId.substr(start, std::min<size_t>(end - start, 9))));
  } catch (const std::exception&) {
    return 1;
  }
}

}  // namespace

std::string ApplicationMaster::amAddressFile() const {
  return stagingDir_.empty() ? "" : stagingDir_ + "/am-address";
}

void ApplicationMaster::openJournal() {
  attemptNumber_ = attemptNumberOf(identity_.attemptId);
  if (config_.stagingDir.empty()) return;
  // Another cluster's application may have this id: the directory is the one this application
  // owns (am/recovery/staging_directory.h), never one it would share.
  const StagingClaim claim =
      claimStagingDirectory(config_.stagingDir, identity_.applicationId, identity_.appSecret);
  if (!claim.directory) {
    log_.warn() << "no staging directory: " << claim.note
                << "; this attempt keeps no recovery journal (a next one starts over)";
    return;
  }
  if (!claim.note.empty()) log_.warn() << claim.note << "; staging in " << *claim.directory;
  stagingDir_ = *claim.directory;
  // Compactions end inside append, so under mu_, where log_ may be used.
  journal_ = std::make_shared<RecoveryJournal>(  // throws JournalError
      stagingDir_, config_.journalCompactionBytes, [this](const JournalCompaction& done) {
        if (done.ok) {
          log_.info() << "compacted the recovery journal from " << done.bytesBefore << " to "
                      << done.bytesAfter << " bytes (" << done.recordsBefore << " records, "
                      << done.commitsFolded << " commits folded, into " << done.recordsAfter << ")";
        } else {
          log_.warn() << "could not compact the recovery journal " << journal_->path() << ": "
                      << done.error << "; it goes on growing until the next try";
        }
      });
  if (journal_->replayedTornTail()) {
    log_.warn() << "the recovery journal " << journal_->path()
                << " ended in a torn record (the previous attempt died writing it); dropped it";
  }
  const JournalSummary& summary = journal_->replayedSummary();
  if (journal_->replayedRecords() > 0) {
    // Journals are per application: one from an attempt without an attempt record is of an
    // attempt that died before it registered.
    recoveredFrom_ = std::max(summary.lastAttempt, 1);
    if (recoveredFrom_ >= attemptNumber_) recoveredFrom_ = attemptNumber_ - 1;
    info_.recoveredFromAttempt = recoveredFrom_;
  }
}

void ApplicationMaster::journal(const JournalRecord& record, bool sync) {
  if (!journal_) return;
  try {
    journal_->append(record);
    if (sync) journal_->sync();
  } catch (const JournalError& e) {
    journalFailed(e.what());
  }
}

void ApplicationMaster::journalSync() {
  if (!journal_) return;
  try {
    journal_->sync();
  } catch (const JournalError& e) {
    journalFailed(e.what());
  }
}

void ApplicationMaster::journalFailed(const std::string& error) {
  log_.error() << error;
  journal_.reset();
  if (!stopOutcome_) {
    stopOutcome_ = AmOutcome{"FAILED", "cannot write the recovery journal: " + error};
    stateChanged_.notify_all();
  }
}

std::string ApplicationMaster::executorEndpoint() const {
  return config_.tls.urlOf(config_.host + ":" + std::to_string(executorPort_));
}

void ApplicationMaster::writeAmAddressFile() {
  if (stagingDir_.empty()) return;
  const Status written = writeFileAtomically(amAddressFile(), executorEndpoint() + "\n");
  if (!written.ok()) throw JournalError(written.message());
}

std::set<std::string> ApplicationMaster::adoptExecutors(
    const std::vector<rest::Container>& previousContainers) {
  const TimeMs now = clock_.nowMs();
  // The executors the previous attempt started, by container: the ones still running are
  // adopted (they find this attempt through the address file and register again).
  std::map<std::string, JournalRecord> executorByContainer;
  journal_->forEachReplayed([&](const JournalRecord& r) {
    if (r.kind == JournalRecord::Kind::kExecutor) {
      JournalRecord& known = executorByContainer[r.containerId];
      const std::string url = r.url.empty() ? known.url : r.url;
      const std::string node = r.node.empty() ? known.node : r.node;
      const JournalRecord profile = r.profileId != 0 ? r : known;
      known = r;
      known.url = url;
      known.node = node;
      known.withProfile(profile.profileId, profile.profileCores, profile.profileMemoryMb);
    }
  });
  std::set<std::string> adopted;
  for (const rest::Container& container : previousContainers) {
    auto known = executorByContainer.find(container.id);
    if (known == executorByContainer.end()) {
      log_.warn() << "container " << container.id
                  << " of the previous attempt runs no executor this AM knows of; releasing it";
      allocator_.releaseContainer(container.id);
      continue;
    }
    const std::string& id = known->second.executorId;
    // It keeps the resource profile it was started for: its stages' tasks are its to run.
    const int profileId = known->second.profileId;
    if (profileId != allocation::kDefaultProfileId) {
      scheduler_->restoreProfile(
          {profileId, known->second.profileCores, known->second.profileMemoryMb});
      allocator_.addProfile(profileId, {known->second.profileMemoryMb, known->second.profileCores});
    }
    allocator_.adopt(container, id, profileId);
    {
      std::lock_guard<std::mutex> containersLock(executorContainersMutex_);
      executorContainers_[id] = container;
    }
    Executor& executor = executors_[id];
    executor.id = id;
    executor.containerId = container.id;
    executor.host = container.nodeHttpAddress.substr(0, container.nodeHttpAddress.rfind(':'));
    executor.node = known->second.node.empty() ? container.nodeId : known->second.node;
    executor.blockUrl = known->second.url;
    executor.profileId = profileId;
    executor.slots = slotsOf(profileId);
    executor.registeredAt = now;
    executor.lastSeen = now;  // it has network.timeout to register again
    executor.adopted = true;
    if (const allocation::ResourceProfile* profile = scheduler_->profiles().find(profileId)) {
      allocation_.addResourceProfile(*profile);
    }
    allocation_.onExecutorAdded(id, profileId);
    adopted.insert(id);
  }
  peakExecutors_ = std::max(peakExecutors_, static_cast<int>(executors_.size()));
  return adopted;
}

std::set<std::string> ApplicationMaster::replayJournal() {
  std::set<std::string> holders;
  journal_->forEachReplayed([&](const JournalRecord& r) {
    std::string problem;
    switch (r.kind) {
      case JournalRecord::Kind::kJob: {
        Job job;
        try {
          job = parseJob(r.jobJson);
        } catch (const JobError& e) {
          throw JournalError(journal_->path() + ": job " + r.jobId + ": " + e.what());
        }
        const std::string id = scheduler_->submitJob(std::move(job));
        if (id != r.jobId) {
          throw JournalError(journal_->path() + ": job " + r.jobId + " came back as " + id);
        }
        ++jobsSubmitted_;
        ++recoveredJobs_;
        break;
      }
      case JournalRecord::Kind::kLaunch:
        problem = scheduler_->restoreLaunchedAttempt(r.jobId, r.stageId, r.index, r.attempt);
        break;
      case JournalRecord::Kind::kCommit:
        problem = scheduler_->restoreCommitted(r.jobId, r.stageId, r.index, r.attempt, r.executorId,
                                               r.node, r.durationMs, r.blocks);
        holders.insert(r.executorId);
        break;
      case JournalRecord::Kind::kCommits:
        forEachFoldedCommit(r, [&](const JournalRecord& c) {
          if (!problem.empty()) return;
          problem = scheduler_->restoreCommitted(c.jobId, c.stageId, c.index, 0, c.executorId,
                                                 c.node, c.durationMs, {});
        });
        for (const CommitShare& share : r.shares) holders.insert(share.executorId);
        break;
      case JournalRecord::Kind::kUnpersist:
        (void)scheduler_->unpersist(r.stageId);  // refused: it is gone already
        break;
      case JournalRecord::Kind::kMigrate:
        // A decommissioned executor's output, taken by a peer: looked for there.
        // One in the fallback storage outlives every executor and every attempt of the AM.
        if (scheduler_->outputMigrated(r.stageId, r.index, r.executorId, r.toExecutor, r.node) &&
            r.toExecutor != kFallbackStorageId) {
          holders.insert(r.toExecutor);
        }
        break;
      case JournalRecord::Kind::kBounds: {
        std::string warning;
        const Status set =
            allocation_.setBounds({r.minExecutors, r.initialExecutors, r.maxExecutors}, &warning);
        if (!set.ok()) log_.warn() << "recovered bounds not applied: " << set.message();
        break;
      }
      case JournalRecord::Kind::kAttempt:
      case JournalRecord::Kind::kExecutor:
      case JournalRecord::Kind::kStageDone:
        break;
    }
    if (!problem.empty()) throw JournalError(journal_->path() + ": " + problem);
  });
  return holders;
}

void ApplicationMaster::recover(const std::vector<rest::Container>& previousContainers) {
  if (!journal_) {
    for (const auto& container : previousContainers) allocator_.releaseContainer(container.id);
    return;
  }
  // The records are read again from the file for each pass, one at a time: a journal of a
  // huge stage holds two per task.
  const JournalSummary& summary = journal_->replayedSummary();
  struct DoneReplaying {  // however recovery ends: compaction may rewrite the file from now on
    RecoveryJournal& journal;
    ~DoneReplaying() { journal.doneReplaying(); }
  } doneReplaying{*journal_};

  allocator_.continueExecutorNumbersAfter(summary.highestExecutorNumber);
  const std::set<std::string> adopted = adoptExecutors(previousContainers);
  const std::set<std::string> holders = replayJournal();
  // Tasks that were running on executors that survived go on running there.
  int resumed = 0;
  for (const JournalRecord& launch : summary.unfinishedLaunches) {
    if (adopted.count(launch.executorId) == 0) continue;
    const std::string why = scheduler_->restoreRunning(
        launch.taskId, launch.jobId, launch.stageId, launch.index, launch.attempt,
        launch.executorId, executors_[launch.executorId].node);
    if (why.empty()) {
      ++resumed;
    } else {
      TIDE_LOG(log_, debug) << "not resuming: " << why;
    }
  }
  scheduler_->continueTaskIdsAfter(summary.highestTaskId);
  // Outputs on executors that did not survive are lost: what still needs them runs again.
  for (const std::string& holder : holders) {
    if (adopted.count(holder) == 0) {
      scheduler_->executorLost(holder, "it did not survive the restart of the AM");
    }
  }
  if (journal_->replayedRecords() > 0) {
    const std::string why = "recovered from attempt " + std::to_string(recoveredFrom_) + ": " +
                            std::to_string(recoveredJobs_) +
                            (recoveredJobs_ == 1 ? " job, " : " jobs, ") +
                            std::to_string(summary.commits) + " committed tasks kept, " +
                            std::to_string(adopted.size()) + " executors adopted, " +
                            std::to_string(resumed) + " running tasks resumed";
    log_.info() << why;
    recordDecision("recovery", "recovered", allocator_.target(), why, "");
  }
  journal(JournalRecord::attemptStarted(attemptNumber_, identity_.attemptId), /*sync=*/true);
  wakeExecutors();
}

void ApplicationMaster::resumeExecutor(Executor& executor,
                                       const rest::ExecutorRegistration& registration) {
  executor.adopted = false;
  const std::set<int64_t> reported(registration.running.begin(), registration.running.end());
  // Launched by the previous attempt but not running there: the launch never reached it.
  for (int64_t taskId : scheduler_->runningTasksOn(executor.id)) {
    if (reported.count(taskId) != 0) continue;
    rest::TaskStatusUpdate lost;
    lost.taskId = taskId;
    lost.state = rest::TaskState::kKilled;
    lost.exitCode = -1;
    lost.reason = "not running on " + executor.id + " after the AM restarted";
    scheduler_->statusUpdate(lost, executor.id);
  }
  // Running there but unknown here (launched after the journal's last word, or of an ended
  // job): stopped.
  const std::vector<int64_t> known = scheduler_->runningTasksOn(executor.id);
  const std::set<int64_t> knownSet(known.begin(), known.end());
  for (int64_t taskId : registration.running) {
    if (knownSet.count(taskId) == 0) executor.kills.push_back(taskId);
  }
  // The blocks it holds: an output journaled on it that is not all there (its files removed
  // while no AM ran) is made again now, before a reader fails to fetch it.
  std::string blocks;
  if (registration.blocksReported) {
    const std::set<std::string> held(registration.blocks.begin(), registration.blocks.end());
    const int64_t lost = scheduler_->keepOnlyHeldOutputs(
        executor.id, held, executor.id + " no longer holds them after the AM restarted");
    blocks = " and " + std::to_string(held.size()) + " blocks" +
             (lost > 0 ? " (" + std::to_string(lost) + " recorded task outputs missing: made again)"
                       : "");
    if (lost > 0) {
      recordDecision("recovery", "outputs_lost", allocator_.target(),
                     executor.id + " registered again without the blocks of " +
                         std::to_string(lost) + " committed task outputs; they are made again",
                     "outputs_lost/" + executor.id);  // one record per executor, never a run
    }
  }
  log_.info() << "executor " << executor.id << " (" << executor.containerId
              << ") of the previous attempt registered again with " << known.size()
              << " running tasks" << blocks;
}

}  // namespace tide::am
