#pragma once

// Which running tasks deserve a speculative second copy (Spark's
// TaskSetManager.checkSpeculatableTasks): once `quantile` of a stage's tasks have succeeded,
// a task whose only copy has run longer than max(multiplier x the median successful duration,
// minThreshold) is speculatable. Pure: durations and start times in, indices out.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <vector>

#include "common/clock.h"

namespace tide {
class Properties;
}

namespace tide::allocation {

struct SpeculationConfig {
  double quantile = 0.9;  // Spark 4's defaults
  double multiplier = 3.0;
  DurationMs minThresholdMs = 100;  // speculation.minTaskRuntime
  // speculation.task.duration.threshold (-1: unset): before the quantile is reached, a stage
  // with no more tasks than one executor has slots speculates tasks running longer than this.
  DurationMs taskDurationThresholdMs = -1;
  int64_t slotsPerExecutor = 1;  // executor.cores / task.cpus
};

// The speculation* keys, read the same way by the AM's scheduler and `tide simulate`.
struct SpeculationSettings {
  bool enabled = false;         // speculation
  DurationMs intervalMs = 100;  // speculation.interval: how often to look for slow tasks
  SpeculationConfig rule;       // with slotsPerExecutor = executor.cores / task.cpus
};

// Throws ConfigError naming the key when a value is out of range.
SpeculationSettings readSpeculationSettings(const Properties& properties);

// Successful durations of a stage's tasks as a count per distinct value: the exact median in
// memory by how many different durations there were (ms), not by how many tasks succeeded.
class DurationCounts {
 public:
  DurationCounts() = default;
  DurationCounts(std::initializer_list<DurationMs> durations);
  DurationCounts(const std::vector<DurationMs>& durations);  // NOLINT: a list of durations
  void add(DurationMs duration);
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The `rank`-th smallest duration, 0-based (rank < size()).
  DurationMs atRank(int64_t rank) const;

 private:
  std::map<DurationMs, int64_t> counts_;
  int64_t size_ = 0;
};

// A task with exactly one running copy.
struct RunningCopy {
  int64_t index = 0;
  TimeMs startMs = 0;
};

// The duration above which a running task is slow, or -1 while too few tasks have succeeded.
DurationMs speculationThreshold(int64_t numTasks, const DurationCounts& successful,
                                const SpeculationConfig& config);

// The indices of `running` that are slow at `now`, ascending.
std::vector<int64_t> speculatableTasks(int64_t numTasks, const DurationCounts& successful,
                                       const std::vector<RunningCopy>& running, TimeMs now,
                                       const SpeculationConfig& config);

}  // namespace tide::allocation
