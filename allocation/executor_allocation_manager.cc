#include "allocation/executor_allocation_manager.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>

#include "common/config.h"
#include "common/enum_names.h"

namespace tide::allocation {
namespace {

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "1.0s", "250ms", "2min": how long something has been going on, as a person reads it.
std::string elapsed(DurationMs ms) {
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  if (ms < 120000) {
    out << static_cast<double>(ms) / 1000.0 << "s";
  } else {
    out << static_cast<double>(ms) / 60000.0 << "min";
  }
  return out.str();
}

}  // namespace

const char* actionName(Decision::Action action) {
  static constexpr const char* kNames[] = {"raise_target", "lower_target", "not_adding",
                                           "remove",       "keep",         "bounds_changed",
                                           "decommission"};
  return enumName(action, kNames, "unknown");
}

ExecutorAllocationManager::ExecutorAllocationManager(const AllocationConfig& config,
                                                     const Clock& clock)
    : PolicyBase(config, clock) {
  targets_[kDefaultProfileId].target = target_;
}

int ExecutorAllocationManager::maxNumExecutorsNeeded(int profileId) const {
  const StageTaskCounts::ProfileTasks tasks = tasks_.ofProfile(profileId);
  if (tasks.total() <= 0) return 0;
  const int cores = profileOf(profileId).executorCores;
  // Spark's maxNumExecutorsNeededPerResourceProfile, with each stage's tasks packed at its own
  // tasks per executor (the profile's executor cores / the stage's cpus per task): a stage of
  // 4-cpu tasks on 4-core executors needs an executor per task, not a quarter of one.
  const double filled = tasks_.executorsFilled(cores, config_.taskCpus, profileId);
  const double needed = std::ceil(filled * config_.executorAllocationRatio - 1e-9);
  if (needed >= static_cast<double>(INT_MAX)) return INT_MAX;
  // As in Spark: a speculative copy never runs on its original's executor, so when one executor
  // would hold every task and a copy is pending, one more is needed for the copy to start.
  int maxNeeded = static_cast<int>(needed);
  if (needed == 1.0 &&
      tasks_.speculativePendingOnSharedExecutor(cores, config_.taskCpus, profileId)) {
    maxNeeded = 2;
  }
  // SPARK-31418: stages whose tasks every executor is excluded for need executors beyond those
  // there are, one task's worth per stage (Spark does not know how many tasks are stuck).
  int64_t unschedulable = 0;
  for (const std::string& stageId : unschedulable_) {
    auto stage = tasks_.stages().find(stageId);
    if (stage != tasks_.stages().end() && stage->second.profileId == profileId) ++unschedulable;
  }
  if (unschedulable > 0) {
    const double extra =
        std::ceil(static_cast<double>(unschedulable) * config_.executorAllocationRatio /
                  static_cast<double>(StageTaskCounts::tasksPerExecutor(cores, config_.taskCpus)));
    maxNeeded =
        std::max(maxNeeded, monitor_.executorCountWithProfile(profileId) + static_cast<int>(extra));
  }
  return maxNeeded;
}

int ExecutorAllocationManager::targetOf(int profileId) const {
  auto it = targets_.find(profileId);
  return it == targets_.end() ? 0 : it->second.target;
}

void ExecutorAllocationManager::sumTargets() {
  int64_t total = 0;
  for (const auto& [id, profile] : targets_) total += profile.target;
  target_ = static_cast<int>(std::min<int64_t>(total, INT_MAX));
}

std::map<int, int> ExecutorAllocationManager::targetsByProfile() const {
  std::map<int, int> targets;
  for (const auto& [id, profile] : targets_) targets[id] = profile.target;
  return targets;
}

std::string ExecutorAllocationManager::profilePrefix(int profileId) const {
  if (profileId == kDefaultProfileId) return "";
  return profileOf(profileId).describe() + ": ";
}

void ExecutorAllocationManager::clampTargets(const Bounds& bounds) {
  // As Spark applies min and max: to each profile's target.
  for (auto& [id, profile] : targets_) {
    profile.target = std::clamp(profile.target, bounds.minExecutors, bounds.maxExecutors);
  }
  sumTargets();
}

void ExecutorAllocationManager::onSchedulerBacklogged() {
  if (addTime_ >= 0) return;  // already armed: a failure or a new stage does not push it back
  const TimeMs now = clock_.nowMs();
  addTime_ = addSaturating(now, config_.schedulerBacklogTimeout);
  if (backlogSince_ < 0) backlogSince_ = now;
}

void ExecutorAllocationManager::onSchedulerQueueEmpty() {
  addTime_ = -1;
  backlogSince_ = -1;
  for (auto& [id, profile] : targets_) profile.numExecutorsToAdd = 1;
}

void ExecutorAllocationManager::onStageSubmitted(const std::string& stageId, int64_t numTasks,
                                                 int taskCpus, int profileId) {
  initializing_ = false;
  tasks_.onStageSubmitted(stageId, numTasks, taskCpus, profileId);
  if (numTasks > 0) onSchedulerBacklogged();
  if (targets_.count(profileId) == 0) {
    // Spark: a profile's first stage starts it at the initial number of executors, requested
    // at once (the next tick reports it).
    ProfileTarget& profile = targets_[profileId];
    profile.target = config_.enabled ? startTarget(config_) : 0;
    sumTargets();
    if (profile.target > 0) {
      addDecisionForNextTick({Decision::Action::kRaiseTarget, target_, "",
                              profilePrefix(profileId) + "initial target " +
                                  std::to_string(profile.target) + " for its first stage " +
                                  stageId + " (initialExecutors)",
                              profileId});
    }
  }
}

void ExecutorAllocationManager::onStageCompleted(const std::string& stageId) {
  // A completed stage has nothing left to schedule.
  unschedulable_.erase(stageId);
  if (tasks_.onStageCompleted(stageId) == StageTaskCounts::Change::kUnknownStage) return;
  if (!tasks_.hasPending()) onSchedulerQueueEmpty();
}

void ExecutorAllocationManager::onTaskStart(const std::string& stageId, const ExecutorId& executor,
                                            bool speculative) {
  tasks_.onTaskStart(stageId, speculative);
  monitor_.onTaskStart(executor);
  if (!tasks_.hasPending()) onSchedulerQueueEmpty();
}

void ExecutorAllocationManager::onTaskEnd(const std::string& stageId, const ExecutorId& executor,
                                          TaskEnd how, bool speculative) {
  monitor_.onTaskEnd(executor);
  // A failed task will be retried: make sure there will be an executor to run it (SPARK-8366).
  const bool failed = how == TaskEnd::kFailed;
  if (tasks_.onTaskEnd(stageId, failed && !speculative) == StageTaskCounts::Change::kUnknownStage) {
    return;
  }
  if (failed) onSchedulerBacklogged();
}

void ExecutorAllocationManager::onSpeculativeTaskSubmitted(const std::string& stageId) {
  tasks_.onSpeculativeTaskSubmitted(stageId);
  onSchedulerBacklogged();
}

void ExecutorAllocationManager::onPendingSpeculativeTaskDropped(const std::string& stageId) {
  if (tasks_.dropPendingSpeculative(stageId) && !tasks_.hasPending()) onSchedulerQueueEmpty();
}

void ExecutorAllocationManager::onUnschedulableTaskSetAdded(const std::string& stageId) {
  unschedulable_.insert(stageId);
  onSchedulerBacklogged();
}

void ExecutorAllocationManager::onUnschedulableTaskSetRemoved(const std::string& stageId) {
  unschedulable_.erase(stageId);
}

Status ExecutorAllocationManager::setBounds(Bounds bounds, std::string* warning) {
  const std::map<int, int> before = targetsByProfile();
  Status status = PolicyBase::setBounds(bounds, warning);
  for (auto& [id, profile] : targets_) {
    if (profile.target < before.at(id)) profile.numExecutorsToAdd = 1;
  }
  return status;
}

void ExecutorAllocationManager::step(TimeMs now, TickResult& result) {
  const std::vector<ExecutorId>& timedOut = monitor_.timedOutExecutors();
  // An executor idling out ends the initial phase: the first job may never come.
  if (!timedOut.empty()) initializing_ = false;
  updateTarget(now, result);
  if (!timedOut.empty()) removeExecutors(timedOut, result);
}

void ExecutorAllocationManager::updateTarget(TimeMs now, TickResult& result) {
  // While initializing the target is never lowered, or the first job would have to ramp up
  // from nothing.
  if (initializing_) return;
  // As Spark: every profile's target is updated, then one request carries them all; the
  // backlog timer is one for all profiles, re-armed when any profile's target rose.
  const bool due = addTime_ >= 0 && now >= addTime_;
  bool added = false;
  for (auto& [id, profile] : targets_) {
    const int maxNeeded = maxNumExecutorsNeeded(id);
    if (maxNeeded < profile.target) {
      lowerTarget(id, profile, maxNeeded, result);
    } else if (due) {
      const int delta = addExecutors(id, profile, maxNeeded, result);
      if (delta > 0) {
        // Exponential ramp: double the step while each step is taken whole.
        profile.numExecutorsToAdd = delta == profile.numExecutorsToAdd
                                        ? std::min(profile.numExecutorsToAdd, INT_MAX / 2) * 2
                                        : 1;
        added = true;
      }
    }
  }
  if (added) addTime_ = addSaturating(now, config_.sustainedSchedulerBacklogTimeout);
}

void ExecutorAllocationManager::lowerTarget(int profileId, ProfileTarget& profile, int maxNeeded,
                                            TickResult& result) {
  // Lowering only cancels pending requests; idle executors go by their own timeout.
  const int before = profile.target;
  profile.target = std::max(maxNeeded, config_.bounds.minExecutors);
  profile.numExecutorsToAdd = 1;
  if (profile.target == before) return;
  const int totalBefore = target_;
  sumTargets();
  const StageTaskCounts::ProfileTasks tasks = tasks_.ofProfile(profileId);
  std::ostringstream why;
  why << profilePrefix(profileId) << "lowered target " << before << " -> " << profile.target;
  if (profileId != kDefaultProfileId) why << " (total " << totalBefore << " -> " << target_ << ")";
  why << ": " << plural(maxNeeded, "executor", "executors") << " needed for "
      << plural(tasks.pending + tasks.pendingSpeculative, "pending task", "pending tasks")
      << " and " << plural(tasks.running, "running task", "running tasks");
  if (profile.target > maxNeeded) why << " (minExecutors=" << config_.bounds.minExecutors << ")";
  result.decisions.push_back({Decision::Action::kLowerTarget, target_, "", why.str(), profileId});
}

int ExecutorAllocationManager::addExecutors(int profileId, ProfileTarget& profile, int maxNeeded,
                                            TickResult& result) {
  const int before = profile.target;
  const StageTaskCounts::ProfileTasks tasks = tasks_.ofProfile(profileId);
  const int64_t backlog = tasks.pending + tasks.pendingSpeculative;
  const std::string prefix = profilePrefix(profileId);
  // As Spark: min and max bound each profile's target.
  if (before >= config_.bounds.maxExecutors) {
    profile.numExecutorsToAdd = 1;
    result.decisions.push_back(
        {Decision::Action::kNotAdding, target_, "",
         prefix + "not adding: at maxExecutors=" + std::to_string(config_.bounds.maxExecutors) +
             " with " + plural(backlog, "pending task", "pending tasks"),
         profileId});
    return 0;
  }
  // No point ramping up through the executors we already have.
  int64_t target = std::max(before, monitor_.executorCountWithProfile(profileId));
  target += profile.numExecutorsToAdd;
  target = std::min<int64_t>(target, maxNeeded);
  target = std::max<int64_t>(std::min<int64_t>(target, config_.bounds.maxExecutors),
                             config_.bounds.minExecutors);
  profile.target = static_cast<int>(target);
  const int delta = profile.target - before;
  if (delta == 0) {
    profile.numExecutorsToAdd = 1;
    result.decisions.push_back({Decision::Action::kNotAdding, target_, "",
                                prefix + "not adding: target " + std::to_string(profile.target) +
                                    " covers the " + plural(maxNeeded, "executor", "executors") +
                                    " needed for " +
                                    plural(backlog, "pending task", "pending tasks") + " and " +
                                    plural(tasks.running, "running task", "running tasks"),
                                profileId});
    return 0;
  }
  sumTargets();
  std::ostringstream why;
  why << prefix << "added " << delta << " (backlog of " << plural(backlog, "task", "tasks")
      << " for " << elapsed(clock_.nowMs() - backlogSince_) << "), target " << profile.target;
  if (profile.target == config_.bounds.maxExecutors) {
    why << " (maxExecutors)";
  } else if (profile.target == maxNeeded) {
    why << " (all that is needed)";
  }
  if (profileId != kDefaultProfileId) why << ", total " << target_;
  std::vector<std::string> stuck;
  for (const std::string& stageId : unschedulable_) {
    auto stage = tasks_.stages().find(stageId);
    const int stageProfile =
        stage == tasks_.stages().end() ? kDefaultProfileId : stage->second.profileId;
    if (stageProfile == profileId) stuck.push_back(stageId);
  }
  if (!stuck.empty()) {
    // SPARK-31418: say which stages asked for executors beyond the live ones, and why.
    why << "; unschedulable: every executor is excluded for stage";
    if (stuck.size() > 1) why << "s";
    for (size_t shown = 0; shown < stuck.size(); ++shown) {
      if (shown == 3) {
        why << ", ...";
        break;
      }
      why << (shown == 0 ? " " : ", ") << stuck[shown];
    }
  }
  result.decisions.push_back({Decision::Action::kRaiseTarget, target_, "", why.str(), profileId});
  return delta;
}

void ExecutorAllocationManager::removeExecutors(const std::vector<ExecutorId>& timedOut,
                                                TickResult& result) {
  const TimeMs now = clock_.nowMs();
  // As Spark, per resource profile: never below min nor below the profile's target (which is
  // never below min).
  struct Left {
    int remaining = 0;
    int floor = 0;
    std::vector<ExecutorId> kept;
  };
  std::map<int, Left> byProfile;
  const auto leftOf = [&](int profileId) -> Left& {
    auto it = byProfile.find(profileId);
    if (it != byProfile.end()) return it->second;
    Left& left = byProfile[profileId];
    left.remaining = monitor_.executorCountWithProfile(profileId) -
                     monitor_.pendingRemovalCountWithProfile(profileId) -
                     monitor_.decommissioningCountWithProfile(profileId);
    left.floor = std::max(config_.bounds.minExecutors, targetOf(profileId));
    return left;
  };
  // With executors of one profile only, once its floor is reached every further executor is
  // kept, so the rest of the list is not looked at: a thousand executors kept at min cost one
  // decision and no walk, not a thousand.
  const bool oneProfile = monitor_.executorsByProfile().size() <= 1;
  std::vector<ExecutorId> removed;
  size_t next = 0;
  for (; next < timedOut.size(); ++next) {
    const ExecutorTracker* tracker = monitor_.find(timedOut[next]);
    if (tracker == nullptr) continue;
    Left& left = leftOf(tracker->profileId);
    if (left.remaining - 1 < left.floor) {
      if (oneProfile) {
        left.kept.assign(timedOut.begin() + static_cast<std::ptrdiff_t>(next), timedOut.end());
        break;
      }
      left.kept.push_back(tracker->id);
      continue;
    }
    std::string why = profilePrefix(tracker->profileId) + releaseVerb() + tracker->id +
                      ": idle for " + elapsed(now - tracker->idleSince);
    if (!tracker->cachedData.empty()) why += " with cached data";
    removed.push_back(tracker->id);
    --left.remaining;
    result.decisions.push_back({releaseAction(), target_, tracker->id, why, tracker->profileId});
  }
  for (const auto& [profileId, left] : byProfile) {
    if (left.kept.empty()) continue;
    const int target = targetOf(profileId);
    const std::string because =
        target > config_.bounds.minExecutors
            ? "the target is " + std::to_string(target)
            : "at minExecutors=" + std::to_string(config_.bounds.minExecutors);
    const ExecutorTracker* first = monitor_.find(left.kept.front());
    std::string why = profilePrefix(profileId);
    if (left.kept.size() == 1 && first != nullptr) {
      why += "keeping " + first->id + ": idle for " + elapsed(now - first->idleSince) + " but " +
             because;
    } else {
      why += "keeping " + std::to_string(left.kept.size()) + " idle executors (";
      const size_t shown = std::min<size_t>(left.kept.size(), 3);
      for (size_t i = 0; i < shown; ++i) why += (i > 0 ? ", " : "") + left.kept[i];
      why += left.kept.size() > shown ? ", ...) but " : ") but ";
      why += because;
    }
    result.decisions.push_back(
        {Decision::Action::kKeep, target_, left.kept.front(), why, profileId});
  }
  release(removed, result);
}

AllocationSnapshot ExecutorAllocationManager::snapshot() const {
  AllocationSnapshot s = baseSnapshot();
  s.profiles.clear();
  s.maxNeeded = 0;
  for (const auto& [id, target] : targets_) {
    ProfileSnapshot p;
    p.profile = profileOf(id);
    p.profile.id = id;
    p.target = target.target;
    p.maxNeeded = maxNumExecutorsNeeded(id);
    p.numExecutorsToAdd = target.numExecutorsToAdd;
    p.live = monitor_.executorCountWithProfile(id);
    p.pendingRemoval = monitor_.pendingRemovalCountWithProfile(id);
    const StageTaskCounts::ProfileTasks tasks = tasks_.ofProfile(id);
    p.pendingTasks = tasks.pending + tasks.pendingSpeculative;
    p.runningTasks = tasks.running;
    s.maxNeeded = static_cast<int>(std::min<int64_t>(int64_t{s.maxNeeded} + p.maxNeeded, INT_MAX));
    s.profiles.push_back(p);
  }
  s.numExecutorsToAdd = targets_.at(kDefaultProfileId).numExecutorsToAdd;
  s.addTime = addTime_;
  return s;
}

}  // namespace tide::allocation
