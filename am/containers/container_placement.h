#pragma once

// Where to ask for new executor containers (Spark's LocalityPreferredContainerPlacementStrategy):
// spread the requests over the hosts pending tasks prefer, in proportion to how many tasks
// prefer each, less the executors already there, and let each request go to any of the hosts
// it names. Pure: a function of its input.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tide::am {

// One resource profile's pending-task locality (Spark's hostToLocalTaskCount and
// numLocalityAwareTasks, which ExecutorAllocationManager keeps per ResourceProfile): its
// submitted stages' tasks by the host they prefer, how many prefer some host, and how many of
// its tasks one of its executors runs.
struct LocalityHints {
  std::map<std::string, int64_t> tasksByHost;
  int64_t localityAwareTasks = 0;
  int tasksPerExecutor = 1;

  bool operator==(const LocalityHints& other) const {
    return tasksByHost == other.tasksByHost && localityAwareTasks == other.localityAwareTasks &&
           tasksPerExecutor == other.tasksPerExecutor;
  }
};

struct PlacementInput {
  int containers = 0;              // requests to place (Spark's numContainer)
  int64_t localityAwareTasks = 0;  // pending tasks that prefer some host
  int tasksPerExecutor = 1;        // executor.cores / task.cpus
  // Pending tasks by a host they prefer (a task preferring 3 hosts counts on each).
  std::map<std::string, int64_t> tasksByHost;
  // Executors (granted containers, started or not) already on each host.
  std::map<std::string, int> executorsByHost;
  // Requests still pending whose hosts match current preferences, each the hosts it names.
  std::vector<std::vector<std::string>> pendingRequests;
};

// How many more containers each preferred host should get: its share of the executors the
// locality-aware tasks need (tasksByHost[h] * ceil(localityAwareTasks / tasksPerExecutor) /
// sum of tasksByHost), less the executors there and its share of the pending requests, rounded
// up, never below 0.
std::map<std::string, int> expectedHostToContainerCount(const PlacementInput& input);

// One entry per container to request, in order: the hosts it may go to (any of them), or empty
// for no preference. Requests beyond what the preferred hosts still need have no preference;
// the others name every host whose share (scaled to the number of locality-aware requests,
// rounded up) is not yet used up, so the first requests name all the wanted hosts and later
// ones fewer.
std::vector<std::vector<std::string>> localityOfRequestedContainers(const PlacementInput& input);

// tide's RM protocol asks for a number of containers per single host (and the rest anywhere);
// each request naming several hosts is counted on the one of them given the fewest so far
// (ties: the earlier host name), the requests naming fewest hosts placed first. The requests are
// relaxed (relaxLocality), so the RM may still grant one elsewhere when its host is full. Hosts in
// name order; requests without a preference are not listed.
std::vector<std::pair<std::string, int>> hostAsksFor(
    const std::vector<std::vector<std::string>>& localities);

}  // namespace tide::am
