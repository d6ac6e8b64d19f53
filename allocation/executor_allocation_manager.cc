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
    : PolicyBase(config, clock) {}

int ExecutorAllocationManager::maxNumExecutorsNeeded() const {
  if (tasks_.total() <= 0) return 0;
  // Spark's maxNumExecutorsNeededPerResourceProfile, with each stage's tasks packed at its own
  // tasks per executor (executor.cores / the stage's cpus per task): a stage of 4-cpu tasks on
  // 4-core executors needs an executor per task, not a quarter of one.
  const double filled = tasks_.executorsFilled(config_.executorCores, config_.taskCpus);
  const double needed = std::ceil(filled * config_.executorAllocationRatio - 1e-9);
  if (needed >= static_cast<double>(INT_MAX)) return INT_MAX;
  // As in Spark: a speculative copy never runs on its original's executor, so when one executor
  // would hold every task and a copy is pending, one more is needed for the copy to start.
  int maxNeeded = static_cast<int>(needed);
  if (needed == 1.0 &&
      tasks_.speculativePendingOnSharedExecutor(config_.executorCores, config_.taskCpus)) {
    maxNeeded = 2;
  }
  // SPARK-31418: stages whose tasks every executor is excluded for need executors beyond those
  // there are, one task's worth per stage (Spark does not know how many tasks are stuck).
  int64_t unschedulable = 0;
  for (const std::string& stageId : unschedulable_) unschedulable += tasks_.stages().count(stageId);
  if (unschedulable > 0) {
    const double extra =
        std::ceil(static_cast<double>(unschedulable) * config_.executorAllocationRatio /
                  static_cast<double>(config_.tasksPerExecutor()));
    maxNeeded = std::max(maxNeeded, monitor_.executorCount() + static_cast<int>(extra));
  }
  return maxNeeded;
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
  numExecutorsToAdd_ = 1;
}

