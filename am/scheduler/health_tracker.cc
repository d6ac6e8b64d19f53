#include "am/scheduler/health_tracker.h"

#include <algorithm>

namespace tide::am {

void HealthTracker::dropExpired(std::vector<CountedFailure>& failures, TimeMs now) {
  failures.erase(std::remove_if(failures.begin(), failures.end(),
                                [&](const CountedFailure& f) { return f.expiresMs < now; }),
                 failures.end());
}

NewlyExcluded HealthTracker::updateExcludedForSuccessfulTaskSet(
    const std::string& stageId, const std::map<std::string, ExecutorFailuresInStage>& failures) {
  NewlyExcluded newly;
  const TimeMs now = clock_.nowMs();
  for (const auto& [executorId, inStage] : failures) {
    std::vector<CountedFailure>& counted = failures_[executorId];
    // One entry per task, however often it failed here: different tasks failing is the signal.
    for (const auto& [index, countAndTime] : inStage.byTask) {
      const TimeMs expires = addSaturating(countAndTime.second, config_.timeoutMs);
      counted.push_back(CountedFailure{stageId, index, expires});
      nextExpiryMs_ = std::min(nextExpiryMs_, expires);
    }
    dropExpired(counted, now);
    if (static_cast<int>(counted.size()) < config_.maxFailedTasksPerExecutor ||
        isExecutorExcluded(executorId)) {
      continue;
    }
    const TimeMs until = addSaturating(now, config_.timeoutMs);
    excludedExecutors_[executorId] = {inStage.node, until};
    failures_.erase(executorId);
    nextExpiryMs_ = std::min(nextExpiryMs_, until);
    newly.executors.push_back(executorId);
    std::set<std::string>& onNode = excludedExecutorsByNode_[inStage.node];
    onNode.insert(executorId);
    if (static_cast<int>(onNode.size()) >= config_.maxFailedExecutorsPerNode &&
        excludedNodes_.count(inStage.node) == 0) {
      excludedNodes_[inStage.node] = until;
      newly.nodes.push_back(inStage.node);
    }
  }
  return newly;
}

bool HealthTracker::updateExcludedForFetchFailure(const std::string& node,
                                                  const std::string& executorId) {
  if (!config_.fetchFailureExclusion || isExecutorExcluded(executorId)) return false;
  const TimeMs until = addSaturating(clock_.nowMs(), config_.timeoutMs);
  excludedExecutors_[executorId] = {node, until};
  excludedExecutorsByNode_[node].insert(executorId);  // as Spark: the node itself stays in use
  nextExpiryMs_ = std::min(nextExpiryMs_, until);
  return true;
}

void HealthTracker::applyExcludeOnFailureTimeout() {
  const TimeMs now = clock_.nowMs();
  if (now <= nextExpiryMs_) return;
  TimeMs next = kInfiniteMs;
  for (auto it = excludedExecutors_.begin(); it != excludedExecutors_.end();) {
    const auto& [node, until] = it->second;
    if (until < now) {
      auto onNode = excludedExecutorsByNode_.find(node);
      if (onNode != excludedExecutorsByNode_.end()) {
        onNode->second.erase(it->first);
        if (onNode->second.empty()) excludedExecutorsByNode_.erase(onNode);
      }
      it = excludedExecutors_.erase(it);
    } else {
      next = std::min(next, until);
      ++it;
    }
  }
  for (auto it = excludedNodes_.begin(); it != excludedNodes_.end();) {
    if (it->second < now) {
      it = excludedNodes_.erase(it);
    } else {
      next = std::min(next, it->second);
      ++it;
    }
  }
  for (auto it = failures_.begin(); it != failures_.end();) {
    std::vector<CountedFailure>& counted = it->second;
    dropExpired(counted, now);
    for (const CountedFailure& f : counted) next = std::min(next, f.expiresMs);
    if (counted.empty()) {
      it = failures_.erase(it);
    } else {
      ++it;
    }
  }
  nextExpiryMs_ = next;
}

std::vector<ExcludedExecutor> HealthTracker::excludedExecutors() const {
  std::vector<ExcludedExecutor> excluded;
  for (const auto& [executorId, nodeAndUntil] : excludedExecutors_) {
    excluded.push_back(ExcludedExecutor{executorId, nodeAndUntil.first, nodeAndUntil.second});
  }
  return excluded;
}

int HealthTracker::failureCount(const std::string& executorId) const {
  auto it = failures_.find(executorId);
  return it == failures_.end() ? 0 : static_cast<int>(it->second.size());
}

}  // namespace tide::am
