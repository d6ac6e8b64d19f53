#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace tide::allocation {

// The tasks of each stage as both allocation policies count them (Spark's
// ExecutorAllocationListener): pending, pending speculative copies and running, per stage and
// in total. A stage is known from its first event until it has completed and its last running
// task has ended; then it is forgotten. Stage ids are unique over the application's life.
class StageTaskCounts {
 public:
  struct Stage {
    int64_t pending = 0;
    int64_t pendingSpeculative = 0;
    int64_t running = 0;
    bool active = true;  // submitted and not yet completed
  };

  // What an event did to its stage.
  enum class Change {
    kUnknownStage,  // no such stage (never seen, or already forgotten): nothing counted
    kCounted,       // counted; the stage is still known
    kForgotten      // counted, and the stage is done: forgotten
  };

  void onStageSubmitted(const std::string& stageId, int64_t numTasks);
  // The stage finished or was aborted: its pending and speculative tasks no longer count; tasks
  // still running (a losing speculative copy, say) are counted until they end.
  Change onStageCompleted(const std::string& stageId);
  void onTaskStart(const std::string& stageId, bool speculative);
  // A task of the stage ended; when `retried` (a failed non-speculative task) it goes back to
  // pending while its stage is active.
  Change onTaskEnd(const std::string& stageId, bool retried);
  void onSpeculativeTaskSubmitted(const std::string& stageId);
  // A pending speculative copy will never run. False when there was none.
  bool dropPendingSpeculative(const std::string& stageId);

  int64_t pending() const { return pending_; }
  int64_t pendingSpeculative() const { return pendingSpeculative_; }
  int64_t running() const { return running_; }
  bool hasPending() const { return pending_ + pendingSpeculative_ > 0; }
  // Pending (with speculative) and running: the tasks executors are needed for.
  int64_t total() const { return pending_ + pendingSpeculative_ + running_; }

  const std::unordered_map<std::string, Stage>& stages() const { return stages_; }

 private:
  std::unordered_map<std::string, Stage> stages_;
  int64_t pending_ = 0;
  int64_t pendingSpeculative_ = 0;
  int64_t running_ = 0;
};

}  // namespace tide::allocation
