#pragma once

// The resource manager's state machine: nodes, applications, attempts and containers, and the
// scheduling pass (Spark's Master.schedule(): FIFO over applications, AM containers strictly
// first and round-robin over shuffled alive nodes, executor containers spread out or packed).
//
// It is pure: no sockets, no threads, time from an injected Clock, placement randomness from a
// seeded RNG and secrets from an injected generator. Work that needs the network (launching an
// AM container on its node, stopping a container promptly) is queued in an Outbox the caller
// takes and carries out; its failures come back through amLaunchFailed(). Not thread-safe: the
// REST layer serialises calls.
//
// Container lifecycle: ALLOCATED (granted, resources held) -> RUNNING (its node reports it)
// -> COMPLETE. A container the RM wants gone (released by its AM, killed with its application
// or attempt) is STOPPING: it keeps its resources until its node reports it complete or no
// longer reports it, so a node is never over-committed, and its exit status is then the RM's
// (-100 released, -106 killed) rather than the node's.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "deploy/rm/rm_config.h"
#include "deploy/rm/state_store.h"
#include "rest/messages/cluster.h"
#include "rest/messages/node.h"

namespace tide::rm {

using rest::Resource;

// Makes a fresh secret (node secrets, AM tokens): 64 hex characters. Production draws them
// from the OS's CSPRNG; tests inject a seeded generator so runs repeat.
using SecretGenerator = std::function<std::string()>;
SecretGenerator systemSecretGenerator();
SecretGenerator seededSecretGenerator(uint64_t seed);

// An AM container the RM must start on its node (POST /ws/v1/node/containers).
struct AmLaunch {
  std::string nodeId;
  std::string nodeHttpAddress;  // "host:port"
  rest::ContainerLaunchRequest request;
};

// A container to stop at once (DELETE /ws/v1/node/containers/{id} with the node's secret);
// the heartbeat's containersToStop is the reliable path, this only makes it prompt.
struct ContainerStopOrder {
  std::string nodeId;
  std::string nodeHttpAddress;
  std::string nodeSecret;
  std::string containerId;
};

struct Outbox {
  std::vector<AmLaunch> launches;
  std::vector<ContainerStopOrder> stops;
  bool empty() const { return launches.empty() && stops.empty(); }
};

struct ClusterStateOptions {
  RmConfig config;
  // Epoch milliseconds at start: the cluster timestamp in ids, and the origin of the epoch
  // times in reports (the Clock gives the rest).
  int64_t clusterTimestamp = 0;
  uint64_t placementSeed = 0;  // seeds the shuffle of alive nodes
  std::string version = "tide-rm";
  // Whether a state store keeps what must survive a restart: the state then queues the
  // records to write (takeStoreRecords) at every change of an application or of the counters.
  bool stateStore = false;
};

// How a container ended, for tests and the log.
struct ContainerOutcome {
  std::string containerId;
  std::string applicationId;
  std::string nodeId;
  int exitStatus = 0;
  std::string diagnostics;
  bool amContainer = false;
};

// A live container as the state sees it, for tests and introspection.
struct ContainerView {
  std::string id;
  std::string applicationId;
  std::string attemptId;
  std::string nodeId;
  Resource resource;
  std::string state;  // ALLOCATED, RUNNING or STOPPING
  bool amContainer = false;
};

class ClusterState {
 public:
  ClusterState(ClusterStateOptions options, const Clock& clock, SecretGenerator secrets);
  ~ClusterState();
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Where AMs find the RM (TIDE_RM_ADDRESS), known once the server has bound its port.
  void setRmAddress(std::string url) { rmAddress_ = std::move(url); }
  const std::string& rmAddress() const { return rmAddress_; }

  // --- Client API. Throws RmError (404 unknown application, 409 wrong state).
  rest::NewApplicationResponse newApplication();
  void submitApplication(const rest::ApplicationSubmission& submission);
  rest::ApplicationReport applicationReport(const std::string& applicationId) const;
  std::vector<rest::ApplicationReport> applicationReports() const;
  // Kills an application: stops its containers and marks it KILLED. Killing a KILLED
  // application again is a no-op; a FINISHED or FAILED one is a 409.
  rest::AppStateMessage killApplication(const std::string& applicationId);
  rest::ClusterMetrics metrics() const;
  std::vector<rest::NodeReport> nodeReports() const;
  rest::ClusterInfo info() const;

