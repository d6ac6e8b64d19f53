#include "am/containers/container_placement.h"

#include <algorithm>
#include <cmath>

namespace tide::am {
namespace {

// Rounds up, forgiving the last bits of a floating-point quotient (1.5 - 1.5 is 0, not 1e-16).
int ceilAtLeastZero(double x) {
  const double c = std::ceil(x - 1e-9);
  return c <= 0 ? 0 : static_cast<int>(c);
}

}  // namespace

std::map<std::string, int> expectedHostToContainerCount(const PlacementInput& input) {
  std::map<std::string, int> expected;
  int64_t totalLocalTasks = 0;
  for (const auto& [host, tasks] : input.tasksByHost)
    totalLocalTasks += std::max<int64_t>(0, tasks);
  if (totalLocalTasks == 0) return expected;

  // The executors the locality-aware tasks fill.
  const int64_t perExecutor = std::max(1, input.tasksPerExecutor);
  const int64_t executorsNeeded = (input.localityAwareTasks + perExecutor - 1) / perExecutor;

  // A pending request naming several hosts lands on one of them: each host gets its share.
  std::map<std::string, double> pendingOnHost;
  int64_t namedHosts = 0;
  for (const auto& request : input.pendingRequests) {
    for (const std::string& host : request) {
      pendingOnHost[host] += 1;
      ++namedHosts;
    }
  }
  if (namedHosts > 0) {
    const double scale = static_cast<double>(input.pendingRequests.size()) / namedHosts;
    for (auto& [host, count] : pendingOnHost) count *= scale;
  }

  for (const auto& [host, tasks] : input.tasksByHost) {
    const double wanted = static_cast<double>(std::max<int64_t>(0, tasks)) *
                          static_cast<double>(executorsNeeded) /
                          static_cast<double>(totalLocalTasks);
    double there = 0;
    if (auto e = input.executorsByHost.find(host); e != input.executorsByHost.end()) {
      there += e->second;
    }
    if (auto p = pendingOnHost.find(host); p != pendingOnHost.end()) there += p->second;
    expected[host] = ceilAtLeastZero(wanted - there);
  }
  return expected;
}

std::vector<std::vector<std::string>> localityOfRequestedContainers(const PlacementInput& input) {
  const int containers = std::max(0, input.containers);
  const std::map<std::string, int> expected = expectedHostToContainerCount(input);
  int64_t localityAware = 0;
  int largest = 0;
  for (const auto& [host, count] : expected) {
    localityAware += count;
    largest = std::max(largest, count);
  }
  // Requests beyond what the preferred hosts still need go anywhere; they come first.
  const int anywhere = static_cast<int>(std::max<int64_t>(0, containers - localityAware));
  const int preferring = containers - anywhere;
  std::vector<std::vector<std::string>> localities(static_cast<size_t>(anywhere));
  if (preferring == 0 || largest == 0) return localities;

  // Each host's share of the preferring requests, scaled so the most wanted host is named in
  // all of them, rounded up; a host is named until its share is used up.
  std::map<std::string, int64_t> share;
  for (const auto& [host, count] : expected) {
    share[host] = (static_cast<int64_t>(count) * preferring + largest - 1) / largest;
  }
  for (int i = 0; i < preferring; ++i) {
    std::vector<std::string> hosts;
    for (auto& [host, left] : share) {
      if (left > 0) hosts.push_back(host);
      --left;
    }
    localities.push_back(std::move(hosts));
  }
  return localities;
}

std::vector<std::pair<std::string, int>> hostAsksFor(
    const std::vector<std::vector<std::string>>& localities) {
  // The requests naming fewest hosts first (the later ones, in Spark's order): they have the
  // least choice, and the wider ones then fill the hosts left with fewest.
  std::vector<const std::vector<std::string>*> order;
  for (const auto& hosts : localities) {
    if (!hosts.empty()) order.push_back(&hosts);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->size() < b->size(); });
  std::map<std::string, int> onHost;
  for (const auto* request : order) {
    const std::vector<std::string>& hosts = *request;
    const std::string* least = nullptr;
    for (const std::string& host : hosts) {
      auto it = onHost.find(host);
      const int count = it == onHost.end() ? 0 : it->second;
      if (least == nullptr) {
        least = &host;
        continue;
      }
      auto lit = onHost.find(*least);
      const int leastCount = lit == onHost.end() ? 0 : lit->second;
      if (count < leastCount || (count == leastCount && host < *least)) least = &host;
    }
    ++onHost[*least];
  }
  return {onHost.begin(), onHost.end()};
}

}  // namespace tide::am
