#include "allocation/speculation.h"

#include <algorithm>
#include <cmath>

#include "common/config.h"

namespace tide::allocation {

SpeculationSettings readSpeculationSettings(const Properties& properties) {
  SpeculationSettings settings;
  SpeculationConfig& rule = settings.rule;
  settings.enabled = properties.getBool("speculation");
  rule.quantile = properties.getDouble("speculation.quantile");
  if (!(rule.quantile > 0.0 && rule.quantile <= 1.0)) {
    throw ConfigError(properties.describe("speculation.quantile") + ": must be in (0, 1]");
  }
  settings.intervalMs = properties.getDuration("speculation.interval");
  rule.minThresholdMs = properties.getDuration("speculation.minTaskRuntime");
  if (const auto threshold =
          properties.getOptionalDuration("speculation.task.duration.threshold")) {
    rule.taskDurationThresholdMs = *threshold;
  }
  rule.multiplier = properties.getDouble("speculation.multiplier");
  if (!(rule.multiplier >= 1.0)) {
    throw ConfigError(properties.describe("speculation.multiplier") + ": must be at least 1");
  }
  rule.slotsPerExecutor = std::max<int64_t>(
      properties.getInt("executor.cores") / std::max<int64_t>(properties.getInt("task.cpus"), 1),
      1);
  return settings;
}

DurationCounts::DurationCounts(std::initializer_list<DurationMs> durations) {
  for (DurationMs duration : durations) add(duration);
}

DurationCounts::DurationCounts(const std::vector<DurationMs>& durations) {
  for (DurationMs duration : durations) add(duration);
}

void DurationCounts::add(DurationMs duration) {
  ++counts_[duration];
  ++size_;
}

DurationMs DurationCounts::atRank(int64_t rank) const {
  for (const auto& [duration, count] : counts_) {
    if (rank < count) return duration;
    rank -= count;
  }
  return counts_.empty() ? 0 : counts_.rbegin()->first;
}

DurationMs speculationThreshold(int64_t numTasks, const DurationCounts& successful,
                                const SpeculationConfig& config) {
  // Spark: minFinishedForSpeculation = max(floor(quantile * numTasks), 1).
  const int64_t needed = std::max<int64_t>(
      static_cast<int64_t>(std::floor(config.quantile * static_cast<double>(numTasks))), 1);
  if (successful.size() < needed || successful.empty()) {
    // Spark: a small stage (it fits on one executor) may name its own threshold.
    const bool fitsOneExecutor = numTasks <= std::max<int64_t>(config.slotsPerExecutor, 1);
    return config.taskDurationThresholdMs >= 0 && fitsOneExecutor ? config.taskDurationThresholdMs
                                                                  : -1;
  }
  const DurationMs median = successful.atRank(successful.size() / 2);
  return std::max<DurationMs>(
      static_cast<DurationMs>(config.multiplier * static_cast<double>(median)),
      config.minThresholdMs);
}

std::vector<int64_t> speculatableTasks(int64_t numTasks, const DurationCounts& successful,
                                       const std::vector<RunningCopy>& running, TimeMs now,
                                       const SpeculationConfig& config) {
  std::vector<int64_t> slow;
  const DurationMs threshold = speculationThreshold(numTasks, successful, config);
  if (threshold < 0) return slow;
  for (const RunningCopy& copy : running) {
    if (now - copy.startMs > threshold) slow.push_back(copy.index);
  }
  std::sort(slow.begin(), slow.end());
  return slow;
}

}  // namespace tide::allocation
