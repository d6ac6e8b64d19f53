#include "am/task_set_manager.h"

#include <algorithm>

namespace tide::am {

TaskSetManager::TaskSetManager(int64_t numTasks)
    : numTasks_(numTasks), succeededBits_(static_cast<size_t>(numTasks), false) {}

int64_t TaskSetManager::pendingCount() const {
  if (aborted_) return 0;
  return (numTasks_ - nextFreshIndex_) + static_cast<int64_t>(requeued_.size());
}

bool TaskSetManager::isSucceeded(int64_t index) const {
  if (index < 0 || index >= numTasks_) return false;
  if (succeededBits_.empty()) return allSucceeded();  // released after success
  return succeededBits_[static_cast<size_t>(index)];
}

std::optional<TaskAttempt> TaskSetManager::launchNext() {
  if (aborted_) return std::nullopt;
  while (!requeued_.empty()) {
    const TaskAttempt next = requeued_.front();
    requeued_.pop_front();
    if (isSucceeded(next.index)) continue;
    ++running_;
    return next;
  }
  if (nextFreshIndex_ < numTasks_) {
    ++running_;
    return TaskAttempt{nextFreshIndex_++, 0};
  }
  return std::nullopt;
}

void TaskSetManager::onAttemptEnded() {
  if (running_ > 0) --running_;
}

bool TaskSetManager::markSucceeded(int64_t index, DurationMs duration) {
  if (index < 0 || index >= numTasks_ || succeededBits_.empty()) return false;
  auto bit = succeededBits_[static_cast<size_t>(index)];
  if (bit) return false;
  bit = true;
  durationSumMs_ += duration;
  durationMinMs_ = succeeded_ == 0 ? duration : std::min(durationMinMs_, duration);
  durationMaxMs_ = std::max(durationMaxMs_, duration);
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
  requeued_.push_front(TaskAttempt{index, attempt});
}

void TaskSetManager::abort() {
  aborted_ = true;
  requeued_.clear();
  requeued_.shrink_to_fit();
  std::vector<bool>().swap(succeededBits_);
}

void TaskSetManager::releaseAfterSuccess() {
  if (!allSucceeded()) return;
  std::vector<bool>().swap(succeededBits_);
  std::unordered_map<int64_t, int>().swap(failureCounts_);
}

}  // namespace tide::am
