// Watching and steering allocation from the loop's side: after every tick the AM records a
// history point, refreshes the Prometheus gauges and says when its container requests have
// been waiting too long; and the bounds can be changed while it runs (REST or SIGHUP).

#include <algorithm>

#include "am/application_master.h"
#include "common/config.h"

namespace tide::am {
namespace {

// Container requests unanswered this long are worth a line in the decision log: the usual
// cause of "why is it not scaling?" when the policy did ask (a full cluster, a dead queue).
constexpr DurationMs kReportWaitingAfter = 10000;

std::string boundsText(const allocation::Bounds& b) {
  return "min=" + std::to_string(b.minExecutors) +
         " initial=" + std::to_string(b.initialExecutors) +
         " max=" + std::to_string(b.maxExecutors);
}

}  // namespace

void ApplicationMaster::observeTick(TimeMs now, double tickSeconds) {
  const allocation::AllocationSnapshot a = allocation_.snapshot();
  const AllocatorSnapshot c = allocator_.snapshot();
  const int pendingExecutors = c.outstanding + c.starting;
  const int pendingRemoval = a.pendingRemoval + c.releasing;
  const int64_t pendingTasks = a.pendingTasks + a.pendingSpeculativeTasks;

  metrics_.tickDurationAll().observe(tickSeconds);
  metrics_.executorsBusy.set(a.busy);
  metrics_.executorsIdle.set(std::max(0, a.idle - a.pendingRemoval));
  metrics_.executorsPending.set(pendingExecutors);
  metrics_.executorsPendingRemoval.set(pendingRemoval);
  metrics_.executorsDecommissioning.set(a.decommissioning);
  // The policy counts removals as Spark's ExecutorMonitor does; /metrics gets what is new.
  const allocation::RemovalCounts& removals = allocation_.monitor().removalCounts();
  const auto catchUp = [](metrics::Counter& counter, int64_t now, int64_t& reported) {
    counter.inc(static_cast<double>(now - reported));
    reported = now;
  };
  catchUp(metrics_.executorsGracefullyDecommissioned, removals.gracefullyDecommissioned,
          reportedRemovals_.gracefullyDecommissioned);
  catchUp(metrics_.executorsDecommissionUnfinished, removals.decommissionUnfinished,
          reportedRemovals_.decommissionUnfinished);
  catchUp(metrics_.executorsDriverKilled, removals.driverKilled, reportedRemovals_.driverKilled);
  catchUp(metrics_.executorsExitedUnexpectedly, removals.exitedUnexpectedly,
          reportedRemovals_.exitedUnexpectedly);
  metrics_.targetExecutors.set(a.target);
  metrics_.maxNeededExecutors.set(a.maxNeeded);
  metrics_.minExecutors.set(a.bounds.minExecutors);
  metrics_.maxExecutors.set(a.bounds.maxExecutors);
  metrics_.tasksPending.set(static_cast<double>(pendingTasks));
  metrics_.tasksRunning.set(static_cast<double>(a.runningTasks));
  metrics_.uptimeSeconds.set(static_cast<double>(now - startedAt_) / 1000.0);
  publishStatusSnapshot(now, /*wait=*/false);

  AllocationPoint point;
  point.atMs = now - startedAt_;
  point.target = a.target;
  point.live = a.live;
  point.busy = a.busy;
  point.pendingExecutors = pendingExecutors;
  point.pendingTasks = pendingTasks;
  point.runningTasks = a.runningTasks;
  point.minExecutors = a.bounds.minExecutors;
  point.maxExecutors = a.bounds.maxExecutors;
  history_.record(point);

  // The allocator resets outstandingSince whenever the RM grants something, so "since" is
  // also "since the last grant".
  if (c.outstanding > 0 && c.outstandingSince >= 0 &&
      now - c.outstandingSince >= kReportWaitingAfter) {
    const DurationMs waited = (now - c.outstandingSince) / 1000 * 1000;
    recordDecision("containers", "waiting", c.target,
                   "waiting: " + std::to_string(c.outstanding) +
                       (c.outstanding == 1 ? " container" : " containers") + " requested " +
                       formatDuration(waited) + " ago, none granted",
                   "waiting/" + std::to_string(c.outstandingSince));
    if (waitingSince_ != c.outstandingSince) {
      waitingSince_ = c.outstandingSince;
      log_.warn() << c.outstanding << " container requests unanswered for "
                  << formatDuration(waited);
    }
  }
}

Status ApplicationMaster::changeBounds(std::optional<int> minExecutors,
                                       std::optional<int> initialExecutors,
                                       std::optional<int> maxExecutors, const std::string& source,
                                       allocation::Bounds* applied) {
  return withState([&] {
    if (!config_.allocation.enabled) {
      return Status::failedPrecondition(
          "dynamicAllocation.enabled is false: the executor count is fixed at "
          "executor.instances");
    }
    const allocation::Bounds current = allocation_.config().bounds;
    const allocation::Bounds wanted =
        allocation::changedBounds(current, minExecutors, initialExecutors, maxExecutors);
    std::string warning;
    Status set = allocation_.setBounds(wanted, &warning);
    if (!set.ok()) {
      log_.warn() << source << ": bounds not changed: " << set.message();
      recordDecision("operator", "bounds_rejected", allocation_.snapshot().target,
                     source + ": bounds not changed: " + set.message(), "");
      return set;
    }
    if (!warning.empty()) log_.warn() << source << ": " << warning;
    const allocation::Bounds now = allocation_.config().bounds;
    journal(JournalRecord::boundsChanged(now.minExecutors, now.initialExecutors, now.maxExecutors),
            /*sync=*/true);
    log_.info() << source << ": executor bounds " << boundsText(current) << " -> "
                << boundsText(now) << "; target now " << allocation_.snapshot().target;
    if (applied != nullptr) *applied = now;
    publishStatusSnapshot(clock_.nowMs());  // the new bounds show at once
    return Status();
  });
}

void ApplicationMaster::publishStatusSnapshot(TimeMs now, bool wait) {
  auto snapshot = std::make_shared<StatusSnapshot>();
  snapshot->takenAt = now;
  snapshot->allocation = allocation_.snapshot();
  snapshot->containers = allocator_.snapshot();
  snapshot->stopping = stopping_;
  snapshot->peakExecutors = peakExecutors_;
  snapshot->pendingTasks = scheduler_->pendingTaskCount();
  snapshot->runningTasks = scheduler_->runningTaskCount();
  snapshot->jobs = scheduler_->jobSummaries();
  snapshot->capacity = clusterCapacity_;
  snapshot->removed = removedExecutors_.newest();
  snapshot->removedTotal = removedExecutors_.total();
  const auto& monitor = allocation_.monitor();
  for (const auto* tracker : monitor.all()) {
    ExecutorStatus e;
    e.id = tracker->id;
    auto it = executors_.find(tracker->id);
    if (it != executors_.end()) {
      e.host = it->second.host;
      e.container = it->second.containerId;
      e.pid = it->second.pid;
      e.registeredAt = it->second.registeredAt;
      e.node = it->second.node;
    }
    e.cachedStages.assign(tracker->cachedData.begin(), tracker->cachedData.end());
    e.shuffleStages.assign(tracker->shuffles.begin(), tracker->shuffles.end());
    e.runningTasks = tracker->runningTasks;
    e.pendingRemoval = tracker->pendingRemoval;
    e.decommissioning = tracker->decommissioning;
    if (auto progress = decommissioner_.progressOf(tracker->id)) {
      e.migrationsLeft = progress->outputsLeft;
      e.blocksMigrated = progress->blocksMigrated;
    }
    e.idleSince = tracker->idleSince;
    e.holdsCachedData = !tracker->cachedData.empty();
    e.holdsShuffleData = !tracker->shuffles.empty();
    e.expiry = monitor.expiryOf(*tracker);
    e.excluded = scheduler_->isExecutorExcluded(tracker->id);
    if (const allocation::ResourceProfile* profile =
            scheduler_->profiles().find(tracker->profileId)) {
      e.profile = *profile;
    } else {
      e.profile.id = tracker->profileId;
    }
    snapshot->executors.push_back(std::move(e));
  }
  if (wait) {
    statusSnapshot_.publish(std::move(snapshot));
  } else if (!statusSnapshot_.tryPublish(std::move(snapshot))) {
    return;
  }
  jobEndedSincePublish_ = false;
}

void ApplicationMaster::recordRejectedBoundsChange(const std::string& source,
                                                   const std::string& error) {
  withState([&] {
    recordDecision("operator", "bounds_rejected", allocation_.snapshot().target,
                   source + ": bounds not changed: " + error, "");
  });
}

}  // namespace tide::am
