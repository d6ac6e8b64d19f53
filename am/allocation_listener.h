#pragma once

// Subscribes the dynamic allocation policy to the task scheduler's listener list: translates the
// scheduler's events into ExecutorAllocationManager's calls (the policy, which sizes the
// executor set from pending and running tasks, knows nothing of the bus). Job ends are not the
// policy's business.

#include "allocation/allocation_policy.h"
#include "am/scheduler/scheduler_listener.h"

namespace tide::am {

class AllocationListener : public SchedulerListener {
 public:
  explicit AllocationListener(allocation::AllocationPolicy& manager) : manager_(manager) {}

  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus,
                        const allocation::ResourceProfile& profile) override {
    manager_.addResourceProfile(profile);
    manager_.onStageSubmitted(stageId, numTasks, taskCpus, profile.id);
  }
  void onStageCompleted(const std::string& stageId) override { manager_.onStageCompleted(stageId); }
  void onTaskStart(const std::string& stageId, const std::string& executorId) override {
    manager_.onTaskStart(stageId, executorId);
  }
  void onTaskEnd(const std::string& stageId, const std::string& executorId,
                 TaskOutcome outcome) override {
    manager_.onTaskEnd(stageId, executorId, taskEnd(outcome));
  }
  void onSpeculativeTaskSubmitted(const std::string& stageId) override {
    manager_.onSpeculativeTaskSubmitted(stageId);
  }
  void onSpeculativeTaskStart(const std::string& stageId, const std::string& executorId) override {
    manager_.onTaskStart(stageId, executorId, /*speculative=*/true);
  }
  void onSpeculativeTaskEnd(const std::string& stageId, const std::string& executorId,
                            TaskOutcome outcome) override {
    manager_.onTaskEnd(stageId, executorId, taskEnd(outcome), /*speculative=*/true);
  }
  void onPendingSpeculativeTaskDropped(const std::string& stageId) override {
    manager_.onPendingSpeculativeTaskDropped(stageId);
  }
  void onUnschedulableTaskSetAdded(const std::string& stageId) override {
    manager_.onUnschedulableTaskSetAdded(stageId);
  }
  void onUnschedulableTaskSetRemoved(const std::string& stageId) override {
    manager_.onUnschedulableTaskSetRemoved(stageId);
  }
  void onShuffleOutput(const std::string& executorId, const std::string& shuffleId) override {
    manager_.onShuffleOutput(executorId, shuffleId);
  }
  void onShuffleReleased(const std::string& shuffleId) override {
    manager_.onShuffleReleased(shuffleId);
  }
  void onBlocksCached(const std::string& executorId, const std::string& dataId) override {
    manager_.onBlocksCached(executorId, dataId);
  }
  void onBlocksUncached(const std::string& dataId) override { manager_.onBlocksUncached(dataId); }

 private:
  static allocation::TaskEnd taskEnd(TaskOutcome outcome) {
    using TaskEnd = allocation::TaskEnd;
    return outcome == TaskOutcome::kSucceeded ? TaskEnd::kSuccess
           : outcome == TaskOutcome::kFailed  ? TaskEnd::kFailed
                                              : TaskEnd::kKilled;
  }

  allocation::AllocationPolicy& manager_;
};

}  // namespace tide::am
