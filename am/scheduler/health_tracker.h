#pragma once

// Exclusion for the whole application (Spark's HealthTracker): the failures of a stage that
// succeeded count against the executors they happened on, each for excludeOnFailure.timeout from
// when it happened. An executor with maxFailedTasksPerExecutor such failures is excluded for the
// timeout (it gets no tasks), and a node with maxFailedExecutorsPerNode excluded executors is
// excluded too. Failures of stages that failed do not count: the stage itself may be at fault.
// Pure policy: time from the injected Clock; expiry happens in applyExcludeOnFailureTimeout,
// which the scheduler calls before each round of offers (as Spark does).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "am/scheduler/exclude_on_failure_config.h"
#include "am/scheduler/task_set_excludelist.h"
#include "common/clock.h"

namespace tide::am {

// An executor excluded for the application, for the status API.
struct ExcludedExecutor {
  std::string executorId;
  std::string node;
  TimeMs untilMs = 0;
};

// What updateExcludedForSuccessfulTaskSet newly excluded.
struct NewlyExcluded {
  std::vector<std::string> executors;
  std::vector<std::string> nodes;
};

class HealthTracker {
 public:
  HealthTracker(const ExcludeOnFailureConfig& config, const Clock& clock)
      : config_(config), clock_(clock) {}

  // A stage succeeded: its failures (by executor) count toward application-level exclusion.
  NewlyExcluded updateExcludedForSuccessfulTaskSet(
      const std::string& stageId, const std::map<std::string, ExecutorFailuresInStage>& failures);
  // A task could not fetch the blocks `executorId` (on `node`) holds, with
  // excludeOnFailure.application.fetchFailure.enabled (Spark's updateExcludedForFetchFailure
  // without an external shuffle service): the executor is excluded at once, for the timeout; a
  // fetch failure is taken to be lasting. True when it was not excluded before.
  bool updateExcludedForFetchFailure(const std::string& node, const std::string& executorId);
  // Lifts the exclusions whose timeout has passed and forgets failures that have expired.
  void applyExcludeOnFailureTimeout();
  // The executor is gone: its failures no longer matter (its exclusion runs out on its own).
  void handleRemovedExecutor(const std::string& executorId) { failures_.erase(executorId); }

  bool isExecutorExcluded(const std::string& executorId) const {
    return excludedExecutors_.count(executorId) != 0;
  }
  bool isNodeExcluded(const std::string& node) const { return excludedNodes_.count(node) != 0; }
  bool anyExcluded() const { return !excludedExecutors_.empty() || !excludedNodes_.empty(); }
  std::vector<ExcludedExecutor> excludedExecutors() const;
  // Node -> until when.
  const std::map<std::string, TimeMs>& excludedNodes() const { return excludedNodes_; }
  // Failures still counting against the executor (Spark's numUniqueTaskFailures).
  int failureCount(const std::string& executorId) const;

 private:
  struct CountedFailure {
    std::string stageId;
    int64_t index = 0;
    TimeMs expiresMs = 0;
  };

  // Spark's dropFailuresWithTimeoutBefore.
  static void dropExpired(std::vector<CountedFailure>& failures, TimeMs now);

  ExcludeOnFailureConfig config_;
  const Clock& clock_;
  std::map<std::string, std::vector<CountedFailure>> failures_;              // by executor
  std::map<std::string, std::pair<std::string, TimeMs>> excludedExecutors_;  // -> (node, until)
  std::map<std::string, std::set<std::string>> excludedExecutorsByNode_;
  std::map<std::string, TimeMs> excludedNodes_;
  TimeMs nextExpiryMs_ = kInfiniteMs;  // the earliest exclusion or failure to expire
};

}  // namespace tide::am
