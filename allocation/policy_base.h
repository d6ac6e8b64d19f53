#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/allocation_policy.h"
#include "allocation/executor_monitor.h"
#include "allocation/stage_task_counts.h"
#include "common/clock.h"
#include "common/status.h"

namespace tide::allocation {

// What both allocation policies keep and do alike: the config (whose bounds change at runtime),
// the executor monitor fed with executor and data events, the per-stage task counts, the target
// and the decisions made between ticks (bounds changes). A policy adds its own reaction to the
// scheduler's events and one step of the policy per tick.
class PolicyBase : public AllocationPolicy {
 public:
  void addResourceProfile(const ResourceProfile& profile) override;
  void onExecutorAdded(const ExecutorId& id, int profileId = kDefaultProfileId) override {
    monitor_.onExecutorAdded(id, profileId);
  }
  void onExecutorDecommissioning(const ExecutorId& id) override {
    monitor_.markDecommissioning({id});
  }
  void onExecutorRemoved(const ExecutorId& id, ExecutorExit exit = ExecutorExit::kOther) override {
    monitor_.onExecutorRemoved(id, exit);
  }
  void onBlocksCached(const ExecutorId& id, const std::string& dataId) override {
    monitor_.onBlocksCached(id, dataId);
  }
  void onBlocksUncached(const std::string& dataId) override { monitor_.onBlocksUncached(dataId); }
  void onShuffleOutput(const ExecutorId& id, const std::string& shuffleId) override {
    monitor_.onShuffleOutput(id, shuffleId);
  }
  // Shuffle output whose job ended holds its executors for shuffleTracking.timeout only.
  void onShuffleInactive(const std::string& shuffleId) override {
    monitor_.onShuffleInactive(shuffleId);
  }
  void onShuffleReleased(const std::string& shuffleId) override {
    monitor_.onShuffleReleased(shuffleId);
  }

  // Validates the bounds, clips the target into them and records a kBoundsChanged decision for
  // the next tick.
  Status setBounds(Bounds bounds, std::string* warning = nullptr) override;

  // Hands over the decisions made since the last tick, runs step() when dynamic allocation is
  // on, and reports the target.
  TickResult tick() final;

  const ExecutorMonitor& monitor() const override { return monitor_; }
  const AllocationConfig& config() const override { return config_; }

 protected:
  PolicyBase(const AllocationConfig& config, const Clock& clock);

  // The target a policy starts with: initialExecutors (at least minExecutors), or
  // executor.instances when dynamic allocation is off.
  static int startTarget(const AllocationConfig& config);

  // One step of the policy, adding its decisions to `result` (which holds those made between
  // ticks). Called only when dynamic allocation is on; `beforeStep` always.
  virtual void step(TimeMs now, TickResult& result) = 0;
  virtual void beforeStep(TimeMs /*now*/) {}
  // Clips the target(s) into new bounds (one target here; a target per profile in Spark's).
  virtual void clampTargets(const Bounds& bounds);
  // The target of each resource profile, as a tick reports it (here all is the default's).
  virtual std::map<int, int> targetsByProfile() const { return {{kDefaultProfileId, target_}}; }
  // A decision made between ticks, handed over with the next tick.
  void addDecisionForNextTick(Decision decision) {
    pendingDecisions_.push_back(std::move(decision));
  }
  // The executor cores of a profile (the default profile's for one never added).
  const ResourceProfile& profileOf(int profileId) const;

  // Registered executors neither being removed nor decommissioning (Spark's removeExecutors
  // counts executorCount - pendingRemoval - decommissioning).
  int liveExecutors() const {
    return monitor_.executorCount() - monitor_.pendingRemovalCount() -
           monitor_.decommissioningCount();
  }
  // Idle executors the policy lets go: decommissioned with decommission.enabled (Spark's
  // client.decommissionExecutors and executorsDecommissioning), else killed.
  void release(const std::vector<ExecutorId>& ids, TickResult& result);
  // The decision that goes with release(), and its first word: "removing" or "decommissioning".
  Decision::Action releaseAction() const {
    return config_.decommissionEnabled ? Decision::Action::kDecommission
                                       : Decision::Action::kRemove;
  }
  const char* releaseVerb() const {
    return config_.decommissionEnabled ? "decommissioning " : "removing ";
  }
  // The fields both policies report alike (bounds, target, executors, tasks).
  AllocationSnapshot baseSnapshot() const;

  AllocationConfig config_;  // bounds change at runtime; the rest stays as built
  const Clock& clock_;
  ExecutorMonitor monitor_;
  StageTaskCounts tasks_;
  int target_ = 0;
  bool initializing_ = true;  // until the first stage is submitted or an executor idles out
  std::map<int, ResourceProfile> profiles_;  // by id; the default profile always

 private:
  int reportedTarget_ = 0;                  // the target the last tick reported
  std::map<int, int> reportedTargets_;      // and of each profile
  std::vector<Decision> pendingDecisions_;  // made between ticks (bounds changes)
};

}  // namespace tide::allocation
