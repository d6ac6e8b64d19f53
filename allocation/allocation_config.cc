#include "allocation/allocation_config.h"

#include <algorithm>

#include "common/config.h"

namespace tide::allocation {
namespace {

constexpr const char* kMin = "dynamicAllocation.minExecutors";
constexpr const char* kInitial = "dynamicAllocation.initialExecutors";
constexpr const char* kMax = "dynamicAllocation.maxExecutors";
constexpr const char* kShuffleTracking = "dynamicAllocation.shuffleTracking.enabled";
constexpr const char* kDecommission = "decommission.enabled";
constexpr const char* kShuffleBlocksDecommission = "storage.decommission.shuffleBlocks.enabled";
constexpr int kDefaultStaticExecutors = 2;

// An executor count; the key table bounds it to an int's range.
int getCount(const Properties& props, const char* key) {
  return static_cast<int>(props.getInt(key));
}

}  // namespace

std::string validateBounds(Bounds& bounds, std::string* warning) {
  if (bounds.minExecutors < 0) return "min: must not be negative";
  if (bounds.maxExecutors < 0) return "max: must not be negative";
  if (bounds.initialExecutors < 0) return "initial: must not be negative";
  if (bounds.maxExecutors == 0) return "max: must be at least 1";
  if (bounds.minExecutors > bounds.maxExecutors) {
    return "min=" + std::to_string(bounds.minExecutors) +
           " is greater than max=" + std::to_string(bounds.maxExecutors);
  }
  if (bounds.initialExecutors > bounds.maxExecutors) {
    // Spark accepts it; the target never goes above max, so max is what is asked for.
    if (warning != nullptr) {
      *warning = "initial=" + std::to_string(bounds.initialExecutors) +
                 " is greater than max=" + std::to_string(bounds.maxExecutors) + "; using max";
    }
    bounds.initialExecutors = bounds.maxExecutors;
  }
  if (bounds.initialExecutors < bounds.minExecutors) {
    if (warning != nullptr) {
      *warning = "initial=" + std::to_string(bounds.initialExecutors) +
                 " is less than min=" + std::to_string(bounds.minExecutors) + "; using min";
    }
    bounds.initialExecutors = bounds.minExecutors;
  }
  return "";
}

Bounds changedBounds(const Bounds& current, std::optional<int> minExecutors,
                     std::optional<int> initialExecutors, std::optional<int> maxExecutors) {
  Bounds bounds = current;
  if (minExecutors) bounds.minExecutors = *minExecutors;
  if (maxExecutors) bounds.maxExecutors = *maxExecutors;
  if (initialExecutors) {
    bounds.initialExecutors = *initialExecutors;
  } else if (bounds.minExecutors <= bounds.maxExecutors) {
    bounds.initialExecutors =
        std::clamp(bounds.initialExecutors, bounds.minExecutors, bounds.maxExecutors);
  }
  return bounds;
}

const char* policyKindName(PolicyKind kind) {
  return kind == PolicyKind::kAdaptive ? "adaptive" : "spark";
}

namespace {

void readExecutorShape(const Properties& props, AllocationConfig& config) {
  config.executorCores = static_cast<int>(props.getInt("executor.cores"));
  config.taskCpus = static_cast<int>(props.getInt("task.cpus"));
  if (config.taskCpus > config.executorCores) {
    throw ConfigError(props.describe("task.cpus") + " is greater than " +
                      props.describe("executor.cores") + ": no task could ever run");
  }
  // Spark's default of executor.instances with dynamic allocation off is 2 (with it on, an unset
  // executor.instances does not raise the initial target).
  config.executorInstances = props.has("executor.instances") ? getCount(props, "executor.instances")
                             : config.enabled                ? 0
                                                             : kDefaultStaticExecutors;
}

// min, max and the initial target, after executor.instances (which may raise the latter).
void readBounds(const Properties& props, AllocationConfig& config,
                std::vector<std::string>* warnings) {
  Bounds& bounds = config.bounds;
  bounds.minExecutors = getCount(props, kMin);
  bounds.maxExecutors = getCount(props, kMax);
  if (config.enabled) {
    if (bounds.maxExecutors == 0) throw ConfigError(props.describe(kMax) + ": must be at least 1");
    if (bounds.minExecutors > bounds.maxExecutors) {
      throw ConfigError(props.describe(kMin) + " is greater than " + props.describe(kMax));
    }
  }
  // As in Spark: the initial target is the largest of min, initialExecutors and
  // executor.instances; an initial below min is only a warning.
  const int initial = props.has(kInitial) ? getCount(props, kInitial) : bounds.minExecutors;
  if (config.enabled && props.has(kInitial) && initial < bounds.minExecutors && warnings) {
    warnings->push_back(props.describe(kInitial) + " is less than " + props.describe(kMin) +
                        "; using " + std::to_string(bounds.minExecutors));
  }
  bounds.initialExecutors = std::max({bounds.minExecutors, initial, config.executorInstances});
  if (config.enabled && bounds.initialExecutors > bounds.maxExecutors) {
    // Spark accepts it and never asks for more than max; so does tide, with a warning.
    const char* culprit = initial >= config.executorInstances ? kInitial : "executor.instances";
    if (warnings) {
      warnings->push_back(props.describe(culprit) + " is greater than " + props.describe(kMax) +
                          "; using " + std::to_string(bounds.maxExecutors));
    }
    bounds.initialExecutors = bounds.maxExecutors;
  }
}

void readTimeouts(const Properties& props, AllocationConfig& config) {
  config.executorAllocationRatio = props.getDouble("dynamicAllocation.executorAllocationRatio");
  if (!(config.executorAllocationRatio > 0.0 && config.executorAllocationRatio <= 1.0)) {
    throw ConfigError(props.describe("dynamicAllocation.executorAllocationRatio") +
                      ": must be greater than 0 and at most 1");
  }
  config.schedulerBacklogTimeout = props.getDuration("dynamicAllocation.schedulerBacklogTimeout");
  config.sustainedSchedulerBacklogTimeout =
      props.has("dynamicAllocation.sustainedSchedulerBacklogTimeout")
          ? props.getDuration("dynamicAllocation.sustainedSchedulerBacklogTimeout")
          : config.schedulerBacklogTimeout;
  config.executorIdleTimeout = props.getDuration("dynamicAllocation.executorIdleTimeout");
  config.cachedExecutorIdleTimeout =
      props.getDuration("dynamicAllocation.cachedExecutorIdleTimeout");
}

// Shuffle tracking and decommissioning: what keeps shuffle data when executors go.
void readShuffleKeeping(const Properties& props, AllocationConfig& config) {
  config.shuffleTrackingEnabled = props.getBool(kShuffleTracking);
  config.decommissionEnabled = props.getBool(kDecommission);
  const bool shuffleDecommission =
      config.decommissionEnabled && props.getBool(kShuffleBlocksDecommission);
  if (config.enabled && !config.shuffleTrackingEnabled && !shuffleDecommission) {
    // Spark refuses dynamic allocation with neither shuffle tracking, an external shuffle
    // service, nor decommissioning with shuffle block migration; tide has no shuffle service.
    throw ConfigError(props.describe(kShuffleTracking) +
                      ": dynamic allocation needs shuffle tracking, or decommissioning with "
                      "shuffle block migration (tide has no external shuffle service; without "
                      "either, removing executors would lose shuffle data running jobs still "
                      "need). Set it to true, or set " +
                      std::string(kDecommission) + "=true (with " + kShuffleBlocksDecommission +
                      "=true, its default), or dynamicAllocation.enabled=false");
  }
  config.shuffleTrackingTimeout = props.getDuration("dynamicAllocation.shuffleTracking.timeout");
}

void readPolicy(const Properties& props, AllocationConfig& config) {
  config.interval = props.getDuration("dynamicAllocation.interval");
  config.policy = props.getString("dynamicAllocation.policy") == "adaptive" ? PolicyKind::kAdaptive
                                                                            : PolicyKind::kSpark;
  config.targetBacklogDuration =
      props.getDuration("dynamicAllocation.adaptive.targetBacklogDuration");
  if (config.targetBacklogDuration == kInfiniteMs) {
    throw ConfigError(props.describe("dynamicAllocation.adaptive.targetBacklogDuration") +
                      ": must be finite");
  }
}

}  // namespace

AllocationConfig AllocationConfig::fromProperties(const Properties& props,
                                                  std::vector<std::string>* warnings) {
  AllocationConfig config;
  config.enabled = props.getBool("dynamicAllocation.enabled");
  readExecutorShape(props, config);
  readBounds(props, config, warnings);
  readTimeouts(props, config);
  readShuffleKeeping(props, config);
  readPolicy(props, config);
  return config;
}

}  // namespace tide::allocation
