#pragma once

#include <cstdint>
#include <map>
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
  std::string why;          // "idle (executorIdleTimeout=1min)", "holds cached data
                            // (cachedExecutorIdleTimeout=5min)", "busy with 2 tasks",
                            // "holds shuffle data of an active job"
};

// What the monitor knows of one executor.
struct ExecutorTracker {
  ExecutorId id;
  int profileId = 0;   // the resource profile it was started for
  uint64_t order = 0;  // registration order (status pages list executors in it)
  int runningTasks = 0;
  TimeMs idleSince = -1;             // -1 while busy; registration or the end of the last task
  std::set<std::string> cachedData;  // persisted stages whose blocks it holds
  std::set<std::string> shuffles;    // shuffles whose output it holds, until they are cleaned
  int activeShuffles = 0;            // how many of them a running job still needs
  bool pendingRemoval = false;       // chosen for removal; gets no new tasks
  bool decommissioning = false;      // chosen for removal with decommission.enabled: gets no
                                     // new tasks, migrates its blocks, then exits
  TimeMs timeoutAt = kInfiniteMs;
  bool timedOut = false;  // in the monitor's cached list of timed-out executors
};

// How an executor went, as far as the removal counters tell them apart: having finished its
// decommissioning (Spark's ExecutorLossMessage.decommissionFinished), or any other way.
enum class ExecutorExit { kOther, kDecommissionFinished };

// Executors gone, by why (Spark's ExecutorAllocationManagerSource counters, SPARK-33763): after
// a finished decommissioning; decommissioning but before it finished (killed, lost, or forced
// out by executor.decommission.forceKillTimeout); released by the policy (killed, without
// decommissioning); gone without the policy asking (lost, exited, excluded).
struct RemovalCounts {
  int64_t gracefullyDecommissioned = 0;
  int64_t decommissionUnfinished = 0;
  int64_t driverKilled = 0;
  int64_t exitedUnexpectedly = 0;
};

// Tracks executors' idleness and the data they hold, and finds the ones whose idle deadline has
// passed (Spark's ExecutorMonitor). Keeps the earliest deadline so that a tick with none due
// costs O(1) whatever the number of executors.
//
// The idle deadline, as in Spark: an executor idle since t that holds no data goes at
// t + executorIdleTimeout. One that holds data goes at t + the smallest of the timeouts of the
// kinds it holds (cachedExecutorIdleTimeout for cached blocks, shuffleTracking.timeout for
// shuffle output whose job has ended); executorIdleTimeout does not apply to it. One that holds
// shuffle output a running job still needs never goes (with shuffle tracking on).
class ExecutorMonitor {
 public:
  ExecutorMonitor(const AllocationConfig& config, const Clock& clock);

  void onExecutorAdded(const ExecutorId& id, int profileId = 0);
  void onExecutorRemoved(const ExecutorId& id, ExecutorExit exit = ExecutorExit::kOther);
  void onTaskStart(const ExecutorId& id);
  void onTaskEnd(const ExecutorId& id);
  void onBlocksCached(const ExecutorId& id, const std::string& dataId);
  void onBlocksUncached(const std::string& dataId);
  // Shuffle output, Spark's three steps: written (needed by its running job), inactive (its job
  // ended; the data stays and holds its executors for shuffleTracking.timeout), cleaned (the
  // data is gone). A shuffle cleaned while still active goes straight to cleaned.
  void onShuffleOutput(const ExecutorId& id, const std::string& shuffleId);
  void onShuffleInactive(const std::string& shuffleId);
  void onShuffleReleased(const std::string& shuffleId);
  void markPendingRemoval(const std::vector<ExecutorId>& ids);
  // Chosen for removal with decommission.enabled (Spark's executorsDecommissioning): no longer
  // timed out nor counted among the executors that can be removed.
  void markDecommissioning(const std::vector<ExecutorId>& ids);

  // Executors past their idle deadline and neither being removed nor decommissioning, in id
  // order (Spark sorts them by id; tide compares the numbers inside ids by value, so e2 comes
  // before e10). The list stays valid until the next call or event.
  const std::vector<ExecutorId>& timedOutExecutors();

  int executorCount() const { return static_cast<int>(executors_.size()); }
  int pendingRemovalCount() const { return pendingRemoval_; }
  int decommissioningCount() const { return decommissioning_; }
  const RemovalCounts& removalCounts() const { return removals_; }
  // Spark's executorCountWithResourceProfile and pendingRemovalCountPerResourceProfileId.
  int executorCountWithProfile(int profileId) const {
    return countOf(executorsByProfile_, profileId);
  }
  int pendingRemovalCountWithProfile(int profileId) const {
    return countOf(pendingRemovalByProfile_, profileId);
  }
  int decommissioningCountWithProfile(int profileId) const {
    return countOf(decommissioningByProfile_, profileId);
  }
  // The profiles that have executors, with how many each has.
  const std::map<int, int>& executorsByProfile() const { return executorsByProfile_; }
  int busyCount() const { return busy_; }
  // How many full scans timedOutExecutors() has made: ticks with no deadline due make none.
  uint64_t scanCount() const { return scans_; }
  const ExecutorTracker* find(const ExecutorId& id) const;
  ExpiryInfo expiryOf(const ExecutorTracker& tracker) const;
  // All trackers in registration order (for status pages; O(n)).
  std::vector<const ExecutorTracker*> all() const;

 private:
  static int countOf(const std::map<int, int>& counts, int profileId) {
    auto it = counts.find(profileId);
    return it == counts.end() ? 0 : it->second;
  }
  static void count(std::map<int, int>& counts, int profileId, int delta) {
    if ((counts[profileId] += delta) == 0) counts.erase(profileId);
  }
  ExecutorTracker* lookup(const ExecutorId& id);
  // Sets `flag` on each known executor that lacks it, counting it in `total` and `byProfile`.
  void mark(const std::vector<ExecutorId>& ids, bool ExecutorTracker::*flag, int& total,
            std::map<int, int>& byProfile);
  void updateTimeout(ExecutorTracker& tracker);
  DurationMs idleTimeoutFor(const ExecutorTracker& tracker) const;
  bool holdsActiveShuffle(const ExecutorTracker& tracker) const;

  const AllocationConfig& config_;
  const Clock& clock_;
  std::unordered_map<ExecutorId, ExecutorTracker> executors_;
  std::unordered_map<std::string, std::set<ExecutorId>> cacheHolders_;
  std::unordered_map<std::string, std::set<ExecutorId>> shuffleHolders_;
  std::set<std::string> inactiveShuffles_;  // their job ended; not yet cleaned
  uint64_t nextOrder_ = 0;
  int pendingRemoval_ = 0;
  int decommissioning_ = 0;
  int busy_ = 0;
  RemovalCounts removals_;
  std::map<int, int> executorsByProfile_;
  std::map<int, int> pendingRemovalByProfile_;
  std::map<int, int> decommissioningByProfile_;
  // Earliest deadline among the executors not yet timed out; kInfiniteMs when none, and
  // a value <= now forces a rescan (after something invalidated the cached list).
  TimeMs nextTimeout_ = kInfiniteMs;
  std::vector<ExecutorId> timedOut_;
  uint64_t scans_ = 0;
};

// Orders executor ids as Spark's sorted ids would order its numeric ids: runs of digits compare
// by value ("e2" < "e10"), everything else character by character.
bool executorIdLess(const ExecutorId& a, const ExecutorId& b);

}  // namespace tide::allocation
