#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocation/allocation_config.h"
#include "common/clock.h"

namespace tide::allocation {

using ExecutorId = std::string;

// Why an executor will (or will not) be released when idle, for the status API and decisions.
struct ExpiryInfo {
  TimeMs at = kInfiniteMs;  // kInfiniteMs: never, while things stay as they are
  std::string why;          // "idle timeout 60s", "holds cached data (cachedExecutorIdleTimeout
                            // 5min)", "busy with 2 tasks", "holds shuffle data of an active job"
};

// What the monitor knows of one executor.
struct ExecutorTracker {
  ExecutorId id;
  uint64_t order = 0;  // registration order: idle executors go oldest first
  int runningTasks = 0;
  TimeMs idleSince = -1;             // -1 while busy; registration or the end of the last task
  std::set<std::string> cachedData;  // persisted stages whose blocks it holds
  std::set<std::string> shuffles;    // shuffles (of active jobs) whose output it holds
  bool pendingRemoval = false;       // chosen for removal; gets no new tasks
  TimeMs timeoutAt = kInfiniteMs;
  bool timedOut = false;  // in the monitor's cached list of timed-out executors
};

// Tracks executors' idleness and the data they hold, and finds the ones whose idle deadline has
// passed (Spark's ExecutorMonitor). Keeps the earliest deadline so that a tick with none due
// costs O(1) whatever the number of executors.
class ExecutorMonitor {
 public:
  ExecutorMonitor(const AllocationConfig& config, const Clock& clock);

  void onExecutorAdded(const ExecutorId& id);
  void onExecutorRemoved(const ExecutorId& id);
  void onTaskStart(const ExecutorId& id);
  void onTaskEnd(const ExecutorId& id);
  void onBlocksCached(const ExecutorId& id, const std::string& dataId);
  void onBlocksUncached(const std::string& dataId);
  void onShuffleOutput(const ExecutorId& id, const std::string& shuffleId);
  void onShuffleReleased(const std::string& shuffleId);
  void markPendingRemoval(const std::vector<ExecutorId>& ids);

  // Executors past their idle deadline and not already being removed, oldest first.
  // The list stays valid until the next call or event.
  const std::vector<ExecutorId>& timedOutExecutors();

  int executorCount() const { return static_cast<int>(executors_.size()); }
  int pendingRemovalCount() const { return pendingRemoval_; }
  int busyCount() const { return busy_; }
  // How many full scans timedOutExecutors() has made: ticks with no deadline due make none.
  uint64_t scanCount() const { return scans_; }
  const ExecutorTracker* find(const ExecutorId& id) const;
  ExpiryInfo expiryOf(const ExecutorTracker& tracker) const;
  // All trackers in registration order (for status pages; O(n)).
  std::vector<const ExecutorTracker*> all() const;

 private:
  ExecutorTracker* lookup(const ExecutorId& id);
  void updateTimeout(ExecutorTracker& tracker);
  DurationMs idleTimeoutFor(const ExecutorTracker& tracker) const;

  const AllocationConfig& config_;
  const Clock& clock_;
  std::unordered_map<ExecutorId, ExecutorTracker> executors_;
  std::unordered_map<std::string, std::set<ExecutorId>> cacheHolders_;
  std::unordered_map<std::string, std::set<ExecutorId>> shuffleHolders_;
  uint64_t nextOrder_ = 0;
  int pendingRemoval_ = 0;
  int busy_ = 0;
  // Earliest deadline among the executors not yet timed out; kInfiniteMs when none, and
  // a value <= now forces a rescan (after something invalidated the cached list).
  TimeMs nextTimeout_ = kInfiniteMs;
  std::vector<ExecutorId> timedOut_;
  uint64_t scans_ = 0;
};

}  // namespace tide::allocation
