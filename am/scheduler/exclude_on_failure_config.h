#pragma once

// excludeOnFailure.* (Spark's spark.excludeOnFailure.*): when executors and nodes where tasks
// keep failing stop being offered tasks, per task, per stage and for the application.

#include "common/clock.h"

namespace tide::am {

struct ExcludeOnFailureConfig {
  bool enabled = false;
  DurationMs timeoutMs = 60 * 60 * 1000;   // application-level exclusion lasts this long
  int maxTaskAttemptsPerExecutor = 1;      // a task is not offered this executor again
  int maxTaskAttemptsPerNode = 2;          // ... nor this node
  int maxFailedTasksPerExecutorStage = 2;  // the executor is excluded for the stage
  int maxFailedExecutorsPerNodeStage = 2;  // the node is excluded for the stage
  int maxFailedTasksPerExecutor = 2;       // the executor is excluded for the application
  int maxFailedExecutorsPerNode = 2;       // the node is excluded for the application
  bool killExcludedExecutors = false;      // and released
  // excludeOnFailure.application.fetchFailure.enabled: an executor whose blocks a task could
  // not fetch is excluded for the application at once.
  bool fetchFailureExclusion = false;
  // A stage every live executor is excluded for fails its job after this long (Spark's
  // spark.scheduler.excludeOnFailure.unschedulableTaskSetTimeout); at once without dynamic
  // allocation, since no new executor will come.
  DurationMs unschedulableTaskSetTimeoutMs = 120 * 1000;
  bool dynamicAllocation = true;
};

}  // namespace tide::am
