#pragma once

// Where containers go: the placement half of Spark's Master.schedule(), as pure functions over
// the free resources of candidate nodes. ClusterState gathers the candidates (alive nodes,
// shuffled with its seeded RNG) and applies the result; tests call these directly.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "rest/messages/node.h"  // Resource

namespace tide::rm {

using rest::Resource;

// Whether `need` fits into `free` without over-committing memory or cores.
inline bool fits(const Resource& free, const Resource& need) {
  return free.memoryMb >= need.memoryMb && free.vCores >= need.vCores;
}

inline Resource minus(const Resource& a, const Resource& b) {
  return Resource{a.memoryMb - b.memoryMb, a.vCores - b.vCores};
}

inline Resource plus(const Resource& a, const Resource& b) {
  return Resource{a.memoryMb + b.memoryMb, a.vCores + b.vCores};
}

// How many of `each` fit into `room` side by side (0 for an `each` of nothing: not a size).
inline int64_t countFitting(const Resource& room, const Resource& each) {
  if (each.memoryMb <= 0 && each.vCores <= 0) return 0;
  int64_t count = std::numeric_limits<int64_t>::max();
  if (each.memoryMb > 0)
    count = std::min(count, std::max<int64_t>(0, room.memoryMb) / each.memoryMb);
  if (each.vCores > 0) count = std::min<int64_t>(count, std::max(0, room.vCores) / each.vCores);
  return count;
}

// "1024 MB, 2 vCores", for messages.
inline std::string describeResource(const Resource& resource) {
  return std::to_string(resource.memoryMb) + " MB, " + std::to_string(resource.vCores) + " vCores";
}

// YARN's maximum-am-resource-percent: the AM containers' share of the cluster (`total`, over
// the nodes that take containers) is bounded by `maxAmShare` in memory and in cores, so AMs
// cannot take every slot and leave their executors none. `amUsed` is what AM containers hold
// now; one AM is always allowed when none holds anything, so a small cluster still runs one
// application at a time. Returns "" when `need` may start, else why not (naming rm.maxAmShare
// and the numbers).
std::string amShareRefusal(const Resource& amUsed, const Resource& need, const Resource& total,
                           double maxAmShare);

// AM containers (Spark's drivers): starting at `cursor`, visits each candidate at most once
// and takes the first whose free resources fit `need`. The cursor moves past every node
// visited, so that successive AMs go round-robin over the nodes. Returns the index chosen,
// or nullopt when no candidate fits (the cursor has then gone once around).
std::optional<size_t> placeRoundRobin(const std::vector<Resource>& free, const Resource& need,
                                      size_t& cursor);

// Executor containers (Spark's scheduleExecutorsOnWorkers with one container per grant):
// up to `wanted` containers of `each`, over candidates in the given order.
//   spreadOut: pass after pass over the candidates, one container per node per pass, so the
//              containers spread over as many nodes as possible;
//   packed:    fill each node before moving to the next.
// Returns the candidate index of each container in the order granted; never more than a
// node's free resources allow.
std::vector<size_t> placeContainers(const std::vector<Resource>& free, const Resource& each,
                                    int wanted, bool spreadOut);

// The order Spark offers usable workers in: most free cores first. Stable, so candidates
// with equal free cores keep the (shuffled) order they came in. Returns candidate indices.
std::vector<size_t> orderByFreeCoresDescending(const std::vector<Resource>& free);

}  // namespace tide::rm
