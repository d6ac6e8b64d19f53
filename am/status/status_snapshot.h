#pragma once

// What GET /api/v1/status and /api/v1/executors show, copied under the AM's mutex by the
// allocation loop after every tick (and after a bounds change) and published here. Readers
// take the newest copy without touching the AM's mutex, so any number of them cannot slow
// down executors' syncs or the loops; the price is that the view is up to one tick old.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "allocation/allocation_policy.h"
#include "am/containers/container_allocator.h"
#include "am/scheduler/task_scheduler.h"
#include "am/status/removed_executors.h"
#include "common/clock.h"

namespace tide::am {

struct ExecutorStatus {
  std::string id;
  std::string host;
  std::string container;
  int64_t pid = 0;
  int runningTasks = 0;
  bool pendingRemoval = false;
  bool decommissioning = false;  // handing its blocks to peers before it goes
  int64_t migrationsLeft = 0;    // task outputs still to hand over, while decommissioning
  int64_t blocksMigrated = 0;    // blocks peers took so far, while decommissioning
  TimeMs registeredAt = -1;
  TimeMs idleSince = -1;  // -1 while busy
  bool holdsCachedData = false;
  bool holdsShuffleData = false;
  std::vector<std::string> cachedStages;   // persisted stages whose blocks it holds
  std::vector<std::string> shuffleStages;  // stages of running jobs whose output it holds
  std::string node;                        // its node manager's node (locality)
  bool excluded = false;  // excluded for task failures (excludeOnFailure), offered no tasks
  allocation::ExpiryInfo expiry;
  // The resource profile it was started for, with its shape (it runs only that profile's
  // stages' tasks).
  allocation::ResourceProfile profile;
};

struct StatusSnapshot {
  TimeMs takenAt = 0;  // clock time
  allocation::AllocationSnapshot allocation;
  AllocatorSnapshot containers;
  bool stopping = false;
  int peakExecutors = 0;
  int64_t pendingTasks = 0;
  int64_t runningTasks = 0;
  std::vector<JobSummary> jobs;
  std::vector<ExecutorStatus> executors;                        // registration order
  ClusterCapacity capacity;                                     // as of the last heartbeat
  std::shared_ptr<const std::vector<RemovedExecutor>> removed;  // newest first, bounded; or null
  int64_t removedTotal = 0;
};

// The newest snapshot; publishing and reading only swap a pointer under a private mutex.
class StatusSnapshotBox {
 public:
  void publish(std::shared_ptr<const StatusSnapshot> snapshot) {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = std::move(snapshot);
  }
  // For the loop: never waits for a reader (readers run at idle priority and may sit
  // preempted right here); false when one held the lock, and the next tick publishes.
  bool tryPublish(std::shared_ptr<const StatusSnapshot> snapshot) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    latest_ = std::move(snapshot);
    return true;
  }
  // Null until the first publication.
  std::shared_ptr<const StatusSnapshot> latest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const StatusSnapshot> latest_;
};

}  // namespace tide::am
