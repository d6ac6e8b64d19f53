#include "allocation/policy_base.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace tide::allocation {

int PolicyBase::startTarget(const AllocationConfig& config) {
  return config.enabled ? std::max(config.bounds.initialExecutors, config.bounds.minExecutors)
                        : config.executorInstances;
}

PolicyBase::PolicyBase(const AllocationConfig& config, const Clock& clock)
    : config_(config), clock_(clock), monitor_(config_, clock) {
  target_ = startTarget(config_);
  reportedTarget_ = target_;
  reportedTargets_ = {{kDefaultProfileId, target_}};
  ResourceProfile defaultProfile;
  defaultProfile.executorCores = config_.executorCores;
  profiles_.emplace(kDefaultProfileId, defaultProfile);
}

void PolicyBase::addResourceProfile(const ResourceProfile& profile) {
  if (profile.id == kDefaultProfileId) return;  // the application's executor.cores
  profiles_.emplace(profile.id, profile);
}

const ResourceProfile& PolicyBase::profileOf(int profileId) const {
  auto it = profiles_.find(profileId);
  return it == profiles_.end() ? profiles_.at(kDefaultProfileId) : it->second;
}

void PolicyBase::clampTargets(const Bounds& bounds) {
  target_ = std::clamp(target_, bounds.minExecutors, bounds.maxExecutors);
}

Status PolicyBase::setBounds(Bounds bounds, std::string* warning) {
  std::string error = validateBounds(bounds, warning);
  if (!error.empty()) return Status::invalidArgument(std::move(error));
  const Bounds old = config_.bounds;
  config_.bounds = bounds;
  const int before = target_;
  if (config_.enabled) clampTargets(bounds);
  std::ostringstream why;
  why << "bounds changed from [" << old.minExecutors << ", " << old.maxExecutors << "] to ["
      << bounds.minExecutors << ", " << bounds.maxExecutors << "]";
  if (target_ != before) why << "; target " << before << " -> " << target_;
  pendingDecisions_.push_back({Decision::Action::kBoundsChanged, target_, "", why.str()});
  return Status();
}

TickResult PolicyBase::tick() {
  TickResult result;
  result.previousTarget = reportedTarget_;
  result.decisions = std::move(pendingDecisions_);
  pendingDecisions_.clear();
  const TimeMs now = clock_.nowMs();
  beforeStep(now);
  if (config_.enabled) step(now, result);
  result.target = target_;
  result.previousTargets = reportedTargets_;
  result.targets = targetsByProfile();
  reportedTarget_ = target_;
  reportedTargets_ = result.targets;
  return result;
}

void PolicyBase::release(const std::vector<ExecutorId>& ids, TickResult& result) {
  if (config_.decommissionEnabled) {
    monitor_.markDecommissioning(ids);
    result.toDecommission.insert(result.toDecommission.end(), ids.begin(), ids.end());
  } else {
    monitor_.markPendingRemoval(ids);
    result.toRemove.insert(result.toRemove.end(), ids.begin(), ids.end());
  }
}

AllocationSnapshot PolicyBase::baseSnapshot() const {
  AllocationSnapshot s;
  s.bounds = config_.bounds;
  s.target = target_;
  s.initializing = initializing_;
  s.live = monitor_.executorCount();
  s.pendingRemoval = monitor_.pendingRemovalCount();
  s.decommissioning = monitor_.decommissioningCount();
  s.busy = monitor_.busyCount();
  s.idle = s.live - s.busy;
  s.pendingTasks = tasks_.pending();
  s.pendingSpeculativeTasks = tasks_.pendingSpeculative();
  s.runningTasks = tasks_.running();
  ProfileSnapshot defaultProfile;
  defaultProfile.profile = profiles_.at(kDefaultProfileId);
  defaultProfile.target = target_;
  defaultProfile.live = s.live;
  defaultProfile.pendingRemoval = s.pendingRemoval;
  defaultProfile.pendingTasks = s.pendingTasks + s.pendingSpeculativeTasks;
  defaultProfile.runningTasks = s.runningTasks;
  s.profiles.push_back(defaultProfile);
  return s;
}

}  // namespace tide::allocation
