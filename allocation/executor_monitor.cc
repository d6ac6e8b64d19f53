#include "allocation/executor_monitor.h"

#include <algorithm>
#include <limits>

#include "common/config.h"

namespace tide::allocation {
namespace {
// A deadline that is always due: forces the next timedOutExecutors() to rescan.
constexpr TimeMs kRescanNow = std::numeric_limits<TimeMs>::min();
}  // namespace

ExecutorMonitor::ExecutorMonitor(const AllocationConfig& config, const Clock& clock)
    : config_(config), clock_(clock) {}

ExecutorTracker* ExecutorMonitor::lookup(const ExecutorId& id) {
  auto it = executors_.find(id);
  return it == executors_.end() ? nullptr : &it->second;
}

const ExecutorTracker* ExecutorMonitor::find(const ExecutorId& id) const {
  auto it = executors_.find(id);
  return it == executors_.end() ? nullptr : &it->second;
}

void ExecutorMonitor::onExecutorAdded(const ExecutorId& id, int profileId) {
  if (executors_.count(id) != 0) return;  // a repeated registration changes nothing
  ExecutorTracker& tracker = executors_[id];
  tracker.id = id;
  tracker.profileId = profileId;
  count(executorsByProfile_, profileId, 1);
  tracker.order = nextOrder_++;
  tracker.idleSince = clock_.nowMs();  // idle from registration until its first task
  updateTimeout(tracker);
}

void ExecutorMonitor::onExecutorRemoved(const ExecutorId& id, ExecutorExit exit) {
  auto it = executors_.find(id);
  if (it == executors_.end()) return;
  ExecutorTracker& tracker = it->second;
  // As Spark's ExecutorMonitor counts removals: a finished decommissioning first, then what
  // the policy had asked of the executor.
  if (exit == ExecutorExit::kDecommissionFinished) {
    ++removals_.gracefullyDecommissioned;
  } else if (tracker.decommissioning) {
    ++removals_.decommissionUnfinished;
  } else if (tracker.pendingRemoval) {
    ++removals_.driverKilled;
  } else {
    ++removals_.exitedUnexpectedly;
  }
  count(executorsByProfile_, tracker.profileId, -1);
  if (tracker.pendingRemoval) {
    --pendingRemoval_;
    count(pendingRemovalByProfile_, tracker.profileId, -1);
  }
  if (tracker.decommissioning) {
    --decommissioning_;
    count(decommissioningByProfile_, tracker.profileId, -1);
  }
  if (tracker.runningTasks > 0) --busy_;
  for (const auto& data : tracker.cachedData) cacheHolders_[data].erase(id);
  for (const auto& shuffle : tracker.shuffles) {
    auto holders = shuffleHolders_.find(shuffle);
    if (holders == shuffleHolders_.end()) continue;
    holders->second.erase(id);
    if (holders->second.empty()) {
      shuffleHolders_.erase(holders);
      inactiveShuffles_.erase(shuffle);
    }
  }
  if (tracker.timedOut) {
    timedOut_.erase(std::remove(timedOut_.begin(), timedOut_.end(), id), timedOut_.end());
  }
  executors_.erase(it);
}

void ExecutorMonitor::onTaskStart(const ExecutorId& id) {
  ExecutorTracker* tracker = lookup(id);
  if (tracker == nullptr) return;
  if (tracker->runningTasks++ == 0) {
    ++busy_;
    tracker->idleSince = -1;
    updateTimeout(*tracker);
  }
}

void ExecutorMonitor::onTaskEnd(const ExecutorId& id) {
  ExecutorTracker* tracker = lookup(id);
  if (tracker == nullptr || tracker->runningTasks == 0) return;
  if (--tracker->runningTasks == 0) {
    --busy_;
    tracker->idleSince = clock_.nowMs();
    updateTimeout(*tracker);
  }
}

void ExecutorMonitor::onBlocksCached(const ExecutorId& id, const std::string& dataId) {
  ExecutorTracker* tracker = lookup(id);
  if (tracker == nullptr || !tracker->cachedData.insert(dataId).second) return;
  cacheHolders_[dataId].insert(id);
  updateTimeout(*tracker);
}

void ExecutorMonitor::onBlocksUncached(const std::string& dataId) {
  auto holders = cacheHolders_.find(dataId);
  if (holders == cacheHolders_.end()) return;
  for (const auto& id : holders->second) {
    ExecutorTracker* tracker = lookup(id);
    if (tracker == nullptr) continue;
    tracker->cachedData.erase(dataId);
    // The idle clock is not restarted: an executor idle for longer than executorIdleTimeout
    // goes at the next tick.
    updateTimeout(*tracker);
  }
  cacheHolders_.erase(holders);
}

void ExecutorMonitor::onShuffleOutput(const ExecutorId& id, const std::string& shuffleId) {
  ExecutorTracker* tracker = lookup(id);
  if (tracker == nullptr || !tracker->shuffles.insert(shuffleId).second) return;
  shuffleHolders_[shuffleId].insert(id);
  if (inactiveShuffles_.count(shuffleId) == 0) ++tracker->activeShuffles;
  updateTimeout(*tracker);
}

void ExecutorMonitor::onShuffleInactive(const std::string& shuffleId) {
  auto holders = shuffleHolders_.find(shuffleId);
  if (holders == shuffleHolders_.end() || !inactiveShuffles_.insert(shuffleId).second) return;
  for (const auto& id : holders->second) {
    ExecutorTracker* tracker = lookup(id);
    if (tracker == nullptr) continue;
    --tracker->activeShuffles;
    // The idle clock is not restarted: the deadline counts from when the executor went idle.
    updateTimeout(*tracker);
  }
}

void ExecutorMonitor::onShuffleReleased(const std::string& shuffleId) {
  auto holders = shuffleHolders_.find(shuffleId);
  if (holders == shuffleHolders_.end()) return;
  const bool wasActive = inactiveShuffles_.erase(shuffleId) == 0;
  for (const auto& id : holders->second) {
    ExecutorTracker* tracker = lookup(id);
    if (tracker == nullptr) continue;
    tracker->shuffles.erase(shuffleId);
    if (wasActive) --tracker->activeShuffles;
    updateTimeout(*tracker);
  }
  shuffleHolders_.erase(holders);
}

void ExecutorMonitor::markPendingRemoval(const std::vector<ExecutorId>& ids) {
  mark(ids, &ExecutorTracker::pendingRemoval, pendingRemoval_, pendingRemovalByProfile_);
}

void ExecutorMonitor::markDecommissioning(const std::vector<ExecutorId>& ids) {
  mark(ids, &ExecutorTracker::decommissioning, decommissioning_, decommissioningByProfile_);
}

void ExecutorMonitor::mark(const std::vector<ExecutorId>& ids, bool ExecutorTracker::*flag,
                           int& total, std::map<int, int>& byProfile) {
  for (const auto& id : ids) {
    ExecutorTracker* tracker = lookup(id);
    if (tracker == nullptr || tracker->*flag) continue;
    tracker->*flag = true;
    ++total;
    count(byProfile, tracker->profileId, 1);
  }
  if (!ids.empty()) nextTimeout_ = kRescanNow;  // the cached list no longer holds
}

bool ExecutorMonitor::holdsActiveShuffle(const ExecutorTracker& tracker) const {
  return config_.shuffleTrackingEnabled && tracker.activeShuffles > 0;
}

DurationMs ExecutorMonitor::idleTimeoutFor(const ExecutorTracker& tracker) const {
  const bool holdsCache = !tracker.cachedData.empty();
  const bool holdsShuffle = config_.shuffleTrackingEnabled && !tracker.shuffles.empty();
  if (!holdsCache && !holdsShuffle) return config_.executorIdleTimeout;
  // As in Spark: the smallest timeout of the kinds of data it holds; executorIdleTimeout does
  // not apply to an executor holding data, even when it is longer.
  DurationMs timeout = kInfiniteMs;
  if (holdsCache) timeout = std::min(timeout, config_.cachedExecutorIdleTimeout);
  if (holdsShuffle) timeout = std::min(timeout, config_.shuffleTrackingTimeout);
  return timeout;
}

void ExecutorMonitor::updateTimeout(ExecutorTracker& tracker) {
  const TimeMs oldDeadline = tracker.timeoutAt;
  // Shuffle output a running job still needs keeps the executor whatever the timeouts.
  const TimeMs newDeadline = tracker.idleSince >= 0 && !holdsActiveShuffle(tracker)
                                 ? addSaturating(tracker.idleSince, idleTimeoutFor(tracker))
                                 : kInfiniteMs;
  tracker.timeoutAt = newDeadline;
  if (tracker.timedOut && newDeadline > oldDeadline) {
    // It was counted as timed out but is not any more: rebuild the list at the next tick.
    tracker.timedOut = false;
    nextTimeout_ = kRescanNow;
  } else {
    nextTimeout_ = std::min(nextTimeout_, newDeadline);
  }
}

const std::vector<ExecutorId>& ExecutorMonitor::timedOutExecutors() {
  const TimeMs now = clock_.nowMs();
  if (now < nextTimeout_) return timedOut_;
  // A deadline is due (or the list was invalidated): one scan finds the timed-out executors
  // and the next deadline, so ticks before that deadline cost nothing.
  ++scans_;
  TimeMs next = kInfiniteMs;
  std::vector<const ExecutorTracker*> expired;
  for (auto& [id, tracker] : executors_) {
    if (tracker.pendingRemoval || tracker.decommissioning) {
      tracker.timedOut = false;
      continue;
    }
    if (tracker.timeoutAt > now) {
      tracker.timedOut = false;
      next = std::min(next, tracker.timeoutAt);
    } else {
      tracker.timedOut = true;
      expired.push_back(&tracker);
    }
  }
  std::sort(expired.begin(), expired.end(), [](const ExecutorTracker* a, const ExecutorTracker* b) {
    return executorIdLess(a->id, b->id);
  });
  timedOut_.clear();
  for (const auto* tracker : expired) timedOut_.push_back(tracker->id);
  nextTimeout_ = next;
  return timedOut_;
}

ExpiryInfo ExecutorMonitor::expiryOf(const ExecutorTracker& tracker) const {
  ExpiryInfo info;
  info.at = tracker.timeoutAt;
  if (tracker.pendingRemoval) {
    info.why = "being removed";
    return info;
  }
  if (tracker.decommissioning) {
    info.why = "decommissioning";
    return info;
  }
  if (tracker.runningTasks > 0) {
    info.why = "busy with " + std::to_string(tracker.runningTasks) +
               (tracker.runningTasks == 1 ? " task" : " tasks");
    return info;
  }
  if (holdsActiveShuffle(tracker)) {
    info.why = "holds shuffle data of an active job";
    return info;
  }
  const bool holdsCache = !tracker.cachedData.empty();
  const bool holdsShuffle = config_.shuffleTrackingEnabled && !tracker.shuffles.empty();
  if (holdsShuffle &&
      (!holdsCache || config_.shuffleTrackingTimeout <= config_.cachedExecutorIdleTimeout)) {
    info.why = "holds shuffle data of an ended job (shuffleTracking.timeout=" +
               formatDuration(config_.shuffleTrackingTimeout) + ")";
  } else if (holdsCache) {
    info.why = "holds cached data (cachedExecutorIdleTimeout=" +
               formatDuration(config_.cachedExecutorIdleTimeout) + ")";
  } else {
    info.why = "idle (executorIdleTimeout=" + formatDuration(config_.executorIdleTimeout) + ")";
  }
  return info;
}

std::vector<const ExecutorTracker*> ExecutorMonitor::all() const {
  std::vector<const ExecutorTracker*> trackers;
  trackers.reserve(executors_.size());
  for (const auto& entry : executors_) trackers.push_back(&entry.second);
  std::sort(trackers.begin(), trackers.end(),
            [](const ExecutorTracker* a, const ExecutorTracker* b) { return a->order < b->order; });
  return trackers;
}

bool executorIdLess(const ExecutorId& a, const ExecutorId& b) {
  const auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (isDigit(a[i]) && isDigit(b[j])) {
      // Compare the two runs of digits by value: skip leading zeros, then the longer run is
      // the larger number, and runs of equal length compare as text.
      size_t endA = i;
      size_t endB = j;
      while (endA < a.size() && isDigit(a[endA])) ++endA;
      while (endB < b.size() && isDigit(b[endB])) ++endB;
      size_t startA = i;
      size_t startB = j;
      while (startA + 1 < endA && a[startA] == '0') ++startA;
      while (startB + 1 < endB && b[startB] == '0') ++startB;
      const size_t lenA = endA - startA;
      const size_t lenB = endB - startB;
      if (lenA != lenB) return lenA < lenB;
      const int cmp = a.compare(startA, lenA, b, startB, lenB);
      if (cmp != 0) return cmp < 0;
      i = endA;
      j = endB;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if (i < a.size() || j < b.size()) return j < b.size();
  return a < b;  // equal by value ("e01" and "e1"): any fixed order
}

}  // namespace tide::allocation
