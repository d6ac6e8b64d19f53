#include "am/scheduler/task_set_manager.h"
#include "common/enum_names.h"

#include <algorithm>

namespace tide::am {

const char* taskLocalityName(TaskLocality locality) {
  static constexpr const char* kNames[] = {"PROCESS_LOCAL", "NODE_LOCAL", "NO_PREF", "RACK_LOCAL",
                                           "ANY"};
  return enumName(locality, kNames);
}

TaskSetManager::TaskSetManager(int64_t numTasks) : numTasks_(numTasks), succeededSet_(numTasks) {}

int64_t TaskSetManager::pendingCount() const {
  if (aborted_) return 0;
  if (hasPreferences()) return pendingWithPreferences_;
  return (numTasks_ - nextFreshIndex_ - restoredAhead_) + static_cast<int64_t>(requeued_.size());
}

bool TaskSetManager::isSucceeded(int64_t index) const {
  if (index < 0 || index >= numTasks_) return false;
  return succeededSet_.contains(index);
}

std::optional<TaskAttempt> TaskSetManager::launchNext(const TaskExcluded& excluded) {
  if (aborted_) return std::nullopt;
  if (hasPreferences()) {
    std::optional<int64_t> index = popPending(pendingAll_, excluded);
    if (!index) return std::nullopt;
    return takeIndex(*index);
  }
  for (auto it = requeued_.begin(); it != requeued_.end();) {
    const TaskAttempt next = *it;
    if (isSucceeded(next.index)) {
      it = requeued_.erase(it);
      continue;
    }
    if (excluded && excluded(next.index)) {
      ++it;
      continue;
    }
    requeued_.erase(it);
    ++running_;
    return next;
  }
  while (nextFreshIndex_ < numTasks_ && restoredAhead_ > 0 &&
         restoredSet_.contains(nextFreshIndex_)) {
    ++nextFreshIndex_;  // committed or running in an earlier AM attempt
    --restoredAhead_;
  }
  if (nextFreshIndex_ < numTasks_) {
    ++running_;
    return TaskAttempt{nextFreshIndex_++, 0};
  }
  return std::nullopt;
}

void TaskSetManager::markRestored(int64_t index, bool running) {
  if (index < 0 || index >= numTasks_ || aborted_) return;
  if (running) ++running_;
  if (hasPreferences()) {
    if (!pendingBits_[static_cast<size_t>(index)]) return;
    pendingBits_[static_cast<size_t>(index)] = false;
    --pendingWithPreferences_;
    return;
  }
  if (index < nextFreshIndex_) return;  // launched here already: not pending
  if (restoredSet_.size() == 0) restoredSet_ = IndexSet(numTasks_);
  if (restoredSet_.insert(index)) ++restoredAhead_;
}

void TaskSetManager::onAttemptEnded() {
  if (running_ > 0) --running_;
}

bool TaskSetManager::markSucceeded(int64_t index, DurationMs duration) {
  if (aborted_ || !succeededSet_.insert(index)) return false;
  durationSumMs_ += duration;
  durationMinMs_ = succeeded_ == 0 ? duration : std::min(durationMinMs_, duration);
  durationMaxMs_ = std::max(durationMaxMs_, duration);
  if (keepDurations_) durations_.add(duration);
  ++succeeded_;
  return true;
}

int TaskSetManager::recordFailure(int64_t index) {
  return ++failureCounts_[index];
}

int TaskSetManager::failureCount(int64_t index) const {
  auto it = failureCounts_.find(index);
  return it == failureCounts_.end() ? 0 : it->second;
}

void TaskSetManager::requeueFront(int64_t index, int attempt) {
  if (aborted_ || isSucceeded(index)) return;
  if (hasPreferences()) {
    if (pendingBits_[static_cast<size_t>(index)]) return;
    pendingBits_[static_cast<size_t>(index)] = true;
    ++pendingWithPreferences_;
    nextAttempt_[index] = attempt;
    fileUnderPlaces(index, /*front=*/true);
    return;
  }
  requeued_.push_front(TaskAttempt{index, attempt});
}

int64_t TaskSetManager::resubmit(const std::vector<int64_t>& indices) {
  if (aborted_) return 0;
  int64_t requeued = 0;
  for (int64_t index : indices) {
    // Not done: pending or running already, its new output will come.
    if (!succeededSet_.erase(index)) continue;
    --succeeded_;
    // A lost output is not the task's failure: the attempt number only tells the runs apart.
    const int attempt = failureCount(index) + 1;
    if (hasPreferences()) {
      pendingBits_[static_cast<size_t>(index)] = true;
      ++pendingWithPreferences_;
      nextAttempt_[index] = attempt;
      fileUnderPlaces(index, /*front=*/false);
    } else {
      requeued_.push_back(TaskAttempt{index, attempt});
    }
    ++requeued;
  }
  return requeued;
}

void TaskSetManager::setPreferences(const std::vector<TaskPreference>& prefs, LocalityWaits waits,
                                    TimeMs now) {
  if (aborted_) return;
  // Which tasks are pending now, in either mode.
  std::vector<bool> pending(static_cast<size_t>(numTasks_), false);
  if (hasPreferences()) {
    pending = pendingBits_;
  } else {
    for (int64_t i = nextFreshIndex_; i < numTasks_; ++i) {
      pending[static_cast<size_t>(i)] = !restoredSet_.contains(i);
    }
    restoredAhead_ = 0;
    for (const TaskAttempt& requeued : requeued_) {
      if (isSucceeded(requeued.index)) continue;
      pending[static_cast<size_t>(requeued.index)] = true;
      nextAttempt_[requeued.index] = requeued.attempt;
    }
    requeued_.clear();
    nextFreshIndex_ = numTasks_;
  }
  preferences_.assign(static_cast<size_t>(numTasks_), TaskPreference{});
  for (size_t i = 0; i < prefs.size() && i < preferences_.size(); ++i) preferences_[i] = prefs[i];
  pendingBits_ = std::move(pending);
  pendingForExecutor_.clear();
  pendingForNode_.clear();
  pendingWithoutPreference_.clear();
  pendingAll_.clear();
  pendingWithPreferences_ = 0;
  for (int64_t i = 0; i < numTasks_; ++i) {
    if (!pendingBits_[static_cast<size_t>(i)]) continue;
    ++pendingWithPreferences_;
    fileUnderPlaces(i, /*front=*/false);
  }
  waits_ = waits;
  levels_ = validLocalityLevels();
  currentLevel_ = 0;
  lastLaunchMs_ = now;
}

void TaskSetManager::fileUnderPlaces(int64_t index, bool front) {
  const auto file = [&](std::deque<int64_t>& list) {
    if (front) {
      list.push_front(index);
    } else {
      list.push_back(index);
    }
  };
  const TaskPreference& preference = preferences_[static_cast<size_t>(index)];
  for (const std::string& executor : preference.executors) file(pendingForExecutor_[executor]);
  for (const std::string& node : preference.nodes) file(pendingForNode_[node]);
  if (preference.executors.empty() && preference.nodes.empty()) file(pendingWithoutPreference_);
  file(pendingAll_);
}

std::optional<int64_t> TaskSetManager::popPending(std::deque<int64_t>& list,
                                                  const TaskExcluded& excluded) {
  for (auto it = list.begin(); it != list.end();) {
    const int64_t index = *it;
    if (!pendingBits_[static_cast<size_t>(index)] || isSucceeded(index)) {
      it = list.erase(it);
    } else if (excluded && excluded(index)) {
      ++it;
    } else {
      list.erase(it);
      return index;
    }
  }
  return std::nullopt;
}

TaskAttempt TaskSetManager::takeIndex(int64_t index) {
  pendingBits_[static_cast<size_t>(index)] = false;
  --pendingWithPreferences_;
  int attempt = 0;
  auto next = nextAttempt_.find(index);
  if (next != nextAttempt_.end()) {
    attempt = next->second;
    nextAttempt_.erase(next);
  }
  ++running_;
  return TaskAttempt{index, attempt};
}

std::vector<TaskLocality> TaskSetManager::validLocalityLevels() const {
  std::vector<TaskLocality> levels;
  const auto anyPending = [&](const std::unordered_map<std::string, std::deque<int64_t>>& lists) {
    for (const auto& [place, list] : lists) {
      for (int64_t index : list) {
        if (pendingBits_[static_cast<size_t>(index)]) return true;
      }
    }
    return false;
  };
  if (hasPreferences()) {
    if (anyPending(pendingForExecutor_)) levels.push_back(TaskLocality::kProcessLocal);
    if (anyPending(pendingForNode_)) levels.push_back(TaskLocality::kNodeLocal);
    for (int64_t index : pendingWithoutPreference_) {
      if (pendingBits_[static_cast<size_t>(index)]) {
        levels.push_back(TaskLocality::kNoPref);
        break;
      }
    }
  } else {
    levels.push_back(TaskLocality::kNoPref);
  }
  levels.push_back(TaskLocality::kAny);
  return levels;
}

bool TaskSetManager::hasPendingAt(TaskLocality level) {
  const auto anyPending = [&](std::unordered_map<std::string, std::deque<int64_t>>& lists) {
    for (auto it = lists.begin(); it != lists.end();) {
      std::deque<int64_t>& list = it->second;
      while (!list.empty() &&
             (!pendingBits_[static_cast<size_t>(list.front())] || isSucceeded(list.front()))) {
        list.pop_front();
      }
      if (list.empty()) {
        it = lists.erase(it);
      } else {
        return true;
      }
    }
    return false;
  };
  switch (level) {
    case TaskLocality::kProcessLocal:
      return anyPending(pendingForExecutor_);
    case TaskLocality::kNodeLocal:
      return anyPending(pendingForNode_);
    case TaskLocality::kNoPref:
      while (!pendingWithoutPreference_.empty() &&
             !pendingBits_[static_cast<size_t>(pendingWithoutPreference_.front())]) {
        pendingWithoutPreference_.pop_front();
      }
      return !pendingWithoutPreference_.empty();
    case TaskLocality::kRackLocal:
      return false;
    case TaskLocality::kAny:
      return pendingWithPreferences_ > 0;
  }
  return false;
}

int TaskSetManager::localityIndex(TaskLocality level) const {
  for (size_t i = 0; i < levels_.size(); ++i) {
    if (levels_[i] == level) return static_cast<int>(i);
  }
  return -1;
}

TaskLocality TaskSetManager::allowedLocality(TimeMs now) {
  if (!hasPreferences()) return TaskLocality::kAny;
  while (currentLevel_ + 1 < levels_.size()) {
    const TaskLocality level = levels_[currentLevel_];
    DurationMs wait = 0;
    if (level == TaskLocality::kProcessLocal) wait = waits_.process;
    if (level == TaskLocality::kNodeLocal) wait = waits_.node;
    if (level == TaskLocality::kRackLocal) wait = waits_.rack;
    if (!hasPendingAt(level)) {
      // Nothing left to wait for at this level (SPARK-4939): move on at once.
      lastLaunchMs_ = now;
      ++currentLevel_;
    } else if (now - lastLaunchMs_ >= wait) {
      // Waited a whole wait without a launch at this level: accept the next one.
      lastLaunchMs_ += wait;
      ++currentLevel_;
    } else {
      return level;
    }
  }
  return levels_[currentLevel_];
}

std::optional<TaskOffer> TaskSetManager::resourceOffer(const std::string& executorId,
                                                       const std::string& node,
                                                       TaskLocality maxLocality, TimeMs now,
                                                       const TaskExcluded& excluded) {
  if (aborted_) return std::nullopt;
  if (!hasPreferences()) {
    std::optional<TaskAttempt> next = launchNext(excluded);
    if (!next) return std::nullopt;
    return TaskOffer{*next, TaskLocality::kNoPref};
  }
  const TaskLocality allowed = allowedLocality(now);
  if (allowed < maxLocality) maxLocality = allowed;
  std::optional<int64_t> index;
  TaskLocality locality = TaskLocality::kAny;
  if (auto list = pendingForExecutor_.find(executorId); list != pendingForExecutor_.end()) {
    index = popPending(list->second, excluded);
    locality = TaskLocality::kProcessLocal;
  }
  if (!index && maxLocality >= TaskLocality::kNodeLocal) {
    if (auto list = pendingForNode_.find(node); list != pendingForNode_.end()) {
      index = popPending(list->second, excluded);
      locality = TaskLocality::kNodeLocal;
    }
  }
  if (!index && maxLocality >= TaskLocality::kNoPref) {
    index = popPending(pendingWithoutPreference_, excluded);
    locality = TaskLocality::kNoPref;
  }
  if (!index && maxLocality >= TaskLocality::kAny) {
    index = popPending(pendingAll_, excluded);
    locality = TaskLocality::kAny;
  }
  if (!index) return std::nullopt;
  if (locality != TaskLocality::kNoPref) {
    // Spark: a launch at a level resets the wait there, so the stage stays as local as it
    // just managed to be.
    const int level = localityIndex(locality);
    if (level >= 0) currentLevel_ = static_cast<size_t>(level);
    lastLaunchMs_ = now;
  }
  return TaskOffer{takeIndex(*index), locality};
}

std::map<std::string, int64_t> TaskSetManager::pendingTasksByNode() const {
  std::map<std::string, int64_t> counts;
  if (!hasPreferences() || aborted_) return counts;
  for (int64_t i = 0; i < numTasks_; ++i) {
    if (!pendingBits_[static_cast<size_t>(i)]) continue;
    for (const std::string& node : preferences_[static_cast<size_t>(i)].nodes) ++counts[node];
  }
  return counts;
}

std::map<std::string, int64_t> TaskSetManager::tasksByNode(int64_t* preferringTasks) const {
  std::map<std::string, int64_t> counts;
  if (!hasPreferences() || aborted_) return counts;
  for (const TaskPreference& preference : preferences_) {
    for (const std::string& node : preference.nodes) ++counts[node];
    if (!preference.nodes.empty()) ++*preferringTasks;
  }
  return counts;
}

void TaskSetManager::executorLost(const std::string& executorId) {
  pendingForExecutor_.erase(executorId);
}

void TaskSetManager::abort() {
  aborted_ = true;
  pendingWithPreferences_ = 0;
  pendingForExecutor_.clear();
  pendingForNode_.clear();
  pendingWithoutPreference_.clear();
  pendingAll_.clear();
  requeued_.clear();
  requeued_.shrink_to_fit();
  // What isSucceeded answers from now on, without a bitmap.
  if (allSucceeded()) {
    succeededSet_.fill();
  } else {
    succeededSet_.clear();
  }
}

void TaskSetManager::releaseAfterSuccess() {
  if (!allSucceeded()) return;
  // Nothing is left to launch fresh (a lineage re-run goes through the re-queue), so the
  // indices recovery took out need no remembering.
  nextFreshIndex_ = numTasks_;
  restoredAhead_ = 0;
  restoredSet_ = IndexSet();
  std::unordered_map<int64_t, int>().swap(failureCounts_);
}

}  // namespace tide::am
