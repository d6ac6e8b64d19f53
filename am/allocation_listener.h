#pragma once

// Feeds the task scheduler's events to the dynamic allocation policy, which sizes the executor
// set from pending and running tasks. Job ends are not the policy's business.

#include "allocation/executor_allocation_manager.h"
#include "am/scheduler_listener.h"

namespace tide::am {

class AllocationListener : public SchedulerListener {
 public:
  explicit AllocationListener(allocation::ExecutorAllocationManager& manager) : manager_(manager) {}

  void onStageSubmitted(const std::string& stageId, int64_t numTasks) override {
    manager_.onStageSubmitted(stageId, numTasks);
  }
  void onStageCompleted(const std::string& stageId) override { manager_.onStageCompleted(stageId); }
  void onTaskStart(const std::string& stageId, const std::string& executorId) override {
    manager_.onTaskStart(stageId, executorId);
  }
  void onTaskEnd(const std::string& stageId, const std::string& executorId,
                 TaskOutcome outcome) override {
    using TaskEnd = allocation::ExecutorAllocationManager::TaskEnd;
    const TaskEnd how = outcome == TaskOutcome::kSucceeded ? TaskEnd::kSuccess
                        : outcome == TaskOutcome::kFailed  ? TaskEnd::kFailed
                                                           : TaskEnd::kKilled;
    manager_.onTaskEnd(stageId, executorId, how);
  }
  void onJobEnd(const std::string&, bool, const std::string&) override {}

 private:
  allocation::ExecutorAllocationManager& manager_;
};

}  // namespace tide::am
