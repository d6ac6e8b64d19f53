#pragma once

// The bookkeeping of one submitted stage's tasks (Spark's TaskSetManager). Tasks are not
// objects until they run: a stage without locality preferences costs counters, a compact set
// of its done indices (IndexSet: bitmaps only for the stretches of indices partly done, a few
// KiB for a stage done roughly in order, whatever its size) and entries only for the tasks
// that are running, re-queued or have failed. A stage whose tasks prefer places (their inputs'
// executors and nodes, or the job's preferred_hosts) keeps per-place pending lists and does Spark's
// delay scheduling: it launches at the most local level it has tasks for and moves one level down
// after that level's locality wait passes without a launch. Pure state, time passed in: the
// TaskScheduler decides what happens on each event.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocation/speculation.h"
#include "am/scheduler/index_set.h"
#include "common/clock.h"

namespace tide::am {

// Spark's rule for slow tasks is the allocation layer's, shared with `tide simulate`.
using allocation::DurationCounts;
using allocation::readSpeculationSettings;
using allocation::RunningCopy;
using allocation::speculatableTasks;
using allocation::SpeculationConfig;
using allocation::SpeculationSettings;
using allocation::speculationThreshold;

// One attempt of one task: the task's index in its stage and which try it is (0 = first).
struct TaskAttempt {
  int64_t index = 0;
  int attempt = 0;
};

// Spark's TaskLocality, most local first. RACK_LOCAL is kept for the order and the config key;
// tide has no rack information, so no task is ever rack-local.
enum class TaskLocality { kProcessLocal, kNodeLocal, kNoPref, kRackLocal, kAny };
const char* taskLocalityName(TaskLocality locality);  // "PROCESS_LOCAL", ...
inline constexpr int kLocalityLevelCount = 5;

// locality.wait.process / .node / .rack (each defaulting to locality.wait).
struct LocalityWaits {
  DurationMs process = 3000;
  DurationMs node = 3000;
  DurationMs rack = 3000;
};

// Where one task would like to run.
struct TaskPreference {
  std::vector<std::string> executors;  // PROCESS_LOCAL
  std::vector<std::string> nodes;      // NODE_LOCAL
};

// Whether task `index` may not run where it is being offered (exclusion on failure).
using TaskExcluded = std::function<bool(int64_t index)>;

// A task to launch and how local it is where it goes.
struct TaskOffer {
  TaskAttempt attempt;
  TaskLocality locality = TaskLocality::kNoPref;
};

class TaskSetManager {
 public:
  explicit TaskSetManager(int64_t numTasks);

  // Gives the tasks places to prefer (index i: prefs[i]; a shorter vector leaves the rest
  // without preference) and starts delay scheduling at `now`. Every pending task is filed
  // under its places. Without this call no task has a preference.
  void setPreferences(const std::vector<TaskPreference>& prefs, LocalityWaits waits, TimeMs now);
  bool hasPreferences() const { return !preferences_.empty(); }
  // Spark's myLocalityLevels: the levels this stage has pending tasks for, then ANY.
  std::vector<TaskLocality> validLocalityLevels() const;
  // Spark's getAllowedLocalityLevel: the most local level delay scheduling allows at `now`;
  // moves down a level when the current one has no pending tasks or its wait has passed
  // since the last launch at it.
  TaskLocality allowedLocality(TimeMs now);
  // Spark's resourceOffer: a pending task for a slot on `executorId` at `node`, no less local
  // than `maxLocality` nor than allowedLocality(now) permits. Without preferences: the next
  // task (launchNext), NO_PREF. A task `excluded` rejects stays pending for other offers.
  std::optional<TaskOffer> resourceOffer(const std::string& executorId, const std::string& node,
                                         TaskLocality maxLocality, TimeMs now,
                                         const TaskExcluded& excluded = {});
  // Pending tasks by node they prefer (a task preferring two nodes counts on both).
  std::map<std::string, int64_t> pendingTasksByNode() const;
  // Every task of the stage (pending, running or done) by the nodes it prefers, and in
  // `preferringTasks` how many prefer some node: Spark's executor placement hints, taken from a
  // stage's tasks when it is submitted and kept until it completes.
  std::map<std::string, int64_t> tasksByNode(int64_t* preferringTasks) const;
  // The executor is gone: tasks preferring it fall back to their nodes.
  void executorLost(const std::string& executorId);

  // Re-runs succeeded tasks whose output was lost (lineage): each becomes pending again, as
  // its next attempt. Returns how many were re-queued.
  int64_t resubmit(const std::vector<int64_t>& indices);

