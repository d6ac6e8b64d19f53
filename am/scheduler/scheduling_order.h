#pragma once

// The order in which the active TaskSets are offered free slots (Spark's SchedulingAlgorithm,
// Mesos' sorters): an interface chosen once from scheduler.mode, and its two implementations.
//   FIFO: job submission order, then stage submission order (the order the sets come in).
//   FAIR: the sets grouped by their job's pool; pools ordered by Spark's
//         FairSchedulingAlgorithm (scheduling_pool.h: fairSchedulingBefore); within a pool, its
//         own mode: FIFO keeps the order given, FAIR orders by running tasks, then stage id.
// Pure: no clock, no randomness; equal inputs give equal orders.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "am/scheduler/scheduling_pool.h"

namespace tide::am {

// One active TaskSet as an ordering sees it.
struct SchedulableTaskSet {
  std::string pool;          // its job's pool ("default" when the job names none)
  std::string stageId;       // "<jobId>/<stage>": the tie-breaker within a FAIR pool
  int64_t runningTasks = 0;  // of this stage
};

// What the ordering looks at: the active sets in FIFO order, and the running tasks of every
// pool (running tasks of stages that are no longer active count for their pool too).
struct SchedulingQueue {
  std::vector<SchedulableTaskSet> sets;
  std::map<std::string, int64_t> runningByPool;
};

class SchedulingOrder {
 public:
  virtual ~SchedulingOrder() = default;
  // Indices into queue.sets, each once, in the order the sets are offered slots.
  virtual std::vector<size_t> order(const SchedulingQueue& queue) const = 0;
  virtual SchedulingMode mode() const = 0;
  // Whether order() reads the running-task counts (callers may leave them out otherwise).
  virtual bool readsRunningTasks() const = 0;
};

class FifoSchedulingOrder : public SchedulingOrder {
 public:
  std::vector<size_t> order(const SchedulingQueue& queue) const override;
  SchedulingMode mode() const override { return SchedulingMode::kFifo; }
  bool readsRunningTasks() const override { return false; }
};

class FairSchedulingOrder : public SchedulingOrder {
 public:
  // `pools`: from scheduler.allocation.file; a pool not listed gets PoolConfig's defaults.
  explicit FairSchedulingOrder(std::vector<PoolConfig> pools);
  std::vector<size_t> order(const SchedulingQueue& queue) const override;
  SchedulingMode mode() const override { return SchedulingMode::kFair; }
  bool readsRunningTasks() const override { return true; }

 private:
  std::map<std::string, PoolConfig> pools_;
};

// The ordering for scheduler.mode (`pools` matter only to FAIR).
std::unique_ptr<SchedulingOrder> makeSchedulingOrder(SchedulingMode mode,
                                                     const std::vector<PoolConfig>& pools);

}  // namespace tide::am