  // --- Node managers.
  rest::NodeRegistrationResponse registerNode(const rest::NodeRegistration& registration);
  // A heartbeat for a node the RM knows as alive must carry that node's secret (401 if not),
  // so nobody else can speak for it. Unknown and lost nodes pass: they are told to register.
  void authenticateNode(const std::string& nodeId, const std::string& bearerToken) const;
  rest::NodeHeartbeatResponse nodeHeartbeat(const std::string& nodeId,
                                            const rest::NodeHeartbeat& heartbeat);

  // --- ApplicationMaster protocol. `bearerToken` is the token from the Authorization header
  // (empty when missing). Throws RmError: 401 bad token, 404 unknown attempt, 409 wrong state.
  void authenticateAttempt(const std::string& attemptId, const std::string& bearerToken) const;
  rest::RegisterApplicationMasterResponse registerApplicationMaster(
      const std::string& attemptId, const rest::RegisterApplicationMasterRequest& request);
  rest::AllocateResponse allocate(const std::string& attemptId,
                                  const rest::AllocateRequest& request);
  rest::FinishApplicationMasterResponse finishApplicationMaster(
      const std::string& attemptId, const rest::FinishApplicationMasterRequest& request);

  // The launch of an AM container failed (its node refused or could not be reached). A
  // transient refusal (the node answered 503 or refused the connection: it has not finished
  // registering, or is restarting) withdraws the container and places the AM again, on another
  // node when one fits, without using up the attempt (at most kMaxAmLaunchRetries times per
  // attempt); any other failure fails the attempt as if the container had exited.
  void amLaunchFailed(const std::string& containerId, const std::string& reason,
                      bool transient = false);
  static constexpr int kMaxAmLaunchRetries = 5;

  // Expires nodes without heartbeats and AM attempts without allocate calls; schedules when
  // anything changed. Call it often (every nodeExpiry/4 or 250 ms).
  void checkExpiries();
  // One scheduling pass; every mutation above already ends with one.
  void schedule();

  // The network work decided since the last call.
  Outbox takeOutbox();

  // --- Restarts (work-preserving, as YARN's RM restart). Called once, right after
  // construction, with what the state store holds: the counters (the cluster timestamp stays
  // the first start's, so ids stay unique; the epoch goes up by one), the applications and
  // their attempts. A registered attempt must register again (its allocate answers
  // reRegister); the containers node managers report when they register again are adopted
  // when they belong to an active attempt and were allocated before this start (an older
  // epoch), instead of being stopped. Without a stored state it only records the counters.
  void recover(const StoredState& stored);
  // What to write to the state store since the last call (empty without options.stateStore);
  // the caller writes it before answering the request that made it.
  std::vector<StoreRecord> takeStoreRecords();
  int64_t epoch() const { return epoch_; }

  // --- Introspection, for tests, the bench and logs.
  const ClusterStateOptions& options() const { return options_; }
  std::optional<ContainerView> container(const std::string& containerId) const;
  std::vector<ContainerView> liveContainers() const;
  // The most recent completions, oldest first (bounded).
  const std::deque<ContainerOutcome>& completedContainers() const { return completed_; }
  std::string amToken(const std::string& attemptId) const;
  std::string nodeSecret(const std::string& nodeId) const;
  // The TIDE_APP_SECRET the application was submitted with ("" when none); throws RmError
  // 404 for an unknown application.
  std::string applicationSecret(const std::string& applicationId) const;
  // Epoch milliseconds now, as reports show them.
  int64_t epochNowMs() const;

  static constexpr size_t kCompletedHistory = 1000;

 private:
  struct Node;
  struct Application;
  struct Attempt;
  struct ContainerRecord;
  struct Ask;
  // Asks are kept ordered: priority first (lower is more urgent, as in YARN), then asks for a
  // named node before asks for any node, then the name and the size.
  using AskKey = std::tuple<int, bool, std::string, int64_t, int>;

  Application& requireApplication(const std::string& applicationId);
  const Application& requireApplication(const std::string& applicationId) const;
  Attempt& requireAttempt(const std::string& attemptId);
  const Attempt& requireAttempt(const std::string& attemptId) const;

