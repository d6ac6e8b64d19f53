#include "am/scheduler/scheduling_order.h"

#include <algorithm>
#include <numeric>

namespace tide::am {

std::vector<size_t> FifoSchedulingOrder::order(const SchedulingQueue& queue) const {
  std::vector<size_t> order(queue.sets.size());
  std::iota(order.begin(), order.end(), size_t{0});
  return order;
}

FairSchedulingOrder::FairSchedulingOrder(std::vector<PoolConfig> pools) {
  for (PoolConfig& pool : pools) pools_[pool.name] = std::move(pool);
}

std::vector<size_t> FairSchedulingOrder::order(const SchedulingQueue& queue) const {
  std::map<std::string, std::vector<size_t>> byPool;
  for (size_t i = 0; i < queue.sets.size(); ++i) byPool[queue.sets[i].pool].push_back(i);
  auto poolConfig = [&](const std::string& name) {
    auto it = pools_.find(name);
    return it == pools_.end() ? PoolConfig{name} : it->second;
  };
  std::vector<FairShareState> poolStates;
  for (const auto& [name, members] : byPool) {
    const PoolConfig pool = poolConfig(name);
    auto running = queue.runningByPool.find(name);
    poolStates.push_back(FairShareState{running == queue.runningByPool.end() ? 0 : running->second,
                                        pool.minShare, pool.weight, name});
  }
  std::sort(poolStates.begin(), poolStates.end(), fairSchedulingBefore);
  std::vector<size_t> ordered;
  ordered.reserve(queue.sets.size());
  for (const FairShareState& state : poolStates) {
    std::vector<size_t>& members = byPool[state.name];
    if (poolConfig(state.name).mode == SchedulingMode::kFair) {
      std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
        const SchedulableTaskSet& sa = queue.sets[a];
        const SchedulableTaskSet& sb = queue.sets[b];
        return fairSchedulingBefore(FairShareState{sa.runningTasks, 0, 1, sa.stageId},
                                    FairShareState{sb.runningTasks, 0, 1, sb.stageId});
      });
    }
    ordered.insert(ordered.end(), members.begin(), members.end());
  }
  return ordered;
}

std::unique_ptr<SchedulingOrder> makeSchedulingOrder(SchedulingMode mode,
                                                     const std::vector<PoolConfig>& pools) {
  if (mode == SchedulingMode::kFair) return std::make_unique<FairSchedulingOrder>(pools);
  return std::make_unique<FifoSchedulingOrder>();
}

}  // namespace tide::am