  int64_t numTasks() const { return numTasks_; }
  // Tasks waiting to launch: never launched, or re-queued after a failure or a lost executor.
  int64_t pendingCount() const;
  bool hasPendingTasks() const { return pendingCount() > 0; }
  int64_t runningCount() const { return running_; }
  int64_t succeededCount() const { return succeeded_; }
  bool allSucceeded() const { return succeeded_ == numTasks_; }
  bool isSucceeded(int64_t index) const;
  // No longer offered anything: its job failed or was cancelled.
  bool aborted() const { return aborted_; }

  // Takes the next task to launch and counts it running: a re-queued task first (so a retry
  // is not starved behind the rest of a large stage), else the next never-launched index.
  // Only a re-queued task can be `excluded` (it failed somewhere); such a task keeps its place.
  std::optional<TaskAttempt> launchNext(const TaskExcluded& excluded = {});
  // A running attempt ended (any way); call before the handlers below.
  void onAttemptEnded();
  // Marks the index done; false when it already was (a late duplicate, ignored).
  bool markSucceeded(int64_t index, DurationMs duration);
  // Counts a failure against the index and returns how many it has had.
  int recordFailure(int64_t index);
  int failureCount(int64_t index) const;
  // Puts a task back at the front of the queue, to run as attempt `attempt`. Ignored for
  // an index that has succeeded or when aborted.
  void requeueFront(int64_t index, int attempt);
  // Recovery: takes a never-launched index out of the pending tasks without launching it (an
  // earlier AM attempt committed it, or it is still running there: then `running` counts it as
  // running, to end with onAttemptEnded). Only before this stage's first launch.
  void markRestored(int64_t index, bool running);
  // Drops everything pending and frees the success bitmaps; running attempts still end.
  void abort();
  // Frees what recovery and failures left once every task succeeded (the done set of a
  // finished stage is counters already).
  void releaseAfterSuccess();

  // Entries held beyond the fixed counters (re-queued tasks and failure counts): what
  // "memory proportional to trouble, not to stage size" is checked with.
  size_t trackedIndexCount() const { return requeued_.size() + failureCounts_.size(); }
  // Bytes of the done and restored sets (their bitmaps and chunk counters).
  size_t indexSetBytes() const { return succeededSet_.heapBytes() + restoredSet_.heapBytes(); }

  int64_t failedAttempts() const { return failedAttempts_; }
  void countFailedAttempt() { ++failedAttempts_; }
  // Count the successful durations (for speculation's median); off by default. They are kept
  // as counts per distinct duration, not per task.
  void keepDurations() { keepDurations_ = true; }
  const DurationCounts& successfulDurations() const { return durations_; }
  // Durations of the successful attempts.
  DurationMs durationSumMs() const { return durationSumMs_; }
  DurationMs durationMinMs() const { return succeeded_ > 0 ? durationMinMs_ : 0; }
  DurationMs durationMaxMs() const { return durationMaxMs_; }

 private:
  int localityIndex(TaskLocality level) const;
  bool hasPendingAt(TaskLocality level);
  // Pops the first still-pending index of a list (entries are removed lazily), passing over
  // excluded ones.
  std::optional<int64_t> popPending(std::deque<int64_t>& list, const TaskExcluded& excluded = {});
  void fileUnderPlaces(int64_t index, bool front);
  TaskAttempt takeIndex(int64_t index);

  int64_t numTasks_;
  int64_t nextFreshIndex_ = 0;  // indices below it have been launched at least once
  // Indices taken out by markRestored (allocated on first use), and how many of them are at or
  // above nextFreshIndex_ (still to be skipped by launchNext).
  IndexSet restoredSet_;
  int64_t restoredAhead_ = 0;
  std::deque<TaskAttempt> requeued_;                // to launch before any fresh index, front first
  std::unordered_map<int64_t, int> failureCounts_;  // only indices that have failed
  IndexSet succeededSet_;
  int64_t succeeded_ = 0;
  int64_t running_ = 0;
  int64_t failedAttempts_ = 0;
  bool aborted_ = false;
  DurationMs durationSumMs_ = 0;
  DurationMs durationMinMs_ = 0;
  DurationMs durationMaxMs_ = 0;
  bool keepDurations_ = false;
  DurationCounts durations_;

  // Locality (only once setPreferences was called). Lists hold indices that were pending when
  // filed; launched or succeeded ones are skipped when met.
  std::vector<TaskPreference> preferences_;
  std::vector<bool> pendingBits_;
  int64_t pendingWithPreferences_ = 0;
  std::unordered_map<int64_t, int> nextAttempt_;  // re-queued indices' next attempt number
  std::unordered_map<std::string, std::deque<int64_t>> pendingForExecutor_;
  std::unordered_map<std::string, std::deque<int64_t>> pendingForNode_;
  std::deque<int64_t> pendingWithoutPreference_;
  std::deque<int64_t> pendingAll_;
  LocalityWaits waits_;
  std::vector<TaskLocality> levels_;
  size_t currentLevel_ = 0;
  TimeMs lastLaunchMs_ = 0;
};

}  // namespace tide::am