void ExecutorAllocationManager::onStageSubmitted(const std::string& stageId, int64_t numTasks,
                                                 int taskCpus) {
  initializing_ = false;
  tasks_.onStageSubmitted(stageId, numTasks, taskCpus);
  if (numTasks > 0) onSchedulerBacklogged();
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

void ExecutorAllocationManager::onShuffleInactive(const std::string& shuffleId) {
  monitor_.onShuffleInactive(shuffleId);
}

Status ExecutorAllocationManager::setBounds(Bounds bounds, std::string* warning) {
  const int before = target_;
  Status status = PolicyBase::setBounds(bounds, warning);
  if (target_ < before) numExecutorsToAdd_ = 1;
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
  const int maxNeeded = maxNumExecutorsNeeded();
  if (maxNeeded < target_) {
    // Lowering only cancels pending requests; idle executors go by their own timeout.
    const int before = target_;
    target_ = std::max(maxNeeded, config_.bounds.minExecutors);
    numExecutorsToAdd_ = 1;
    if (target_ != before) {
      std::ostringstream why;
      why << "lowered target " << before << " -> " << target_ << ": "
          << plural(maxNeeded, "executor", "executors") << " needed for "
          << plural(tasks_.pending() + tasks_.pendingSpeculative(), "pending task", "pending tasks")
          << " and " << plural(tasks_.running(), "running task", "running tasks");
      if (target_ > maxNeeded) why << " (minExecutors=" << config_.bounds.minExecutors << ")";
      result.decisions.push_back({Decision::Action::kLowerTarget, target_, "", why.str()});
    }
  } else if (addTime_ >= 0 && now >= addTime_) {
    const int delta = addExecutors(maxNeeded, result);
    if (delta > 0) {
      // Exponential ramp: double the step while each step is taken whole.
      numExecutorsToAdd_ =
          delta == numExecutorsToAdd_ ? std::min(numExecutorsToAdd_, INT_MAX / 2) * 2 : 1;
      addTime_ = addSaturating(now, config_.sustainedSchedulerBacklogTimeout);
    }
  }
}

int ExecutorAllocationManager::addExecutors(int maxNeeded, TickResult& result) {
  const int before = target_;
  const int64_t backlog = tasks_.pending() + tasks_.pendingSpeculative();
  if (before >= config_.bounds.maxExecutors) {
    numExecutorsToAdd_ = 1;
    result.decisions.push_back(
        {Decision::Action::kNotAdding, target_, "",
         "not adding: at maxExecutors=" + std::to_string(config_.bounds.maxExecutors) + " with " +
             plural(backlog, "pending task", "pending tasks")});
    return 0;
  }
  // No point ramping up through the executors we already have.
  int64_t target = std::max(target_, monitor_.executorCount());
  target += numExecutorsToAdd_;
  target = std::min<int64_t>(target, maxNeeded);
  target = std::max<int64_t>(std::min<int64_t>(target, config_.bounds.maxExecutors),
                             config_.bounds.minExecutors);
  target_ = static_cast<int>(target);
  const int delta = target_ - before;
  if (delta == 0) {
    numExecutorsToAdd_ = 1;
    result.decisions.push_back({Decision::Action::kNotAdding, target_, "",
                                "not adding: target " + std::to_string(target_) + " covers the " +
                                    plural(maxNeeded, "executor", "executors") + " needed for " +
                                    plural(backlog, "pending task", "pending tasks") + " and " +
                                    plural(tasks_.running(), "running task", "running tasks")});
    return 0;
  }
  std::ostringstream why;
  why << "added " << delta << " (backlog of " << plural(backlog, "task", "tasks") << " for "
      << elapsed(clock_.nowMs() - backlogSince_) << "), target " << target_;
  if (target_ == config_.bounds.maxExecutors) {
    why << " (maxExecutors)";
  } else if (target_ == maxNeeded) {
    why << " (all that is needed)";
  }
  if (!unschedulable_.empty()) {
    // SPARK-31418: say which stages asked for executors beyond the live ones, and why.
    why << "; unschedulable: every executor is excluded for stage";
    if (unschedulable_.size() > 1) why << "s";
    size_t shown = 0;
    for (const std::string& stageId : unschedulable_) {
      if (shown == 3) {
        why << ", ...";
        break;
      }
      why << (shown++ == 0 ? " " : ", ") << stageId;
    }
  }
  result.decisions.push_back({Decision::Action::kRaiseTarget, target_, "", why.str()});
  return delta;
}

void ExecutorAllocationManager::removeExecutors(const std::vector<ExecutorId>& timedOut,
                                                TickResult& result) {
  const TimeMs now = clock_.nowMs();
  int remaining = liveExecutors();
  // Never below min nor below the target (which is never below min). Once that floor is
  // reached every further executor is kept, so the rest of the list is not looked at: a
  // thousand executors kept at min cost one decision, not a thousand.
  const int floor = std::max(config_.bounds.minExecutors, target_);
  std::vector<ExecutorId> removed;
  size_t next = 0;
  for (; next < timedOut.size() && remaining - 1 >= floor; ++next) {
    const ExecutorTracker* tracker = monitor_.find(timedOut[next]);
    if (tracker == nullptr) continue;
    std::string why =
        releaseVerb() + tracker->id + ": idle for " + elapsed(now - tracker->idleSince);
    if (!tracker->cachedData.empty()) why += " with cached data";
    removed.push_back(tracker->id);
    --remaining;
    result.decisions.push_back({releaseAction(), target_, tracker->id, why});
  }
  if (next < timedOut.size()) {
    const size_t kept = timedOut.size() - next;
    const std::string because =
        target_ > config_.bounds.minExecutors
            ? "the target is " + std::to_string(target_)
            : "at minExecutors=" + std::to_string(config_.bounds.minExecutors);
    const ExecutorTracker* first = monitor_.find(timedOut[next]);
    std::string why;
    if (kept == 1 && first != nullptr) {
      why = "keeping " + first->id + ": idle for " + elapsed(now - first->idleSince) + " but " +
            because;
    } else {
      why = "keeping " + std::to_string(kept) + " idle executors (";
      const size_t shown = std::min<size_t>(kept, 3);
      for (size_t i = 0; i < shown; ++i) why += (i > 0 ? ", " : "") + timedOut[next + i];
      why += kept > shown ? ", ...) but " : ") but ";
      why += because;
    }
    result.decisions.push_back({Decision::Action::kKeep, target_, timedOut[next], why});
  }
  release(removed, result);
}

AllocationSnapshot ExecutorAllocationManager::snapshot() const {
  AllocationSnapshot s = baseSnapshot();
  s.maxNeeded = maxNumExecutorsNeeded();
  s.numExecutorsToAdd = numExecutorsToAdd_;
  s.addTime = addTime_;
  return s;
}

}  // namespace tide::allocation
