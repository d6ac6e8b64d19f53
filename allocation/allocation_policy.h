#pragma once

// The dynamic allocation policy as the application master and the simulator see it: fed with
// scheduler and executor events, ticked every dynamicAllocation.interval, answering with the
// total of executors to hold and the idle executors to release. Two implementations:
// ExecutorAllocationManager (Spark's exact policy, `dynamicAllocation.policy=spark`, the
// default) and AdaptiveAllocationPolicy (`dynamicAllocation.policy=adaptive`). Both are pure:
// no threads or sockets, time from the injected Clock.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/executor_monitor.h"
#include "allocation/resource_profile.h"
#include "common/clock.h"
#include "common/status.h"

namespace tide::allocation {

// One decision of the policy, with the reason a person can read. Non-actions are decisions too:
// "not adding: at maxExecutors=8" answers "why is it not scaling?".
struct Decision {
  enum class Action {
    kRaiseTarget,    // more executors requested
    kLowerTarget,    // pending requests cancelled (never kills an executor)
    kNotAdding,      // the backlog timer fired but the target could not rise
    kRemove,         // an idle executor is released
    kKeep,           // an idle executor is past its deadline but kept (min or target)
    kBoundsChanged,  // the bounds were changed at runtime
    kDecommission    // an idle executor is decommissioned (decommission.enabled): it stops
                     // taking tasks, migrates its blocks, then exits
  };
  Action action;
  int target = 0;       // the target after this decision (over all profiles)
  ExecutorId executor;  // for kRemove / kKeep / kDecommission
  std::string why;
  int profileId = kDefaultProfileId;  // the resource profile whose target or executor it is
};

const char* actionName(Decision::Action action);

// What a tick asks of the world: the total to hold (and how many of each resource profile) and
// the executors to release: killed (toRemove), or decommissioned (toDecommission, with
// decommission.enabled: each stops taking tasks, hands its blocks to peers, and only then exits).
struct TickResult {
  int previousTarget = 0;
  int target = 0;  // the sum of `targets`
  std::map<int, int> previousTargets;
  std::map<int, int> targets;  // resource profile id -> executors of that profile to hold
  std::vector<ExecutorId> toRemove;
  std::vector<ExecutorId> toDecommission;
  std::vector<Decision> decisions;
  bool targetChanged() const { return target != previousTarget || targets != previousTargets; }
};

// One resource profile's part of the policy's state (Spark keeps a target, a step and a
// maxNeeded per profile).
struct ProfileSnapshot {
  ResourceProfile profile;
  int target = 0;
  int maxNeeded = 0;
  int numExecutorsToAdd = 1;
  int live = 0;  // registered executors of the profile (including those being removed)
  int pendingRemoval = 0;
  int64_t pendingTasks = 0;  // with pending speculative copies
  int64_t runningTasks = 0;
};

// The policy's state at a glance (for the status API and the simulator).
struct AllocationSnapshot {
  Bounds bounds;
  int target = 0;
  int maxNeeded = 0;
  int numExecutorsToAdd = 1;
  bool initializing = true;
  TimeMs addTime = -1;  // when the backlog timer fires; -1 when not armed
  int live = 0;         // registered executors (including those being removed)
  int pendingRemoval = 0;
  int decommissioning = 0;
  int busy = 0;
  int idle = 0;
  int64_t pendingTasks = 0;
  int64_t pendingSpeculativeTasks = 0;
  int64_t runningTasks = 0;
  // Per resource profile, by id; the default profile always. `target`, `maxNeeded` and the
  // executor counts above are the sums; `numExecutorsToAdd` is the default profile's.
  std::vector<ProfileSnapshot> profiles;
};

// How a task attempt ended, as the policy counts it.
enum class TaskEnd { kSuccess, kFailed, kKilled };

class AllocationPolicy {
 public:
  virtual ~AllocationPolicy() = default;

  // "spark" or "adaptive": the value of dynamicAllocation.policy.
  virtual const char* name() const = 0;

