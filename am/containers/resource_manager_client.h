#pragma once

// How the AM talks to whatever gives it executors: tide-rm (TideRmClient) or Slurm
// (SlurmClient). YARN-shaped: register once, heartbeat with the number of containers still
// wanted and the ones to release, start executors in the containers granted, unregister with a
// final status. A backend may start executors itself (a Slurm job's script runs
// tide-executor): it then names each executor when it starts it and launchExecutor does
// nothing.

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/status.h"
#include "rest/messages/cluster.h"

namespace tide::am {

struct AmEndpoint {
  std::string host;
  int port = 0;
  std::string trackingUrl;
};

// The containers wanted of one resource profile's executor shape other than the default's
// (stage-level executor shapes, Spark's ResourceProfile), at its own priority. A profile with
// none outstanding is still listed (0 withdraws its earlier ask).
struct ProfileAsk {
  int profileId = 0;
  rest::Resource resource;
  int priority = 1;
  int outstanding = 0;
  // Of `outstanding`, how many to ask for on each host, for the profile's own pending tasks
  // whose data is there (as ContainerAsk::hostAsks for the default profile).
  std::vector<std::pair<std::string, int>> hostAsks;
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
  // Of `outstanding`, how many to ask for on each host (node id or host name), for pending
  // tasks whose data is there (Spark's locality-preferred container placement); the rest may
  // go anywhere. Backends without host asks ask for all of `outstanding` anywhere.
  std::vector<std::pair<std::string, int>> hostAsks;
  // The asks of the other resource profiles, by profile id (`resource` above is the default
  // profile's: executor.cores and executor.memory).
  std::vector<ProfileAsk> profileAsks;
};

// How many executors of this application's size the cluster could hold, as its backend says:
// what explains "target 137, live 2" (a full or small cluster, not the policy).
struct ClusterCapacity {
  int fitNow = -1;                 // more that fit in what is free now; -1: unknown
  int fitTotal = -1;               // that its live nodes hold when empty; -1: unknown
  std::string source = "unknown";  // where the numbers come from, or why there are none
};

struct HeartbeatResult {
  std::vector<rest::Container> granted;
  std::vector<rest::CompletedContainer> completed;
  int numClusterNodes = 0;
  ClusterCapacity capacity;
  // Container id -> executor id, for executors the backend started itself (Slurm): the
  // allocator uses these ids instead of numbering grants.
  std::map<std::string, std::string> executorIds;
  // Executors the backend started whose containers are not granted yet: one may register with
  // the AM before the heartbeat that reports its container (it is told to retry).
  std::vector<std::string> startingExecutors;
};

// What every executor of the application is started with: the command and the environment
// shared by all (the AM's address, the app secret, the application id).
struct ExecutorTemplate {
  std::string command;  // a shell command line that execs tide-executor
  std::vector<std::pair<std::string, std::string>> environment;
};

// The template's command for an executor of `cores` cores (a resource profile's shape): its
// `--conf 'executor.cores=N'` says `cores` instead. Backends that start executors themselves
// (Slurm) start each with the cores of the container it was asked for.
inline std::string withExecutorCores(const std::string& command, int cores) {
  const std::string key = "--conf 'executor.cores=";
  const size_t at = command.find(key);
  if (at == std::string::npos) return command;
  const size_t value = at + key.size();
  const size_t end = command.find('\'', value);
  if (end == std::string::npos) return command;
  return command.substr(0, value) + std::to_string(cores) + command.substr(end);
}

// The resource manager refused the application's request for good (e.g. Slurm rejected the
// executor job: no such partition or account); asking again cannot help, so the application
// fails with this message.
class ResourceManagerRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
  // Called once before registerAm, when the AM's address is known. Backends that start
  // executors themselves keep it; the others start them through launchExecutor.
  virtual void setExecutorTemplate(const ExecutorTemplate& executorTemplate) {
    (void)executorTemplate;
  }
  virtual rest::RegisterApplicationMasterResponse registerAm(const AmEndpoint& endpoint) = 0;
  // One heartbeat (YARN's allocate). Throws on failure; the caller retries at its next beat.
  // Throws ResourceManagerRejected when the application cannot get executors at all.
  virtual HeartbeatResult heartbeat(const ContainerAsk& ask) = 0;
  // Starts the executor in a granted container. Throws with a message naming the node.
  virtual void launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) = 0;
  virtual void unregister(const std::string& finalStatus, const std::string& diagnostics) = 0;
  // A file of the container's kept logs ("stderr", "tasks/<stage>-<index>-<attempt>/stdout",
  // common/app_logs.h) from its node manager, read with the container's token; with
  // `tailBytes`, its last bytes. Thread-safe (the status page's handlers call it). Backends
  // without node managers keep no such logs: kFailedPrecondition.
  virtual Status readContainerLog(const rest::Container& container,
                                  const std::string& applicationId, const std::string& path,
                                  std::optional<int64_t> tailBytes, std::string* content) {
    (void)container, (void)applicationId, (void)path, (void)tailBytes, (void)content;
    return Status::failedPrecondition(
        "this resource manager's executors keep no logs on a node manager");
  }
};

}  // namespace tide::am
