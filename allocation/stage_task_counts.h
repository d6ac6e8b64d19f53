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
    int taskCpus = 0;    // the cpus each of its tasks takes; 0: task.cpus
    int profileId = 0;   // its resource profile (the executors its tasks run on)
  };

  // One resource profile's tasks, summed over its stages.
  struct ProfileTasks {
    int64_t pending = 0;
    int64_t pendingSpeculative = 0;
    int64_t running = 0;
    int64_t total() const { return pending + pendingSpeculative + running; }
  };

  // What an event did to its stage.
  enum class Change {
    kUnknownStage,  // no such stage (never seen, or already forgotten): nothing counted
    kCounted,       // counted; the stage is still known
    kForgotten      // counted, and the stage is done: forgotten
  };

  // `taskCpus` is the cpus each of the stage's tasks takes (0: task.cpus, the default);
  // `profileId` its resource profile.
  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus = 0,
                        int profileId = 0);
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
  // The tasks of the stages of one resource profile (O(stages)).
  ProfileTasks ofProfile(int profileId) const;

  // Tasks of `taskCpus` cpus that fit on an executor of `executorCores` cores (at least 1, as
  // the scheduler never admits a task wider than an executor): Spark's maxTasksPerExecutor.
  static int tasksPerExecutor(int executorCores, int taskCpus);
  // The executors the known stages' tasks (pending, speculative and running) fill when each
  // stage's tasks are packed at that stage's own tasks per executor: the sum over stages of
  // tasks / tasksPerExecutor, stages of equal width summed first (so that one width gives
  // exactly Spark's numRunningOrPendingTasks / tasksPerExecutor). `defaultTaskCpus` (task.cpus)
  // stands for a stage that did not say. Not rounded: the caller applies the ratio, then ceil.
  // Only the stages of resource profile `profileId` count (whose executors have
  // `executorCores`).
  double executorsFilled(int executorCores, int defaultTaskCpus, int profileId = 0) const;
  // Whether a stage of the profile with a pending speculative copy packs more than one task per
  // executor (the copy may not run beside its original: Spark's speculation locality offset).
  bool speculativePendingOnSharedExecutor(int executorCores, int defaultTaskCpus,
                                          int profileId = 0) const;

 private:
  std::unordered_map<std::string, Stage> stages_;
  int64_t pending_ = 0;
  int64_t pendingSpeculative_ = 0;
  int64_t running_ = 0;
};

}  // namespace tide::allocation