  // The total to request at start, before any tick (initialExecutors, or executor.instances
  // when dynamic allocation is off).
  virtual int initialTarget() const = 0;

  // A resource profile stages may use (Spark's ResourceProfileManager.addResourceProfile): its
  // executor shape. The default profile (id 0) is the application's executor.cores; adding a
  // profile again changes nothing.
  virtual void addResourceProfile(const ResourceProfile& profile) = 0;

  // Scheduler events. Stage ids are unique over the application's life. `taskCpus` is the cpus
  // each of the stage's tasks takes (0: task.cpus); the stage's tasks are packed at its
  // profile's executor cores / taskCpus per executor when sizing that profile's executors.
  // `profileId` is the stage's resource profile (added before).
  virtual void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus = 0,
                                int profileId = kDefaultProfileId) = 0;
  // The stage finished or was aborted: its pending and speculative tasks no longer count.
  virtual void onStageCompleted(const std::string& stageId) = 0;
  virtual void onTaskStart(const std::string& stageId, const ExecutorId& executor,
                           bool speculative = false) = 0;
  // A failed non-speculative task goes back to pending (it will be retried); a killed task
  // (e.g. the losing speculative copy) does not.
  virtual void onTaskEnd(const std::string& stageId, const ExecutorId& executor, TaskEnd how,
                         bool speculative = false) = 0;
  virtual void onSpeculativeTaskSubmitted(const std::string& stageId) = 0;
  // The original of a task marked for speculation succeeded before its copy launched.
  virtual void onPendingSpeculativeTaskDropped(const std::string& /*stageId*/) {}
  // Every executor the stage's pending tasks could run on is excluded for failures (Spark's
  // SparkListenerUnschedulableTaskSetAdded), and again schedulable (...Removed): while it is
  // unschedulable the policy asks for executors beyond those it has (SPARK-31418).
  virtual void onUnschedulableTaskSetAdded(const std::string& /*stageId*/) {}
  virtual void onUnschedulableTaskSetRemoved(const std::string& /*stageId*/) {}

  // Executor events. When an executor is lost with tasks running, report those tasks with
  // onTaskEnd(kFailed) first. `profileId`: the resource profile the executor was started for.
  // `exit` says whether it went having finished its decommissioning (the removal counters,
  // SPARK-33763).
  virtual void onExecutorAdded(const ExecutorId& id, int profileId = kDefaultProfileId) = 0;
  // Decommissioning that the policy did not choose (the executor was asked to leave, SIGPWR):
  // from now on it is counted as decommissioning, as if the policy had released it.
  virtual void onExecutorDecommissioning(const ExecutorId& /*id*/) {}
  virtual void onExecutorRemoved(const ExecutorId& id,
                                 ExecutorExit exit = ExecutorExit::kOther) = 0;

  // Data held by executors: persisted (cached) stages and shuffle output of active jobs.
  virtual void onBlocksCached(const ExecutorId& id, const std::string& dataId) = 0;
  virtual void onBlocksUncached(const std::string& dataId) = 0;
  virtual void onShuffleOutput(const ExecutorId& id, const std::string& shuffleId) = 0;
  // A shuffle's job ended but its data stays (until onShuffleReleased, when it is cleaned).
  virtual void onShuffleInactive(const std::string& shuffleId) = 0;
  virtual void onShuffleReleased(const std::string& shuffleId) = 0;

  // Changes min/initial/max on a running application; the target is clipped into [min, max]
  // at once. kInvalidArgument with a message naming the field (first) when refused.
  virtual Status setBounds(Bounds bounds, std::string* warning = nullptr) = 0;

  // One step of the policy.
  virtual TickResult tick() = 0;

  virtual AllocationSnapshot snapshot() const = 0;
  virtual const ExecutorMonitor& monitor() const = 0;
  virtual const AllocationConfig& config() const = 0;
};

// The policy `config.policy` names.
std::unique_ptr<AllocationPolicy> makeAllocationPolicy(const AllocationConfig& config,
                                                       const Clock& clock);

}  // namespace tide::allocation
