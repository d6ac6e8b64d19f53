#pragma once

// What one stage's failures exclude (Spark's TaskSetExcludelist): a task is not offered an
// executor it failed on maxTaskAttemptsPerExecutor times, nor a node it failed on
// maxTaskAttemptsPerNode times; an executor where maxFailedTasksPerExecutorStage different tasks
// failed gets none of the stage's tasks, and neither does a node with
// maxFailedExecutorsPerNodeStage such executors. Pure bookkeeping, time passed in; entries exist
// only for executors where something failed.

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "am/scheduler/exclude_on_failure_config.h"
#include "common/clock.h"

namespace tide::am {

// One executor's failures in one stage (Spark's ExecutorFailuresInTaskSet).
struct ExecutorFailuresInStage {
  std::string node;
  // Task index -> (failures of it here, time of the latest).
  std::map<int64_t, std::pair<int, TimeMs>> byTask;
  int failuresOf(int64_t index) const;
};

class TaskSetExcludelist {
 public:
  explicit TaskSetExcludelist(const ExcludeOnFailureConfig& config) : config_(config) {}

  // An attempt of task `index` failed (in a way that counts toward task.maxFailures) on
  // `executorId` at `node`.
  void updateExcludedForFailedTask(const std::string& node, const std::string& executorId,
                                   int64_t index, TimeMs now);

  bool isExecutorExcludedForTask(const std::string& executorId, int64_t index) const;
  bool isNodeExcludedForTask(const std::string& node, int64_t index) const;
  bool isExecutorExcludedForTaskSet(const std::string& executorId) const {
    return excludedExecutors_.count(executorId) != 0;
  }
  bool isNodeExcludedForTaskSet(const std::string& node) const {
    return excludedNodes_.count(node) != 0;
  }
  // May task `index` run on this executor at this node, as far as this stage knows?
  bool isExcluded(const std::string& executorId, const std::string& node, int64_t index) const {
    return isExecutorExcludedForTask(executorId, index) || isNodeExcludedForTask(node, index);
  }

  // By executor: what the health tracker counts once the stage has succeeded.
  const std::map<std::string, ExecutorFailuresInStage>& failuresByExecutor() const {
    return failures_;
  }
  // Indices that failed somewhere: the only tasks that can be excluded one by one.
  std::set<int64_t> failedTasks() const;

 private:
  ExcludeOnFailureConfig config_;
  std::map<std::string, ExecutorFailuresInStage> failures_;
  std::map<std::string, std::set<std::string>> executorsWithFailuresByNode_;
  std::map<std::string, std::set<int64_t>> excludedTasksByNode_;
  std::set<std::string> excludedExecutors_;
  std::set<std::string> excludedNodes_;
};

}  // namespace tide::am
