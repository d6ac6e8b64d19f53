#pragma once

#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace tide {
class Properties;
}

namespace tide::allocation {

// The executor bounds; changeable at runtime (PUT /api/v1/allocation/bounds, SIGHUP).
struct Bounds {
  int minExecutors = 0;
  int initialExecutors = 0;
  int maxExecutors = INT_MAX;
};

// Checks bounds the way the config does. Returns an empty string when they are valid, else a
// message naming the offending fields. `initial < min` is not an error: it is reported through
// `warning` and min is used, as in Spark.
std::string validateBounds(Bounds& bounds, std::string* warning);

// A runtime change of some of the bounds. An `initial` not given follows the new bounds (it
// only mattered at start), so lowering max below the configured initial is not an error.
Bounds changedBounds(const Bounds& current, std::optional<int> minExecutors,
                     std::optional<int> initialExecutors, std::optional<int> maxExecutors);

// Which policy sizes the executor set (dynamicAllocation.policy).
enum class PolicyKind {
  kSpark,    // Spark's ExecutorAllocationManager: backlog timers, exponential ramp, idle timeout
  kAdaptive  // AdaptiveAllocationPolicy: sized from the estimated work and a target duration
};
const char* policyKindName(PolicyKind kind);

// Everything the allocation policy reads, with Spark's defaults. Immutable once built.
struct AllocationConfig {
  bool enabled = true;  // false: a fixed executor.instances, no scaling
  Bounds bounds;
  double executorAllocationRatio = 1.0;
  DurationMs schedulerBacklogTimeout = 1000;
  DurationMs sustainedSchedulerBacklogTimeout = 1000;
  DurationMs executorIdleTimeout = 60000;
  DurationMs cachedExecutorIdleTimeout = kInfiniteMs;
  bool shuffleTrackingEnabled = true;
  DurationMs shuffleTrackingTimeout = kInfiniteMs;
  // decommission.enabled: executors the policy lets go are decommissioned (they stop taking
  // tasks, hand their blocks to peers, then exit) rather than killed, as in Spark.
  bool decommissionEnabled = false;
  DurationMs interval = 100;
  int executorCores = 1;
  int taskCpus = 1;
  int executorInstances = 0;  // used when dynamic allocation is off
  PolicyKind policy = PolicyKind::kSpark;
  // The adaptive policy asks for the executors that finish the backlog within this time.
  DurationMs targetBacklogDuration = 5000;

  int tasksPerExecutor() const { return executorCores / taskCpus; }

  // Reads and validates the `dynamicAllocation.*`, `executor.*` and `task.cpus` keys. Throws
  // ConfigError naming the key(s), value(s) and where they came from; appends warnings.
  static AllocationConfig fromProperties(const Properties& props,
                                         std::vector<std::string>* warnings);
};

}  // namespace tide::allocation
