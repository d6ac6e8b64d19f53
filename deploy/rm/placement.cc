#include "deploy/rm/placement.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace tide::rm {

std::string amShareRefusal(const Resource& amUsed, const Resource& need, const Resource& total,
                           double maxAmShare) {
  if (amUsed.memoryMb <= 0 && amUsed.vCores <= 0) return "";  // one AM always may run
  const auto limit = [&](int64_t whole) {
    return static_cast<int64_t>(std::floor(static_cast<double>(whole) * maxAmShare + 1e-9));
  };
  const Resource wouldHold = plus(amUsed, need);
  const Resource limits{limit(total.memoryMb), static_cast<int>(limit(total.vCores))};
  std::string what;
  if (wouldHold.memoryMb > limits.memoryMb) {
    what = std::to_string(wouldHold.memoryMb) + " MB of memory, above " +
           std::to_string(limits.memoryMb) + " MB";
  } else if (wouldHold.vCores > limits.vCores) {
    what = std::to_string(wouldHold.vCores) + " vCores, above " + std::to_string(limits.vCores) +
           " vCores";
  } else {
    return "";
  }
  std::ostringstream why;
  why << "waiting for AM resources: with this AM, AM containers would hold " << what
      << " (rm.maxAmShare=" << maxAmShare << " of the cluster's " << describeResource(total)
      << "); AM containers now hold " << describeResource(amUsed);
  return why.str();
}

std::optional<size_t> placeRoundRobin(const std::vector<Resource>& free, const Resource& need,
                                      size_t& cursor) {
  const size_t count = free.size();
  if (count == 0) return std::nullopt;
  cursor %= count;
  for (size_t visited = 0; visited < count; ++visited) {
    const size_t position = cursor;
    cursor = (cursor + 1) % count;
    if (fits(free[position], need)) return position;
  }
  return std::nullopt;
}

std::vector<size_t> placeContainers(const std::vector<Resource>& free, const Resource& each,
                                    int wanted, bool spreadOut) {
  std::vector<size_t> granted;
  if (wanted <= 0) return granted;
  std::vector<Resource> left = free;
  std::vector<size_t> usable;
  for (size_t i = 0; i < left.size(); ++i) {
    if (fits(left[i], each)) usable.push_back(i);
  }
  int remaining = wanted;
  // Each pass drops the nodes that can take no more; it ends when none is left or the ask is
  // satisfied. Packed mode fills a node within one visit, so it needs a single pass.
  while (!usable.empty() && remaining > 0) {
    std::vector<size_t> stillUsable;
    for (size_t position : usable) {
      while (remaining > 0 && fits(left[position], each)) {
        left[position] = minus(left[position], each);
        granted.push_back(position);
        --remaining;
        if (spreadOut) break;
      }
      if (fits(left[position], each)) stillUsable.push_back(position);
    }
    usable.swap(stillUsable);
  }
  return granted;
}

std::vector<size_t> orderByFreeCoresDescending(const std::vector<Resource>& free) {
  std::vector<size_t> order(free.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return free[a].vCores > free[b].vCores; });
  return order;
}

}  // namespace tide::rm