  std::string newSecret();
  // The application's stored form changed: it is written with the next takeStoreRecords().
  void markDirty(const Application& app);
  StoredApplication storedOf(const Application& app) const;
  // A container a node reports that this RM does not hold: adopted (true) when it belongs to
  // the active attempt of a recovered application and was allocated before this start.
  bool adoptReportedContainer(Node& node, const rest::ContainerStatus& status);
  // nodeHeartbeat's steps: one reported container's status applied (true when it freed
  // resources); the containers the node no longer reports completed (true when there were any).
  bool applyContainerStatus(Node& node, const rest::ContainerStatus& status,
                            rest::NodeHeartbeatResponse& response);
  bool completeVanishedContainers(Node& node, const std::unordered_set<std::string>& reported);
  void startAttempt(Application& app);
  void failAttempt(Attempt& attempt, const std::string& reason);
  void endApplication(Application& app, const char* state, const char* finalStatus,
                      const std::string& diagnostics);

  ContainerRecord& allocateContainer(Attempt& attempt, Node& node, const Resource& resource,
                                     bool amContainer);
  // Asks the container's node to stop it; it completes with `exitStatus` once the node
  // confirms. No-op for a container already stopping.
  void stopContainer(ContainerRecord& container, int exitStatus, const std::string& diagnostics);
  // Frees the container's resources and tells whoever needs to know. Erases the record.
  void completeContainer(const std::string& containerId, int exitStatus,
                         const std::string& diagnostics);
  void loseNode(Node& node, const std::string& why);
  // Stops the containers an AM gives back (a release of one already stopping is a no-op).
  void releaseContainers(Attempt& attempt, const std::vector<std::string>& releases);

  // `alive`: the shuffled ready nodes with room for a container.
  void scheduleAmContainers(const std::vector<Node*>& alive);
  // scheduleAmContainers' steps: the cluster an AM is measured against; why an AM of `need`
  // must wait ("" when it may be placed); the AM container allocated on `node` and launched.
  struct AmCapacity;
  AmCapacity amCapacity() const;
  std::string amWaitingReason(const AmCapacity& capacity, const Resource& need) const;
  void launchAmContainer(Application& app, Attempt& attempt, Node& node);
  void scheduleAsk(Attempt& attempt, Ask& ask, const std::vector<Node*>& alive);
  void grantOn(Attempt& attempt, Ask& ask, const std::vector<Node*>& candidates);

  Resource freeOf(const Node& node) const;
  Resource clusterFree() const;
  Resource maximumCapability() const;
  int aliveNodeCount() const;
  // Sets the response's containersFitNow/Total for containers of `size` (left -1 for none).
  void countContainersFitting(const Resource& size, rest::AllocateResponse& response) const;
  rest::Container describeForAm(const ContainerRecord& container) const;
  rest::ApplicationReport reportOf(const Application& app) const;
  int maxAttemptsOf(const Application& app) const;
  int64_t toEpoch(TimeMs monotonic) const;
  // Forgets the oldest finished applications beyond rm.maxCompletedApplications, and the
  // oldest ids handed out but never submitted beyond the same number.
  void forgetOldApplications();

  ClusterStateOptions options_;
  const Clock& clock_;
  SecretGenerator secrets_;
  std::mt19937_64 placementRng_;
  TimeMs startedAt_;
  std::string rmAddress_;
  Logger log_{"rm"};

  std::map<std::string, std::unique_ptr<Node>> nodes_;  // by node id
  std::map<std::string, std::unique_ptr<Application>> applications_;
  std::unordered_map<std::string, Attempt*> attempts_;
  std::unordered_map<std::string, std::unique_ptr<ContainerRecord>> containers_;  // live ones
  // Submitted applications not yet final, in submission order: the FIFO queue.
  std::vector<Application*> queue_;
  // The next application number, and the applications submitted and forgotten by
  // forgetOldApplications (for metrics): kept in the state store.
  ApplicationCounters counters_;
  // Epoch ms at this start: the origin of the times in reports (clusterTimestamp stays the
  // first start's after a restart).
  int64_t startedOnMs_ = 0;
  int64_t epoch_ = 0;
  bool countersDirty_ = false;
  std::vector<std::string> dirtyApplications_;
  std::vector<std::string> forgottenToStore_;
  Outbox outbox_;
  std::deque<ContainerOutcome> completed_;
};

}  // namespace tide::rm
