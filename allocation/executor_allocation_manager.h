#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/allocation_policy.h"
#include "allocation/executor_monitor.h"
#include "allocation/policy_base.h"
#include "common/clock.h"
#include "common/status.h"

namespace tide::allocation {

// Spark's ExecutorAllocationManager: a pure policy fed with scheduler and executor events and
// ticked every `dynamicAllocation.interval`. It owns no threads or sockets; time comes from the
// injected clock. The caller applies TickResult: it asks the resource manager for `target`
// executors in total and releases `toRemove` once they are idle.
class ExecutorAllocationManager final : public PolicyBase {
 public:
  using TaskEnd = allocation::TaskEnd;

  ExecutorAllocationManager(const AllocationConfig& config, const Clock& clock);

  const char* name() const override { return "spark"; }
  // The total to request at start, before any tick (initialExecutors, or executor.instances
  // when dynamic allocation is off).
  int initialTarget() const override { return target_; }

  // Scheduler events. Stage ids are unique over the application's life. The first stage of a
  // resource profile gives that profile a target of initialExecutors (Spark).
  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus = 0,
                        int profileId = kDefaultProfileId) override;
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
  // A stage whose tasks no executor may run (all excluded for failures): as in Spark, maxNeeded
  // is at least the executors there are plus those its tasks would fill, counting each such
  // stage as one task (SPARK-31418), so that new executors come when the old ones are all
  // excluded.
  void onUnschedulableTaskSetAdded(const std::string& stageId) override;
  void onUnschedulableTaskSetRemoved(const std::string& stageId) override;

  // Executor events (onExecutorAdded, ...) and the data executors hold go to the monitor (see
  // PolicyBase).

  // Changes min/initial/max on a running application; the target is clipped into [min, max]
  // at once. kInvalidArgument with a message naming the field (first) when refused.
  Status setBounds(Bounds bounds, std::string* warning = nullptr) override;

  AllocationSnapshot snapshot() const override;
  // Spark's maxNumExecutorsNeededPerResourceProfile.
  int maxNumExecutorsNeeded(int profileId = kDefaultProfileId) const;

 private:
  // Spark's numExecutorsTargetPerResourceProfileId and numExecutorsToAddPerResourceProfileId.
  struct ProfileTarget {
    int target = 0;
    int numExecutorsToAdd = 1;
  };

  // One step of the policy (Spark's schedule()).
  void step(TimeMs now, TickResult& result) override;
  void clampTargets(const Bounds& bounds) override;
  std::map<int, int> targetsByProfile() const override;
  void updateTarget(TimeMs now, TickResult& result);
  void lowerTarget(int profileId, ProfileTarget& profile, int maxNeeded, TickResult& result);
  int addExecutors(int profileId, ProfileTarget& profile, int maxNeeded, TickResult& result);
  void removeExecutors(const std::vector<ExecutorId>& timedOut, TickResult& result);
  void onSchedulerBacklogged();
  void onSchedulerQueueEmpty();
  void sumTargets();
  int targetOf(int profileId) const;
  // "" for the default profile, else "profile 1 (8 cores, 4096 MB): ", to start a reason with.
  std::string profilePrefix(int profileId) const;

  std::map<int, ProfileTarget> targets_;  // the default profile's from the start
  TimeMs addTime_ = -1;
  TimeMs backlogSince_ = -1;             // when the current backlog began, for the reasons
  std::set<std::string> unschedulable_;  // stages with unschedulable tasks (SPARK-31418)
};

}  // namespace tide::allocation
