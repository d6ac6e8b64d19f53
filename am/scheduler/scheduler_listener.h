#pragma once

// What the task scheduler tells the rest of the AM: the scheduler events the dynamic
// allocation policy counts pending and running tasks from (ExecutorAllocationManager's
// onStageSubmitted / onTaskStart / onTaskEnd / onStageCompleted), and the end of each job.
// The scheduler posts each event once, to its one listener list (listener_bus.h), which hands
// it to every subscriber. Calls are synchronous, from inside the scheduler's methods, under
// the caller's lock: a listener must not call back into the scheduler. Every event has a no-op
// default, so a subscriber overrides only the events it cares about.

#include <cstdint>
#include <string>

#include "allocation/resource_profile.h"

namespace tide::am {

// How one task attempt ended, as the allocation policy needs to know it.
enum class TaskOutcome {
  kSucceeded,
  // Ended without success and not at the scheduler's request: a failure, a lost executor, a
  // kill nobody asked for. The task goes back to pending (unless this ended its job).
  kFailed,
  // Killed because the scheduler asked (its job failed or was cancelled): not retried.
  kKilled,
};

const char* taskOutcomeName(TaskOutcome outcome);

class SchedulerListener {
 public:
  virtual ~SchedulerListener() = default;

  // Stage ids are unique over the AM's life: "<jobId>/<stage id>", e.g. "job-1/resize".
  // `taskCpus`: the cpus each of its tasks takes (its "cpus", else task.cpus); `profile`: the
  // resource profile (executor shape) its tasks run on.
  virtual void onStageSubmitted(const std::string& /*stageId*/, int64_t /*numTasks*/,
                                int /*taskCpus*/, const allocation::ResourceProfile& /*profile*/) {}
  // The stage succeeded, or was cancelled because its job failed.
  virtual void onStageCompleted(const std::string& /*stageId*/) {}
  virtual void onTaskStart(const std::string& /*stageId*/, const std::string& /*executorId*/) {}
  virtual void onTaskEnd(const std::string& /*stageId*/, const std::string& /*executorId*/,
                         TaskOutcome /*outcome*/) {}
  // `message` says why, e.g. "Job 'thumbnails' failed: task resize[17] failed 4 times; ...".
  virtual void onJobEnd(const std::string& /*jobId*/, bool /*succeeded*/,
                        const std::string& /*message*/) {}

  // Speculation (ExecutorAllocationManager counts speculative copies apart): a slow task got a
  // second copy to run; such a copy started; it ended.
  virtual void onSpeculativeTaskSubmitted(const std::string& /*stageId*/) {}
  virtual void onSpeculativeTaskStart(const std::string& /*stageId*/,
                                      const std::string& /*executorId*/) {}
  virtual void onSpeculativeTaskEnd(const std::string& /*stageId*/,
                                    const std::string& /*executorId*/, TaskOutcome /*outcome*/) {}
  // A task marked for speculation succeeded before its copy launched: the copy is dropped.
  virtual void onPendingSpeculativeTaskDropped(const std::string& /*stageId*/) {}

  // Exclusion on failure (Spark's SparkListenerUnschedulableTaskSetAdded / ...Removed): a
  // pending task of the stage cannot run on any live executor, every one being excluded for it;
  // and, later, the stage could launch again (or ended).
  virtual void onUnschedulableTaskSetAdded(const std::string& /*stageId*/) {}
  virtual void onUnschedulableTaskSetRemoved(const std::string& /*stageId*/) {}

  // Data held by executors. Shuffle output: a stage's task output that a running job still
  // needs (shuffleId = the stage id), released when the job ends. Cached data: a persisted
  // stage's output (dataId = the stage id), until unpersisted.
  virtual void onShuffleOutput(const std::string& /*executorId*/,
                               const std::string& /*shuffleId*/) {}
  virtual void onShuffleReleased(const std::string& /*shuffleId*/) {}
  virtual void onBlocksCached(const std::string& /*executorId*/, const std::string& /*dataId*/) {}
  virtual void onBlocksUncached(const std::string& /*dataId*/) {}
};

}  // namespace tide::am
