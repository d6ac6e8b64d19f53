#pragma once

// The bookkeeping of one submitted stage's tasks (Spark's TaskSetManager, without locality or
// speculation). Tasks are not objects until they run: a stage of a million tasks costs a
// counter, a bitmap of 125 KB and entries only for the tasks that are running, re-queued or
// have failed. Pure state: the TaskScheduler decides what happens on each event.

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/clock.h"

namespace tide::am {

// One attempt of one task: the task's index in its stage and which try it is (0 = first).
struct TaskAttempt {
  int64_t index = 0;
  int attempt = 0;
};

class TaskSetManager {
 public:
  explicit TaskSetManager(int64_t numTasks);

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
  std::optional<TaskAttempt> launchNext();
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
  // Drops everything pending and frees the success bitmap; running attempts still end.
  void abort();
  // Frees the success bitmap once every task succeeded; only counters are left.
  void releaseAfterSuccess();

  // Entries held beyond the fixed counters (re-queued tasks and failure counts): what
  // "memory proportional to trouble, not to stage size" is checked with.
  size_t trackedIndexCount() const { return requeued_.size() + failureCounts_.size(); }

  int64_t failedAttempts() const { return failedAttempts_; }
  void countFailedAttempt() { ++failedAttempts_; }
  // Durations of the successful attempts.
  DurationMs durationSumMs() const { return durationSumMs_; }
  DurationMs durationMinMs() const { return succeeded_ > 0 ? durationMinMs_ : 0; }
  DurationMs durationMaxMs() const { return durationMaxMs_; }

 private:
  int64_t numTasks_;
  int64_t nextFreshIndex_ = 0;        // indices below it have been launched at least once
  std::deque<TaskAttempt> requeued_;  // to launch before any fresh index, front first
  std::unordered_map<int64_t, int> failureCounts_;  // only indices that have failed
  std::vector<bool> succeededBits_;                 // one bit per task
  int64_t succeeded_ = 0;
  int64_t running_ = 0;
  int64_t failedAttempts_ = 0;
  bool aborted_ = false;
  DurationMs durationSumMs_ = 0;
  DurationMs durationMinMs_ = 0;
  DurationMs durationMaxMs_ = 0;
};

}  // namespace tide::am
