#include "am/scheduler/task_set_excludelist.h"

namespace tide::am {

int ExecutorFailuresInStage::failuresOf(int64_t index) const {
  auto it = byTask.find(index);
  return it == byTask.end() ? 0 : it->second.first;
}

void TaskSetExcludelist::updateExcludedForFailedTask(const std::string& node,
                                                     const std::string& executorId, int64_t index,
                                                     TimeMs now) {
  ExecutorFailuresInStage& here = failures_[executorId];
  here.node = node;
  auto& [count, latest] = here.byTask[index];
  ++count;
  latest = now;

  // The task on this node: attempts on all its executors count together.
  std::set<std::string>& onNode = executorsWithFailuresByNode_[node];
  onNode.insert(executorId);
  int failuresOnNode = 0;
  for (const std::string& executor : onNode)
    failuresOnNode += failures_[executor].failuresOf(index);
  if (failuresOnNode >= config_.maxTaskAttemptsPerNode) excludedTasksByNode_[node].insert(index);

  // Different tasks failing here say more about the executor than about the tasks.
  if (static_cast<int>(here.byTask.size()) >= config_.maxFailedTasksPerExecutorStage &&
      excludedExecutors_.insert(executorId).second) {
    int excludedOnNode = 0;
    for (const std::string& executor : onNode) excludedOnNode += excludedExecutors_.count(executor);
    if (excludedOnNode >= config_.maxFailedExecutorsPerNodeStage) excludedNodes_.insert(node);
  }
}

bool TaskSetExcludelist::isExecutorExcludedForTask(const std::string& executorId,
                                                   int64_t index) const {
  auto it = failures_.find(executorId);
  return it != failures_.end() &&
         it->second.failuresOf(index) >= config_.maxTaskAttemptsPerExecutor;
}

bool TaskSetExcludelist::isNodeExcludedForTask(const std::string& node, int64_t index) const {
  auto it = excludedTasksByNode_.find(node);
  return it != excludedTasksByNode_.end() && it->second.count(index) != 0;
}

std::set<int64_t> TaskSetExcludelist::failedTasks() const {
  std::set<int64_t> indices;
  for (const auto& [executor, failures] : failures_) {
    for (const auto& [index, countAndTime] : failures.byTask) indices.insert(index);
  }
  return indices;
}

}  // namespace tide::am
