#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/allocation_policy.h"
#include "allocation/executor_monitor.h"
#include "common/clock.h"
#include "common/status.h"

namespace tide::allocation {

// Spark's ExecutorAllocationManager: a pure policy fed with scheduler and executor events and
// ticked every `dynamicAllocation.interval`. It owns no threads or sockets; time comes from the
// injected clock. The caller applies TickResult: it asks the resource manager for `target`
// executors in total and releases `toRemove` once they are idle.
class ExecutorAllocationManager final : public AllocationPolicy {
 public:
  using TaskEnd = allocation::TaskEnd;

  ExecutorAllocationManager(const AllocationConfig& config, const Clock& clock);

  const char* name() const override { return "spark"; }
  // The total to request at start, before any tick (initialExecutors, or executor.instances
  // when dynamic allocation is off).
  int initialTarget() const override { return target_; }

  // Scheduler events. Stage ids are unique over the application's life.
  void onStageSubmitted(const std::string& stageId, int64_t numTasks) override;
  // The stage finished or was aborted: its pending and speculative tasks no longer count.
  void onStageCompleted(const std::string& stageId) override;
  void onTaskStart(const std::string& stageId, const ExecutorId& executor,
                   bool speculative = false) override;
  // A failed non-speculative task goes back to pending (it will be retried) and re-arms the
  // backlog timer; a killed task (e.g. the losing speculative copy) does not.
  void onTaskEnd(const std::string& stageId, const ExecutorId& executor, TaskEnd how,
                 bool speculative = false) override;
  void onSpeculativeTaskSubmitted(const std::string& stageId) override;
  // A task marked for speculation succeeded before its copy launched: the copy will never run,
  // so it no longer counts as pending (Spark drops it when the original succeeds).
  void onPendingSpeculativeTaskDropped(const std::string& stageId) override;

  // Executor events. When an executor is lost with tasks running, report those tasks with
  // onTaskEnd(kFailed) first.
  void onExecutorAdded(const ExecutorId& id) override;
  void onExecutorRemoved(const ExecutorId& id) override;

  // Data held by executors: persisted (cached) stages, and shuffle output (written, its job
  // ended, cleaned: see ExecutorMonitor).
  void onBlocksCached(const ExecutorId& id, const std::string& dataId) override;
  void onBlocksUncached(const std::string& dataId) override;
  void onShuffleOutput(const ExecutorId& id, const std::string& shuffleId) override;
  void onShuffleInactive(const std::string& shuffleId) override;
  void onShuffleReleased(const std::string& shuffleId) override;

  // Changes min/initial/max on a running application; the target is clipped into [min, max]
  // at once. kInvalidArgument with a message naming the field (first) when refused.
  Status setBounds(Bounds bounds, std::string* warning = nullptr) override;

  // One step of the policy (Spark's schedule()).
  TickResult tick() override;

  AllocationSnapshot snapshot() const override;
  const ExecutorMonitor& monitor() const override { return monitor_; }
  const AllocationConfig& config() const override { return config_; }
  int maxNumExecutorsNeeded() const;

 private:
  struct StageTasks {
    int64_t pending = 0;
    int64_t pendingSpeculative = 0;
    int64_t running = 0;
    bool active = true;  // submitted and not yet completed
  };

  void updateTarget(TimeMs now, TickResult& result);
  int addExecutors(int maxNeeded, TickResult& result);
  void removeExecutors(const std::vector<ExecutorId>& timedOut, TickResult& result);
  void onSchedulerBacklogged();
  void onSchedulerQueueEmpty();
  bool hasPendingTasks() const { return pendingTasks_ + pendingSpeculativeTasks_ > 0; }

  AllocationConfig config_;  // bounds change at runtime; the rest stays as built
  const Clock& clock_;
  ExecutorMonitor monitor_;
  std::unordered_map<std::string, StageTasks> stages_;
  int64_t pendingTasks_ = 0;
  int64_t pendingSpeculativeTasks_ = 0;
  int64_t runningTasks_ = 0;
  int target_ = 0;
  int numExecutorsToAdd_ = 1;
  bool initializing_ = true;
  TimeMs addTime_ = -1;
  TimeMs backlogSince_ = -1;                // when the current backlog began, for the reasons
  int reportedTarget_ = 0;                  // the target the last tick reported
  std::vector<Decision> pendingDecisions_;  // made between ticks (bounds changes)
};

}  // namespace tide::allocation
