#pragma once

// How the AM talks to whatever gives it executors: tide-rm (TideRmClient) or Slurm (later).
// YARN-shaped: register once, heartbeat with the number of containers still wanted and the
// ones to release, start executors in the containers granted, unregister with a final status.

#include <string>
#include <vector>

#include "rest/messages/cluster.h"

namespace tide::am {

struct AmEndpoint {
  std::string host;
  int port = 0;
  std::string trackingUrl;
};

// What the AM asks for in one heartbeat.
struct ContainerAsk {
  rest::Resource resource;  // per executor container
  int priority = 1;
  // Containers wanted and not yet granted, in total (YARN's numContainers: it replaces the
  // previous ask). Lowering it cancels requests; it never takes back a granted container.
  int outstanding = 0;
  std::vector<std::string> releases;  // container ids given back
  double progress = 0;
};

struct HeartbeatResult {
  std::vector<rest::Container> granted;
  std::vector<rest::CompletedContainer> completed;
  int numClusterNodes = 0;
};

// Everything needed to start tide-executor in a container.
struct ExecutorLaunch {
  std::string executorId;
  std::string command;  // a shell command line
  std::vector<std::pair<std::string, std::string>> environment;
};

class ResourceManagerClient {
 public:
  virtual ~ResourceManagerClient() = default;
  virtual rest::RegisterApplicationMasterResponse registerAm(const AmEndpoint& endpoint) = 0;
  // One heartbeat (YARN's allocate). Throws on failure; the caller retries at its next beat.
  virtual HeartbeatResult heartbeat(const ContainerAsk& ask) = 0;
  // Starts the executor in a granted container. Throws with a message naming the node.
  virtual void launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) = 0;
  virtual void unregister(const std::string& finalStatus, const std::string& diagnostics) = 0;
};

}  // namespace tide::am
