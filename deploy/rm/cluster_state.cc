#include "deploy/rm/cluster_state.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <stdexcept>

#include "common/enum_names.h"
#include "common/sorted_values.h"
#include "common/strings.h"
#include "deploy/rm/placement.h"
#include "deploy/rm/rm_error.h"

namespace tide::rm {
namespace {

namespace app_state = rest::app_state;
namespace final_status = rest::final_status;
namespace exit_status = rest::exit_status;

constexpr char kAnyNode[] = "*";

// YARN pads the numbers in its ids to a minimum width (they may grow past it).
std::string padded(int64_t value, int width) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%0*lld", width, static_cast<long long>(value));
  return buffer;
}

bool isFinal(const std::string& state) {
  return state == app_state::kFinished || state == app_state::kFailed ||
         state == app_state::kKilled;
}

}  // namespace

SecretGenerator systemSecretGenerator() {
  return [] { return rest::newRandomSecret(); };
}

SecretGenerator seededSecretGenerator(uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng] {
    unsigned char bytes[32];
    for (size_t i = 0; i < sizeof(bytes); i += 8) {
      uint64_t word = (*rng)();
      for (size_t j = 0; j < 8; ++j) bytes[i + j] = static_cast<unsigned char>(word >> (8 * j));
    }
    return hexEncode(bytes, sizeof(bytes));
  };
}

// ---------------------------------------------------------------------------------------------
// Records

struct ClusterState::Node {
  std::string id;  // "host:port"
  std::string host;
  std::string httpAddress;
  Resource capability;
  Resource used;
  bool alive = true;
  // Registration is complete once the node manager has heartbeated after it: before that it
  // may not know its secret yet and refuses launches (503). Only ready nodes get containers;
  // a node that refused a launch for a transient reason is not ready until its next heartbeat.
  bool ready = false;
  TimeMs lastHeartbeat = 0;
  std::string secret;
  std::unordered_set<std::string> containers;  // live ones
  // It registered again while alive (its node manager restarted): its next heartbeat lists
  // every container it still runs (a tide-nm with recovery re-attached to them), the others
  // are gone.
  bool awaitingFullReport = false;
};

struct ClusterState::Ask {
  rest::ResourceRequest request;
  int outstanding = 0;
};

struct ClusterState::ContainerRecord {
  enum class State { kAllocated, kRunning, kStopping };

  std::string id;
  Attempt* attempt = nullptr;
  Node* node = nullptr;
  Resource resource;
  bool amContainer = false;
  State state = State::kAllocated;
  // Whether its node has reported it: only then can the node's silence about it mean it is
  // gone (an allocated container its AM has not started yet is silent too).
  bool seenOnNode = false;
  int stopExitStatus = 0;
  std::string stopDiagnostics;
  // Set when the way an AM container ends is known better than "it exited".
  std::string amFailureReason;
};

struct ClusterState::Attempt {
  enum class State { kWaitingForAmContainer, kLaunched, kRegistered, kFinished, kFailed, kKilled };

  Application* app = nullptr;
  int number = 0;
  std::string id;
  std::string token;
  State state = State::kWaitingForAmContainer;
  std::string amContainerId;
  TimeMs lastContact = 0;  // AM container launch, register or allocate
  TimeMs endedAt = 0;
  std::map<AskKey, Ask> asks;
  std::vector<std::string> newlyAllocated;
  std::vector<rest::CompletedContainer> completedToReport;
  std::unordered_set<std::string> containers;  // live ones
  int64_t lastResponseId = 0;
  std::optional<rest::AllocateResponse> lastResponse;
  int nextContainerNumber = 1;
  // Launches of its AM container that a node refused for a transient reason (503, connection
  // refused): retried, elsewhere when possible, without using up the attempt.
  int amLaunchRetries = 0;
  // Recovered from the state store as registered: its AM must register again with this RM
  // (its allocate answers reRegister until then).
  bool mustReRegister = false;
  // The size of its executor containers: its last "*" ask's (zero: none asked yet).
  Resource containerSize;

  bool active() const {
    return state == State::kWaitingForAmContainer || state == State::kLaunched ||
           state == State::kRegistered;
  }
  const char* stateName() const {
    static constexpr const char* kNames[] = {
        "waiting for its AM container", "LAUNCHED", "RUNNING", "FINISHED", "FAILED", "KILLED"};
    return enumName(state, kNames, "?");
  }
};

// Its id, number, submission, state, finalStatus, diagnostics, trackingUrl, startedTime and
// finishedTime are the fields the state store keeps.
struct ClusterState::Application : ApplicationRecord {
  Application() {
    state = app_state::kNew;
    finalStatus = final_status::kUndefined;
  }
  bool submitted = false;
  std::vector<std::unique_ptr<Attempt>> attempts;
  Resource allocated;
  int liveContainers = 0;
  // Why its AM container is not placed yet (shown in diagnostics while ACCEPTED); empty once
  // placed.
  std::string waitingReason;

  Attempt* current() const { return attempts.empty() ? nullptr : attempts.back().get(); }
};

// ---------------------------------------------------------------------------------------------

ClusterState::ClusterState(ClusterStateOptions options, const Clock& clock, SecretGenerator secrets)
    : options_(std::move(options)),
      clock_(clock),
      secrets_(std::move(secrets)),
      placementRng_(options_.placementSeed),
      startedAt_(clock.nowMs()),
      startedOnMs_(options_.clusterTimestamp) {
  if (!secrets_) secrets_ = systemSecretGenerator();
}

ClusterState::~ClusterState() = default;

int64_t ClusterState::toEpoch(TimeMs monotonic) const {
  return startedOnMs_ + (monotonic - startedAt_);
}

int64_t ClusterState::epochNowMs() const {
  return toEpoch(clock_.nowMs());
}

std::string ClusterState::newSecret() {
  return secrets_();
}

ClusterState::Application& ClusterState::requireApplication(const std::string& applicationId) {
  auto it = applications_.find(applicationId);
  if (it == applications_.end()) {
    throw RmError(RmError::kNotFound, "unknown application '" + applicationId + "'");
  }
  return *it->second;
}

const ClusterState::Application& ClusterState::requireApplication(
    const std::string& applicationId) const {
  return const_cast<ClusterState*>(this)->requireApplication(applicationId);
}

ClusterState::Attempt& ClusterState::requireAttempt(const std::string& attemptId) {
  auto it = attempts_.find(attemptId);
  if (it == attempts_.end()) {
    throw RmError(RmError::kNotFound, "unknown application attempt '" + attemptId + "'");
  }
  return *it->second;
}

const ClusterState::Attempt& ClusterState::requireAttempt(const std::string& attemptId) const {
  return const_cast<ClusterState*>(this)->requireAttempt(attemptId);
}

// ---------------------------------------------------------------------------------------------
// Client API

rest::NewApplicationResponse ClusterState::newApplication() {
  auto app = std::make_unique<Application>();
  app->number = counters_.nextApplicationNumber++;
  app->id =
      "application_" + std::to_string(options_.clusterTimestamp) + "_" + padded(app->number, 4);
  rest::NewApplicationResponse response{app->id, maximumCapability()};
  applications_.emplace(app->id, std::move(app));
  countersDirty_ = true;
  forgetOldApplications();
  return response;
}

void ClusterState::forgetOldApplications() {
  const size_t keep = static_cast<size_t>(options_.config.maxCompletedApplications);
  // Oldest first: application numbers grow with time.
  std::vector<Application*> finished, unsubmitted;
  for (const auto& [id, app] : applications_) {
    if (!app->submitted && app->state == app_state::kNew) {
      unsubmitted.push_back(app.get());
    } else if (isFinal(app->state) && app->liveContainers == 0) {
      finished.push_back(app.get());
    }
  }
  const auto byNumber = [](const Application* a, const Application* b) {
    return a->number < b->number;
  };
  std::vector<std::string> forget;
  for (std::vector<Application*>* list : {&finished, &unsubmitted}) {
    if (list->size() <= keep) continue;
    std::sort(list->begin(), list->end(), byNumber);
    for (size_t i = 0; i < list->size() - keep; ++i) forget.push_back((*list)[i]->id);
  }
  for (const std::string& id : forget) {
    auto it = applications_.find(id);
    Application& app = *it->second;
    for (const auto& attempt : app.attempts) attempts_.erase(attempt->id);
    queue_.erase(std::remove(queue_.begin(), queue_.end(), &app), queue_.end());
    if (app.state == app_state::kFinished) ++counters_.forgottenFinished;
    if (app.state == app_state::kFailed) ++counters_.forgottenFailed;
    if (app.state == app_state::kKilled) ++counters_.forgottenKilled;
    if (app.submitted) forgottenToStore_.push_back(app.id);
    countersDirty_ = true;
    applications_.erase(it);
  }
}

void ClusterState::submitApplication(const rest::ApplicationSubmission& submission) {
  auto it = applications_.find(submission.applicationId);
  if (it == applications_.end()) {
    throw RmError(RmError::kNotFound,
                  "unknown application '" + submission.applicationId +
                      "': ask POST /ws/v1/cluster/apps/new-application for an id first");
  }
  Application& app = *it->second;
  if (app.submitted || app.state != app_state::kNew) {
    throw RmError(RmError::kConflict,
                  "application '" + app.id + "' was already submitted (" + app.state + ")");
  }
  // Fail fast (YARN's InvalidResourceRequestException): an AM no alive node could ever hold
  // is refused now rather than left waiting. With no node registered yet it waits, since
  // nodes may still join.
  const Resource largest = maximumCapability();
  if (aliveNodeCount() > 0 && !fits(largest, submission.resource)) {
    throw RmError(RmError::kBadRequest,
                  "field 'resource': the AM asks for " + describeResource(submission.resource) +
                      ", more than any node has (the largest: " + describeResource(largest) + ")");
  }
  app.submission = submission;
  app.submitted = true;
  app.state = app_state::kAccepted;
  app.startedTime = epochNowMs();
  ++counters_.appsSubmitted;
  countersDirty_ = true;
  queue_.push_back(&app);
  log_.info() << "application " << app.id << " ('" << submission.applicationName
              << "') submitted: AM needs " << submission.resource.memoryMb << " MB, "
              << submission.resource.vCores << " vCores; at most " << maxAttemptsOf(app)
              << " attempts";
  startAttempt(app);
  schedule();
}

int ClusterState::maxAttemptsOf(const Application& app) const {
  const int requested = app.submission.maxAppAttempts;
  return requested > 0 ? std::min(requested, options_.config.maxAppAttempts)
                       : options_.config.maxAppAttempts;
}

rest::ApplicationReport ClusterState::reportOf(const Application& app) const {
  rest::ApplicationReport report;
  report.id = app.id;
  report.name = app.submission.applicationName;
  report.queue = app.submitted ? app.submission.queue : "";
  report.state = app.state;
  report.finalStatus = app.finalStatus;
  report.trackingUrl = app.trackingUrl;
  report.diagnostics = app.diagnostics;
  if (app.state == app_state::kAccepted && !app.waitingReason.empty()) {
    report.diagnostics =
        app.diagnostics.empty() ? app.waitingReason : app.diagnostics + "; " + app.waitingReason;
  }
  report.allocatedMB = app.allocated.memoryMb;
  report.allocatedVCores = app.allocated.vCores;
  report.runningContainers = app.liveContainers;
  if (const Attempt* attempt = app.current()) {
    report.currentAppAttemptId = attempt->id;
    auto am = containers_.find(attempt->amContainerId);
    if (am != containers_.end()) report.amHostHttpAddress = am->second->node->httpAddress;
  }
  report.startedTime = app.startedTime;
  report.finishedTime = app.finishedTime;
  return report;
}

rest::ApplicationReport ClusterState::applicationReport(const std::string& applicationId) const {
  return reportOf(requireApplication(applicationId));
}

std::vector<rest::ApplicationReport> ClusterState::applicationReports() const {
  std::vector<rest::ApplicationReport> reports;
  for (const Application* app : valuesSortedBy(applications_, &Application::number)) {
    reports.push_back(reportOf(*app));
  }
  return reports;
}

rest::AppStateMessage ClusterState::killApplication(const std::string& applicationId) {
  Application& app = requireApplication(applicationId);
  if (app.state == app_state::kKilled) return {app_state::kKilled};
  if (isFinal(app.state)) {
    throw RmError(RmError::kConflict,
                  "application '" + app.id + "' is already " + app.state + "; it cannot be killed");
  }
  if (Attempt* attempt = app.current(); attempt != nullptr && attempt->active()) {
    attempt->state = Attempt::State::kKilled;
    attempt->endedAt = clock_.nowMs();
    std::vector<std::string> ids(attempt->containers.begin(), attempt->containers.end());
    for (const std::string& id : ids) {
      stopContainer(*containers_.at(id), exit_status::kKilledByResourceManager,
                    "killed by the resource manager: application " + app.id + " was killed");
    }
  }
  endApplication(app, app_state::kKilled, final_status::kKilled, "Application killed by user.");
  log_.info() << "application " << app.id << " killed";
  schedule();
  return {app_state::kKilled};
}

rest::ClusterMetrics ClusterState::metrics() const {
  rest::ClusterMetrics metrics;
  metrics.appsSubmitted = counters_.appsSubmitted;
  metrics.appsCompleted = counters_.forgottenFinished;
  metrics.appsFailed = counters_.forgottenFailed;
  metrics.appsKilled = counters_.forgottenKilled;
  for (const auto& [id, app] : applications_) {
    if (app->state == app_state::kAccepted) ++metrics.appsPending;
    if (app->state == app_state::kRunning) ++metrics.appsRunning;
    if (app->state == app_state::kFinished) ++metrics.appsCompleted;
    if (app->state == app_state::kFailed) ++metrics.appsFailed;
    if (app->state == app_state::kKilled) ++metrics.appsKilled;
  }
  for (const auto& [id, node] : nodes_) {
    ++metrics.totalNodes;
    if (!node->alive) {
      ++metrics.lostNodes;
      continue;
    }
    ++metrics.activeNodes;
    metrics.totalMB += node->capability.memoryMb;
    metrics.totalVirtualCores += node->capability.vCores;
    metrics.allocatedMB += node->used.memoryMb;
    metrics.allocatedVirtualCores += node->used.vCores;
  }
  metrics.availableMB = metrics.totalMB - metrics.allocatedMB;
  metrics.availableVirtualCores = metrics.totalVirtualCores - metrics.allocatedVirtualCores;
  metrics.containersAllocated = static_cast<int>(containers_.size());
  return metrics;
}

std::vector<rest::NodeReport> ClusterState::nodeReports() const {
  std::vector<rest::NodeReport> reports;
  for (const auto& [id, node] : nodes_) {
    rest::NodeReport report;
    report.id = node->id;
    report.nodeHostName = node->host;
    report.nodeHTTPAddress = node->httpAddress;
    report.state = node->alive ? rest::node_state::kRunning : rest::node_state::kLost;
    report.lastHealthUpdate = toEpoch(node->lastHeartbeat);
    if (node->alive) {
      const Resource free = freeOf(*node);
      report.usedMemoryMB = node->used.memoryMb;
      report.availMemoryMB = free.memoryMb;
      report.usedVirtualCores = node->used.vCores;
      report.availableVirtualCores = free.vCores;
    }
    report.numContainers = static_cast<int>(node->containers.size());
    reports.push_back(std::move(report));
  }
  return reports;
}

rest::ClusterInfo ClusterState::info() const {
  rest::ClusterInfo info;
  info.id = options_.clusterTimestamp;
  info.startedOn = startedOnMs_;
  info.resourceManagerVersion = options_.version;
  return info;
}

// ---------------------------------------------------------------------------------------------
// Node managers

rest::NodeRegistrationResponse ClusterState::registerNode(
    const rest::NodeRegistration& registration) {
  const std::string id = registration.host + ":" + std::to_string(registration.port);
  auto it = nodes_.find(id);
  bool restarted = false;
  if (it == nodes_.end()) {
    it = nodes_.emplace(id, std::make_unique<Node>()).first;
  } else if (it->second->alive) {
    // The node manager restarted before it expired. Its containers stay until its first
    // heartbeat, which lists those it re-attached to (nm.recovery.enabled); the rest are lost.
    restarted = true;
    log_.info() << "node " << id << " registered again (its node manager restarted); its "
                << it->second->containers.size()
                << " container(s) stay if its next heartbeat reports them";
  }
  Node& node = *it->second;
  node.id = id;
  node.host = registration.host;
  node.httpAddress = id;
  node.capability = registration.capability;
  if (!restarted) node.used = Resource{};
  node.awaitingFullReport = restarted;
  node.alive = true;
  node.ready = false;
  node.lastHeartbeat = clock_.nowMs();
  node.secret = newSecret();
  log_.info() << "node " << id << " registered with " << node.capability.memoryMb << " MB, "
              << node.capability.vCores
              << " vCores; ready for containers after its first heartbeat";
  return {id, node.secret, options_.config.nodeHeartbeatIntervalMs(), /*logReaderDigest=*/""};
}

void ClusterState::authenticateNode(const std::string& nodeId,
                                    const std::string& bearerToken) const {
  auto it = nodes_.find(nodeId);
  if (it == nodes_.end() || !it->second->alive) return;
  if (bearerToken.empty() || !rest::secretsEqual(bearerToken, it->second->secret)) {
    throw RmError(RmError::kUnauthorized,
                  "heartbeat for node " + nodeId + " without its secret (Authorization: Bearer)");
  }
}

rest::NodeHeartbeatResponse ClusterState::nodeHeartbeat(const std::string& nodeId,
                                                        const rest::NodeHeartbeat& heartbeat) {
  rest::NodeHeartbeatResponse response;
  auto it = nodes_.find(nodeId);
  if (it == nodes_.end() || !it->second->alive) {
    response.reRegister = true;
    return response;
  }
  Node& node = *it->second;
  node.lastHeartbeat = clock_.nowMs();

  bool freedSomething = false;
  if (!node.ready) {
    node.ready = true;  // it knows its secret now: containers may go there
    freedSomething = true;
  }
  std::unordered_set<std::string> reported;
  reported.reserve(heartbeat.containers.size());
  for (const rest::ContainerStatus& status : heartbeat.containers) {
    reported.insert(status.containerId);
    freedSomething |= applyContainerStatus(node, status, response);
  }
  freedSomething |= completeVanishedContainers(node, reported);
  node.awaitingFullReport = false;
  if (freedSomething) schedule();
  return response;
}

bool ClusterState::applyContainerStatus(Node& node, const rest::ContainerStatus& status,
                                        rest::NodeHeartbeatResponse& response) {
  const bool running = status.state != "COMPLETE";
  auto found = containers_.find(status.containerId);
  if (found == containers_.end() && adoptReportedContainer(node, status)) {
    return true;  // an AM container that ended may have failed its attempt
  }
  if (found == containers_.end() || found->second->node != &node) {
    // Completed here already (released, killed, lost with an earlier registration) or never
    // granted on this node: whatever runs under that id must not.
    if (running) response.containersToStop.push_back(status.containerId);
    return false;
  }
  ContainerRecord& container = *found->second;
  container.seenOnNode = true;
  if (running) {
    if (container.state == ContainerRecord::State::kAllocated) {
      container.state = ContainerRecord::State::kRunning;
    } else if (container.state == ContainerRecord::State::kStopping) {
      response.containersToStop.push_back(container.id);
    }
    return false;
  }
  // The RM's reason wins over the node's for containers it stopped (YARN's overrides).
  const bool stopping = container.state == ContainerRecord::State::kStopping;
  completeContainer(container.id, stopping ? container.stopExitStatus : status.exitStatus,
                    stopping ? container.stopDiagnostics : status.diagnostics);
  return true;
}

// Containers the node has stopped talking about are gone from it. One it never reported may
// simply not be started yet, unless the RM wants it stopped anyway.
bool ClusterState::completeVanishedContainers(Node& node,
                                              const std::unordered_set<std::string>& reported) {
  std::vector<std::string> vanished;
  for (const std::string& id : node.containers) {
    if (reported.count(id) != 0) continue;
    const ContainerRecord& container = *containers_.at(id);
    if (container.seenOnNode || container.state == ContainerRecord::State::kStopping ||
        node.awaitingFullReport) {
      vanished.push_back(id);
    }
  }
  for (const std::string& id : vanished) {
    ContainerRecord& container = *containers_.at(id);
    if (container.state == ContainerRecord::State::kStopping) {
      const int exitCode = container.stopExitStatus;
      const std::string diagnostics = container.stopDiagnostics;
      completeContainer(id, exitCode, diagnostics);
    } else if (node.awaitingFullReport) {
      const std::string why =
          "lost with node " + node.id + ": its node manager restarted without it";
      if (container.amContainer) container.amFailureReason = "AM container " + id + " " + why;
      completeContainer(id, exit_status::kAborted, why);
    } else {
      completeContainer(id, exit_status::kAborted, "no longer reported by node " + node.id);
    }
  }
  return !vanished.empty();
}

// ---------------------------------------------------------------------------------------------
// ApplicationMaster protocol

void ClusterState::authenticateAttempt(const std::string& attemptId,
                                       const std::string& bearerToken) const {
  if (bearerToken.empty()) {
    throw RmError(RmError::kUnauthorized,
                  "missing header 'Authorization: Bearer <TIDE_AM_TOKEN>' for " + attemptId);
  }
  const Attempt& attempt = requireAttempt(attemptId);
  if (!rest::secretsEqual(bearerToken, attempt.token)) {
    throw RmError(RmError::kUnauthorized, "invalid AM token for " + attemptId);
  }
}

rest::RegisterApplicationMasterResponse ClusterState::registerApplicationMaster(
    const std::string& attemptId, const rest::RegisterApplicationMasterRequest& request) {
  Attempt& attempt = requireAttempt(attemptId);
  if (attempt.state == Attempt::State::kRegistered && attempt.mustReRegister) {
    // YARN's resync after an RM restart: the AM registers again and resends its asks.
    attempt.mustReRegister = false;
    attempt.lastContact = clock_.nowMs();
    attempt.asks.clear();
    attempt.lastResponseId = 0;
    attempt.lastResponse.reset();
    if (!request.trackingUrl.empty()) attempt.app->trackingUrl = request.trackingUrl;
    markDirty(*attempt.app);
    log_.info() << "AM of " << attemptId << " registered again from " << request.host << ":"
                << request.port << " after the resource manager restarted";
    return {maximumCapability(), {}};
  }
  if (attempt.state != Attempt::State::kLaunched) {
    const std::string why = attempt.state == Attempt::State::kRegistered
                                ? "is already registered"
                                : std::string("is ") + attempt.stateName();
    throw RmError(RmError::kConflict, "application attempt '" + attemptId + "' " + why);
  }
  Application& app = *attempt.app;
  attempt.state = Attempt::State::kRegistered;
  attempt.lastContact = clock_.nowMs();
  app.state = app_state::kRunning;
  app.trackingUrl = request.trackingUrl;
  markDirty(app);
  log_.info() << "AM of " << attemptId << " registered from " << request.host << ":"
              << request.port;
  // Executor containers of the failed attempts are this attempt's now (YARN's
  // keepContainersAcrossApplicationAttempts): the new AM adopts them.
  rest::RegisterApplicationMasterResponse response{maximumCapability(), {}};
  for (const std::string& id : attempt.containers) {
    const ContainerRecord& container = *containers_.at(id);
    if (container.amContainer || container.state == ContainerRecord::State::kStopping) continue;
    response.containersFromPreviousAttempts.push_back(describeForAm(container));
  }
  return response;
}

rest::AllocateResponse ClusterState::allocate(const std::string& attemptId,
                                              const rest::AllocateRequest& request) {
  Attempt& attempt = requireAttempt(attemptId);
  if (attempt.state != Attempt::State::kRegistered) {
    const std::string why =
        attempt.active() ? "has not registered" : std::string("is ") + attempt.stateName();
    throw RmError(RmError::kConflict, "application attempt '" + attemptId + "' " + why);
  }
  if (attempt.mustReRegister) {
    attempt.lastContact = clock_.nowMs();  // its AM is alive; it has to register again
    rest::AllocateResponse response;
    response.reRegister = true;
    response.availableResources = clusterFree();
    response.numClusterNodes = aliveNodeCount();
    return response;
  }
  // YARN's handshake: the AM sends the id of the last response it got. One behind means the
  // answer got lost on the way (a retry): it gets the same answer again.
  if (attempt.lastResponse && request.responseId + 1 == attempt.lastResponseId) {
    attempt.lastContact = clock_.nowMs();
    // Its releases still count (releasing twice is harmless), so one an AM adds to its retry
    // is not lost; its asks do not, since they were stated before the lost answer's grants.
    releaseContainers(attempt, request.releases);
    return *attempt.lastResponse;
  }
  if (request.responseId != attempt.lastResponseId) {
    throw RmError(RmError::kConflict, "responseId " + std::to_string(request.responseId) +
                                          " is out of sync for " + attemptId + ": expected " +
                                          std::to_string(attempt.lastResponseId) +
                                          " (the responseId of the last allocate response)");
  }
  attempt.lastContact = clock_.nowMs();

  for (const rest::ResourceRequest& ask : request.asks) {
    if (ask.resourceName == kAnyNode) attempt.containerSize = ask.resource;
    AskKey key{ask.priority, ask.resourceName == kAnyNode, ask.resourceName, ask.resource.memoryMb,
               ask.resource.vCores};
    if (ask.numContainers == 0) {
      attempt.asks.erase(key);
    } else {
      attempt.asks[key] = Ask{ask, ask.numContainers};
    }
  }
  releaseContainers(attempt, request.releases);

  schedule();

  rest::AllocateResponse response;
  response.allocatedContainers.reserve(attempt.newlyAllocated.size());
  for (const std::string& id : attempt.newlyAllocated) {
    auto found = containers_.find(id);
    if (found != containers_.end())
      response.allocatedContainers.push_back(describeForAm(*found->second));
  }
  attempt.newlyAllocated.clear();
  response.completedContainers.swap(attempt.completedToReport);
  response.availableResources = clusterFree();
  response.numClusterNodes = aliveNodeCount();
  countContainersFitting(attempt.containerSize, response);
  response.responseId = ++attempt.lastResponseId;
  attempt.lastResponse = response;
  return response;
}

void ClusterState::releaseContainers(Attempt& attempt, const std::vector<std::string>& releases) {
  for (const std::string& id : releases) {
    auto found = containers_.find(id);
    if (found == containers_.end() || found->second->attempt != &attempt ||
        found->second->amContainer) {
      TIDE_LOG(log_, debug) << attempt.id << " released " << id
                            << ", which is not one of its live containers; ignored";
      continue;
    }
    stopContainer(*found->second, exit_status::kAborted, "released by the application master");
  }
}

rest::FinishApplicationMasterResponse ClusterState::finishApplicationMaster(
    const std::string& attemptId, const rest::FinishApplicationMasterRequest& request) {
  Attempt& attempt = requireAttempt(attemptId);
  if (attempt.state == Attempt::State::kFinished) return {true};  // a retried call
  if (attempt.state != Attempt::State::kRegistered) {
    const std::string why =
        attempt.active() ? "has not registered" : std::string("is ") + attempt.stateName();
    throw RmError(RmError::kConflict, "application attempt '" + attemptId + "' " + why);
  }
  Application& app = *attempt.app;
  attempt.state = Attempt::State::kFinished;
  attempt.endedAt = clock_.nowMs();
  // What the AM leaves running is cleaned up, as YARN does when an application completes. The
  // AM container itself exits on its own (checkExpiries stops it if it lingers).
  std::vector<std::string> ids(attempt.containers.begin(), attempt.containers.end());
  for (const std::string& id : ids) {
    ContainerRecord& container = *containers_.at(id);
    if (container.amContainer) continue;
    stopContainer(container, exit_status::kKilledByResourceManager,
                  "killed by the resource manager: application " + app.id + " finished");
  }
  endApplication(app, app_state::kFinished, request.finalStatus.c_str(), request.diagnostics);
  log_.info() << "application " << app.id << " finished: " << request.finalStatus
              << (request.diagnostics.empty() ? "" : " (" + request.diagnostics + ")");
  return {true};
}

void ClusterState::amLaunchFailed(const std::string& containerId, const std::string& reason,
                                  bool transient) {
  auto found = containers_.find(containerId);
  if (found == containers_.end()) return;
  ContainerRecord& container = *found->second;
  Attempt& attempt = *container.attempt;
  if (transient && attempt.state == Attempt::State::kLaunched &&
      attempt.amLaunchRetries < kMaxAmLaunchRetries) {
    // The node could not take it just now (not registered yet, restarting): the container is
    // withdrawn and the AM placed again, on another node when one fits; the attempt stands.
    ++attempt.amLaunchRetries;
    Node& node = *container.node;
    node.ready = false;  // until its next heartbeat
    attempt.state = Attempt::State::kWaitingForAmContainer;
    attempt.amContainerId.clear();
    markDirty(*attempt.app);
    log_.warn() << "AM container " << containerId << " of " << attempt.id
                << " could not be launched on " << node.id << " (" << reason
                << "); placing it again (retry " << attempt.amLaunchRetries << " of "
                << kMaxAmLaunchRetries << "), the attempt is not counted";
    completeContainer(containerId, exit_status::kAborted, reason);
    // Its id is reused: the AM container is always ..._000001.
    if (attempt.containers.empty()) attempt.nextContainerNumber = 1;
    schedule();
    return;
  }
  container.amFailureReason = "AM container " + containerId + " could not be launched on node " +
                              container.node->id + ": " + reason;
  completeContainer(containerId, exit_status::kAborted, reason);
  schedule();
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

void ClusterState::startAttempt(Application& app) {
  auto attempt = std::make_unique<Attempt>();
  attempt->app = &app;
  attempt->number = static_cast<int>(app.attempts.size()) + 1;
  attempt->id = "appattempt_" + std::to_string(options_.clusterTimestamp) + "_" +
                padded(app.number, 4) + "_" + padded(attempt->number, 6);
  attempt->token = newSecret();
  attempts_[attempt->id] = attempt.get();
  app.attempts.push_back(std::move(attempt));
  markDirty(app);
}

void ClusterState::failAttempt(Attempt& attempt, const std::string& reason) {
  Application& app = *attempt.app;
  attempt.state = Attempt::State::kFailed;
  attempt.endedAt = clock_.nowMs();
  attempt.asks.clear();
  const int maxAttempts = maxAttemptsOf(app);
  // A next attempt keeps the executors (work-preserving AM restart); the last one does not.
  const bool retry = !isFinal(app.state) && attempt.number < maxAttempts;
  std::vector<std::string> kept;
  std::vector<std::string> ids(attempt.containers.begin(), attempt.containers.end());
  for (const std::string& id : ids) {
    ContainerRecord& container = *containers_.at(id);
    if (retry && !container.amContainer && container.state != ContainerRecord::State::kStopping) {
      kept.push_back(id);
      continue;
    }
    stopContainer(container, exit_status::kKilledByResourceManager,
                  "killed by the resource manager: application attempt " + attempt.id + " failed");
  }
  // "; attempt 1 of 2" ends the reason's first line; the lines after it (an AM's stderr) follow.
  const size_t newline = reason.find('\n');
  const std::string diagnostics =
      reason.substr(0, newline) + "; attempt " + std::to_string(attempt.number) + " of " +
      std::to_string(maxAttempts) + (newline == std::string::npos ? "" : reason.substr(newline));
  log_.warn() << attempt.id << " failed: " << diagnostics;
  markDirty(app);
  if (isFinal(app.state)) return;
  if (attempt.number < maxAttempts) {
    app.diagnostics = diagnostics;
    app.state = app_state::kAccepted;
    startAttempt(app);
    Attempt& next = *app.current();
    for (const std::string& id : kept) {
      containers_.at(id)->attempt = &next;
      attempt.containers.erase(id);
      next.containers.insert(id);
    }
    if (!kept.empty()) {
      log_.info() << kept.size() << " executor containers of " << attempt.id << " kept for "
                  << next.id;
    }
  } else {
    endApplication(app, app_state::kFailed, final_status::kFailed, diagnostics);
  }
}

void ClusterState::endApplication(Application& app, const char* state, const char* finalStatus,
                                  const std::string& diagnostics) {
  app.state = state;
  app.finalStatus = finalStatus;
  app.diagnostics = diagnostics;
  app.finishedTime = epochNowMs();
  // The AM's page went with it; its history is where the submitter said (history.address).
  if (!app.submission.historyUrl.empty()) app.trackingUrl = app.submission.historyUrl;
  if (Attempt* attempt = app.current()) attempt->asks.clear();
  markDirty(app);
}

// ---------------------------------------------------------------------------------------------
// Containers

ClusterState::ContainerRecord& ClusterState::allocateContainer(Attempt& attempt, Node& node,
                                                               const Resource& resource,
                                                               bool amContainer) {
  Application& app = *attempt.app;
  auto record = std::make_unique<ContainerRecord>();
  // After a restart the ids carry the RM's epoch (as YARN's container_e<epoch>_...), so that
  // they never collide with those of containers allocated before it.
  const std::string epochPart = epoch_ > 0 ? "e" + std::to_string(epoch_) + "_" : "";
  record->id = "container_" + epochPart + std::to_string(options_.clusterTimestamp) + "_" +
               padded(app.number, 4) + "_" + padded(attempt.number, 2) + "_" +
               padded(attempt.nextContainerNumber++, 6);
  record->attempt = &attempt;
  record->node = &node;
  record->resource = resource;
  record->amContainer = amContainer;
  node.used = plus(node.used, resource);
  node.containers.insert(record->id);
  attempt.containers.insert(record->id);
  app.allocated = plus(app.allocated, resource);
  ++app.liveContainers;
  ContainerRecord& container = *record;
  containers_.emplace(record->id, std::move(record));
  return container;
}

void ClusterState::stopContainer(ContainerRecord& container, int exitStatus,
                                 const std::string& diagnostics) {
  if (container.state == ContainerRecord::State::kStopping) return;
  container.state = ContainerRecord::State::kStopping;
  container.stopExitStatus = exitStatus;
  container.stopDiagnostics = diagnostics;
  // Only a container that may be running needs the prompt path; the others are settled by the
  // node's next heartbeat.
  const Node& node = *container.node;
  if (node.alive && (container.seenOnNode || container.amContainer)) {
    outbox_.stops.push_back({node.id, node.httpAddress, node.secret, container.id});
  }
}

void ClusterState::completeContainer(const std::string& containerId, int exitStatus,
                                     const std::string& diagnostics) {
  auto found = containers_.find(containerId);
  if (found == containers_.end()) return;
  std::unique_ptr<ContainerRecord> container = std::move(found->second);
  containers_.erase(found);
  Node& node = *container->node;
  Attempt& attempt = *container->attempt;
  Application& app = *attempt.app;
  node.used = minus(node.used, container->resource);
  node.containers.erase(containerId);
  attempt.containers.erase(containerId);
  app.allocated = minus(app.allocated, container->resource);
  --app.liveContainers;

  completed_.push_back(
      {containerId, app.id, node.id, exitStatus, diagnostics, container->amContainer});
  if (completed_.size() > kCompletedHistory) completed_.pop_front();
  TIDE_LOG(log_, debug) << "container " << containerId << " on " << node.id
                        << " completed with exit status " << exitStatus
                        << (diagnostics.empty() ? "" : ": " + diagnostics);

  if (container->amContainer) {
    if (attempt.state != Attempt::State::kLaunched &&
        attempt.state != Attempt::State::kRegistered) {
      return;  // it unregistered first, or the RM ended the attempt itself
    }
    std::string reason = container->amFailureReason;
    if (reason.empty()) {
      reason = "AM container " + containerId + " exited with code " + std::to_string(exitStatus) +
               " without unregistering";
      // The node's diagnostics: a summary line, then maybe the last lines of its stderr.
      const size_t newline = diagnostics.find('\n');
      if (!diagnostics.empty()) reason += " (" + diagnostics.substr(0, newline) + ")";
      if (newline != std::string::npos) reason += diagnostics.substr(newline);
    }
    failAttempt(attempt, reason);
    return;
  }
  if (attempt.state == Attempt::State::kRegistered) {
    attempt.completedToReport.push_back(
        {containerId, exitStatus, rest::container_state::kComplete, diagnostics});
  }
}

void ClusterState::loseNode(Node& node, const std::string& why) {
  node.alive = false;
  log_.warn() << "node " << node.id << " lost: " << why << "; " << node.containers.size()
              << " containers lost with it";
  std::vector<std::string> ids(node.containers.begin(), node.containers.end());
  for (const std::string& id : ids) {
    ContainerRecord& container = *containers_.at(id);
    if (container.amContainer) {
      container.amFailureReason = "AM container " + id + " lost with node " + node.id;
    }
    completeContainer(id, exit_status::kAborted, "lost with node " + node.id);
  }
}

void ClusterState::checkExpiries() {
  const TimeMs now = clock_.nowMs();
  bool changed = false;
  for (auto& [id, node] : nodes_) {
    if (node->alive && now - node->lastHeartbeat > options_.config.nodeExpiryMs) {
      loseNode(*node, "no heartbeat for " + formatDuration(now - node->lastHeartbeat));
      changed = true;
    }
  }
  for (Application* app : queue_) {
    Attempt* attempt = app->current();
    if (attempt == nullptr) continue;
    const bool launchedOrRunning = attempt->state == Attempt::State::kLaunched ||
                                   attempt->state == Attempt::State::kRegistered;
    if (launchedOrRunning && now - attempt->lastContact > options_.config.amLivenessExpiryMs) {
      failAttempt(*attempt, "AM of " + attempt->id + " sent no heartbeat for " +
                                formatDuration(now - attempt->lastContact));
      changed = true;
    }
  }
  // An AM that unregistered but whose process lingers is stopped after the liveness expiry.
  for (Application* app : queue_) {
    Attempt* attempt = app->current();
    if (attempt == nullptr || attempt->state != Attempt::State::kFinished) continue;
    auto am = containers_.find(attempt->amContainerId);
    if (am != containers_.end() && now - attempt->endedAt > options_.config.amLivenessExpiryMs) {
      stopContainer(*am->second, exit_status::kKilledByResourceManager,
                    "killed by the resource manager: the AM did not exit after unregistering");
      changed = true;
    }
  }
  if (changed) schedule();
}

// ---------------------------------------------------------------------------------------------
// Scheduling (Spark's Master.schedule())

void ClusterState::schedule() {
  // Applications leave the queue once final and once the RM holds nothing more of theirs.
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [](const Application* app) {
                                return isFinal(app->state) && app->liveContainers == 0;
                              }),
               queue_.end());

  // A pass runs after every heartbeat that freed something and every allocate: with thousands
  // of nodes it must cost nothing when nobody waits, and little when the cluster is full.
  const auto waitsForAm = [](const Application* app) {
    const Attempt* attempt = app->current();
    return app->state == app_state::kAccepted && attempt != nullptr &&
           attempt->state == Attempt::State::kWaitingForAmContainer;
  };
  const auto asksForExecutors = [](const Application* app) {
    const Attempt* attempt = app->current();
    return app->state == app_state::kRunning && attempt != nullptr &&
           attempt->state == Attempt::State::kRegistered && !attempt->asks.empty();
  };
  const bool amsWait = std::any_of(queue_.begin(), queue_.end(), waitsForAm);
  if (!amsWait && std::none_of(queue_.begin(), queue_.end(), asksForExecutors)) return;

  // The nodes a container could go to: alive, ready, and with a core and some memory free (every
  // container asks for both). Full nodes are left out before the shuffle; the order of the
  // others is as random as when every node was shuffled.
  std::vector<Node*> alive;
  for (auto& [id, node] : nodes_) {
    if (!node->alive || !node->ready) continue;
    const Resource free = freeOf(*node);
    if (free.vCores > 0 && free.memoryMb > 0) alive.push_back(node.get());
  }
  std::shuffle(alive.begin(), alive.end(), placementRng_);

  // AM containers take strict precedence over executor containers.
  if (amsWait) scheduleAmContainers(alive);

  // Then executors, FIFO over applications; within one, by ask order (priority first).
  for (Application* app : queue_) {
    if (!asksForExecutors(app)) continue;
    Attempt* attempt = app->current();
    for (auto it = attempt->asks.begin(); it != attempt->asks.end();) {
      scheduleAsk(*attempt, it->second, alive);
      // A satisfied ask is dropped: the AM's next ask for it states a new total anyway.
      it = it->second.outstanding == 0 ? attempt->asks.erase(it) : std::next(it);
    }
  }
}

// What AM placement is measured against: rm.maxAmShare and "more than any node has" are about
// every ready node, full or not.
struct ClusterState::AmCapacity {
  Resource total;    // of the ready nodes
  Resource largest;  // the largest ready node's memory and cores
  bool anyReady = false;
  Resource amUsed;  // what AM containers hold now, for rm.maxAmShare
};

ClusterState::AmCapacity ClusterState::amCapacity() const {
  AmCapacity capacity;
  for (const auto& [id, node] : nodes_) {
    if (!node->alive || !node->ready) continue;
    capacity.anyReady = true;
    capacity.total = plus(capacity.total, node->capability);
    capacity.largest.memoryMb = std::max(capacity.largest.memoryMb, node->capability.memoryMb);
    capacity.largest.vCores = std::max(capacity.largest.vCores, node->capability.vCores);
  }
  for (const auto& [id, container] : containers_) {
    if (container->amContainer && container->node->alive) {
      capacity.amUsed = plus(capacity.amUsed, container->resource);
    }
  }
  return capacity;
}

std::string ClusterState::amWaitingReason(const AmCapacity& capacity, const Resource& need) const {
  if (!capacity.anyReady) {
    return "waiting for AM resources: no node manager is registered and ready";
  }
  if (!fits(capacity.largest, need)) {
    return "waiting for AM resources: the AM asks for " + describeResource(need) +
           ", more than any node has (the largest: " + describeResource(capacity.largest) + ")";
  }
  return amShareRefusal(capacity.amUsed, need, capacity.total, options_.config.maxAmShare);
}

void ClusterState::scheduleAmContainers(const std::vector<Node*>& alive) {
  AmCapacity capacity = amCapacity();
  std::vector<Resource> free;
  free.reserve(alive.size());
  for (const Node* node : alive) free.push_back(freeOf(*node));
  // As Spark's curPos: each AM starts from the node after the one the previous AM was
  // offered, so AMs go round-robin over the shuffled nodes.
  size_t cursor = 0;
  for (Application* app : queue_) {
    Attempt* attempt = app->current();
    if (app->state != app_state::kAccepted || attempt == nullptr ||
        attempt->state != Attempt::State::kWaitingForAmContainer) {
      continue;
    }
    const Resource& need = app->submission.resource;
    std::string refusal = amWaitingReason(capacity, need);
    if (!refusal.empty()) {
      app->waitingReason = std::move(refusal);
      continue;  // a smaller AM behind it may still be allowed
    }
    std::optional<size_t> chosen = placeRoundRobin(free, need, cursor);
    if (!chosen) {
      app->waitingReason =
          "waiting for AM resources: no node has " + describeResource(need) + " free";
      continue;  // a smaller AM behind it may still fit
    }
    app->waitingReason.clear();
    capacity.amUsed = plus(capacity.amUsed, need);
    free[*chosen] = minus(free[*chosen], need);
    launchAmContainer(*app, *attempt, *alive[*chosen]);
  }
}

void ClusterState::launchAmContainer(Application& app, Attempt& attempt, Node& node) {
  const Resource& need = app.submission.resource;
  ContainerRecord& container = allocateContainer(attempt, node, need, true);
  attempt.amContainerId = container.id;
  attempt.state = Attempt::State::kLaunched;
  attempt.lastContact = clock_.nowMs();
  markDirty(app);

  AmLaunch launch;
  launch.nodeId = node.id;
  launch.nodeHttpAddress = node.httpAddress;
  rest::ContainerLaunchRequest& request = launch.request;
  request.containerId = container.id;
  request.applicationId = app.id;
  request.token = rest::containerToken(node.secret, container.id);
  request.command = app.submission.command;
  request.resource = need;
  for (const auto& [name, value] : app.submission.environment) {
    request.environment[name] = value;
  }
  // Set last, so that a submitted entry cannot impersonate another attempt.
  request.environment["TIDE_APPLICATION_ID"] = app.id;
  request.environment["TIDE_APP_ATTEMPT_ID"] = attempt.id;
  request.environment["TIDE_AM_TOKEN"] = attempt.token;
  request.environment["TIDE_RM_ADDRESS"] = rmAddress_;
  request.environment["TIDE_CONTAINER_ID"] = container.id;
  outbox_.launches.push_back(std::move(launch));
  log_.info() << "AM container " << container.id << " of " << attempt.id << " placed on " << node.id
              << " (round-robin over alive nodes)";
}

void ClusterState::scheduleAsk(Attempt& attempt, Ask& ask, const std::vector<Node*>& alive) {
  if (ask.outstanding <= 0) return;
  const std::string& name = ask.request.resourceName;
  if (name != kAnyNode) {
    std::vector<Node*> local;
    for (Node* node : alive) {
      if (node->host == name || node->id == name) local.push_back(node);
    }
    grantOn(attempt, ask, local);
    // Without relaxLocality the rest waits for room on that host.
    if (ask.outstanding == 0 || !ask.request.relaxLocality) return;
  }
  grantOn(attempt, ask, alive);
}

void ClusterState::grantOn(Attempt& attempt, Ask& ask, const std::vector<Node*>& candidates) {
  if (candidates.empty() || ask.outstanding <= 0) return;
  const Resource& each = ask.request.resource;
  std::vector<Node*> usable;
  std::vector<Resource> free;
  for (Node* node : candidates) {
    Resource nodeFree = freeOf(*node);
    if (!fits(nodeFree, each)) continue;
    usable.push_back(node);
    free.push_back(nodeFree);
  }
  if (usable.empty()) return;
  // Spark offers the usable workers with the most free cores first.
  const std::vector<size_t> order = orderByFreeCoresDescending(free);
  std::vector<Resource> orderedFree;
  orderedFree.reserve(order.size());
  for (size_t index : order) orderedFree.push_back(free[index]);
  const std::vector<size_t> placements =
      placeContainers(orderedFree, each, ask.outstanding, options_.config.spreadOut);
  for (size_t position : placements) {
    Node& node = *usable[order[position]];
    ContainerRecord& container = allocateContainer(attempt, node, each, false);
    attempt.newlyAllocated.push_back(container.id);
    --ask.outstanding;
    TIDE_LOG(log_, debug) << "container " << container.id << " of " << attempt.id << " on "
                          << node.id << " (priority " << ask.request.priority << ", "
                          << ask.request.resourceName << ", "
                          << (options_.config.spreadOut ? "spread out" : "packed") << ")";
  }
}

// ---------------------------------------------------------------------------------------------
// Views

Resource ClusterState::freeOf(const Node& node) const {
  return minus(node.capability, node.used);
}

Resource ClusterState::clusterFree() const {
  Resource total;
  for (const auto& [id, node] : nodes_) {
    if (node->alive) total = plus(total, freeOf(*node));
  }
  return total;
}

Resource ClusterState::maximumCapability() const {
  Resource maximum;
  for (const auto& [id, node] : nodes_) {
    if (!node->alive) continue;
    maximum.memoryMb = std::max(maximum.memoryMb, node->capability.memoryMb);
    maximum.vCores = std::max(maximum.vCores, node->capability.vCores);
  }
  return maximum;
}

void ClusterState::countContainersFitting(const Resource& size,
                                          rest::AllocateResponse& response) const {
  if (size.memoryMb <= 0 && size.vCores <= 0) return;  // -1: unknown
  int64_t now = 0, total = 0;
  for (const auto& [id, node] : nodes_) {
    if (!node->alive || !node->ready) continue;  // as schedule() offers nodes
    now += countFitting(freeOf(*node), size);
    total += countFitting(node->capability, size);
  }
  response.containersFitNow = static_cast<int>(std::min<int64_t>(now, INT_MAX));
  response.containersFitTotal = static_cast<int>(std::min<int64_t>(total, INT_MAX));
}

int ClusterState::aliveNodeCount() const {
  int count = 0;
  for (const auto& [id, node] : nodes_) count += node->alive ? 1 : 0;
  return count;
}

rest::Container ClusterState::describeForAm(const ContainerRecord& container) const {
  const Node& node = *container.node;
  return rest::Container{container.id, node.id, node.httpAddress, container.resource,
                         rest::containerToken(node.secret, container.id)};
}

Outbox ClusterState::takeOutbox() {
  Outbox taken;
  std::swap(taken, outbox_);
  return taken;
}

std::optional<ContainerView> ClusterState::container(const std::string& containerId) const {
  auto found = containers_.find(containerId);
  if (found == containers_.end()) return std::nullopt;
  const ContainerRecord& record = *found->second;
  const char* state = record.state == ContainerRecord::State::kAllocated ? "ALLOCATED"
                      : record.state == ContainerRecord::State::kRunning ? "RUNNING"
                                                                         : "STOPPING";
  return ContainerView{record.id,         record.attempt->app->id, record.attempt->id,
                       record.node->id,   record.resource,         state,
                       record.amContainer};
}

std::vector<ContainerView> ClusterState::liveContainers() const {
  std::vector<ContainerView> views;
  for (const auto& [id, record] : containers_) views.push_back(*container(id));
  std::sort(views.begin(), views.end(),
            [](const ContainerView& a, const ContainerView& b) { return a.id < b.id; });
  return views;
}

std::string ClusterState::amToken(const std::string& attemptId) const {
  return requireAttempt(attemptId).token;
}

std::string ClusterState::applicationSecret(const std::string& applicationId) const {
  const Application& app = requireApplication(applicationId);
  for (const auto& [name, value] : app.submission.environment) {
    if (name == "TIDE_APP_SECRET") return value;
  }
  return "";
}

std::string ClusterState::nodeSecret(const std::string& nodeId) const {
  auto found = nodes_.find(nodeId);
  return found == nodes_.end() ? "" : found->second->secret;
}

// ---------------------------------------------------------------------------------------------
// Restarts

namespace {

const char* storedAttemptState(int state) {
  static const char* const kNames[] = {"WAITING",  "LAUNCHED", "REGISTERED",
                                       "FINISHED", "FAILED",   "KILLED"};
  return kNames[state];
}

int attemptStateFromStored(const std::string& name, const std::string& attemptId) {
  for (int i = 0; i < 6; ++i) {
    if (name == storedAttemptState(i)) return i;
  }
  throw StateStoreError("attempt " + attemptId + " has an unknown state '" + name +
                        "' in the state store");
}

// The numbers in container_[e<epoch>_]<timestamp>_<app>_<attempt>_<number>.
struct ParsedContainerId {
  int64_t epoch = 0;
  std::string timestamp;
  int64_t application = 0;
  int64_t attempt = 0;
};

std::optional<ParsedContainerId> parseContainerId(const std::string& id) {
  const std::string prefix = "container_";
  if (id.rfind(prefix, 0) != 0) return std::nullopt;
  std::vector<std::string> parts;
  size_t position = prefix.size();
  while (true) {
    const size_t next = id.find('_', position);
    parts.push_back(id.substr(position, next == std::string::npos ? next : next - position));
    if (next == std::string::npos) break;
    position = next + 1;
  }
  ParsedContainerId parsed;
  try {
    if (parts.size() == 5 && !parts[0].empty() && parts[0][0] == 'e') {
      parsed.epoch = std::stoll(parts[0].substr(1));
      parts.erase(parts.begin());
    }
    if (parts.size() != 4) return std::nullopt;
    parsed.timestamp = parts[0];
    parsed.application = std::stoll(parts[1]);
    parsed.attempt = std::stoll(parts[2]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return parsed;
}

}  // namespace

void ClusterState::markDirty(const Application& app) {
  if (!options_.stateStore) return;
  if (std::find(dirtyApplications_.begin(), dirtyApplications_.end(), app.id) ==
      dirtyApplications_.end()) {
    dirtyApplications_.push_back(app.id);
  }
}

StoredApplication ClusterState::storedOf(const Application& app) const {
  StoredApplication stored;
  static_cast<ApplicationRecord&>(stored) = app;
  for (const auto& attempt : app.attempts) {
    stored.attempts.push_back({attempt->number, attempt->id, attempt->token,
                               storedAttemptState(static_cast<int>(attempt->state)),
                               attempt->amContainerId});
  }
  return stored;
}

std::vector<StoreRecord> ClusterState::takeStoreRecords() {
  std::vector<StoreRecord> records;
  if (!options_.stateStore) return records;
  if (countersDirty_) {
    StoredCounters counters;
    static_cast<ApplicationCounters&>(counters) = counters_;
    counters.clusterTimestamp = options_.clusterTimestamp;
    counters.epoch = epoch_;
    records.push_back(StoreRecord::ofCounters(counters));
    countersDirty_ = false;
  }
  for (const std::string& id : dirtyApplications_) {
    auto found = applications_.find(id);
    // Only submitted applications are stored (a new one is only a number, in the counters).
    if (found != applications_.end() && found->second->submitted) {
      records.push_back(StoreRecord::ofApplication(storedOf(*found->second)));
    }
  }
  dirtyApplications_.clear();
  for (const std::string& id : forgottenToStore_) records.push_back(StoreRecord::forget(id));
  forgottenToStore_.clear();
  return records;
}

void ClusterState::recover(const StoredState& stored) {
  countersDirty_ = true;  // the epoch (and on a first start, the cluster timestamp)
  if (stored.empty || stored.counters.clusterTimestamp == 0) return;
  const StoredCounters& counters = stored.counters;
  options_.clusterTimestamp = counters.clusterTimestamp;
  epoch_ = counters.epoch + 1;
  counters_ = counters;
  const TimeMs now = clock_.nowMs();
  std::vector<Application*> active;
  int running = 0;
  for (const auto& [id, storedApp] : stored.applications) {
    auto app = std::make_unique<Application>();
    static_cast<ApplicationRecord&>(*app) = storedApp;
    app->submitted = true;
    for (const StoredAttempt& storedAttempt : storedApp.attempts) {
      auto attempt = std::make_unique<Attempt>();
      attempt->app = app.get();
      attempt->number = storedAttempt.number;
      attempt->id = storedAttempt.id;
      attempt->token = storedAttempt.token;
      attempt->state = static_cast<Attempt::State>(
          attemptStateFromStored(storedAttempt.state, storedAttempt.id));
      attempt->amContainerId = storedAttempt.amContainerId;
      // Its AM gets amLivenessExpiry from now to show up again.
      attempt->lastContact = now;
      attempt->endedAt = now;
      attempt->mustReRegister = attempt->state == Attempt::State::kRegistered;
      attempts_[attempt->id] = attempt.get();
      app->attempts.push_back(std::move(attempt));
    }
    if (!isFinal(app->state)) {
      active.push_back(app.get());
      if (app->current() != nullptr && app->current()->active()) {
        running += app->current()->state != Attempt::State::kWaitingForAmContainer ? 1 : 0;
      }
    }
    counters_.nextApplicationNumber = std::max(counters_.nextApplicationNumber, app->number + 1);
    applications_.emplace(app->id, std::move(app));
  }
  std::sort(active.begin(), active.end(),
            [](const Application* a, const Application* b) { return a->number < b->number; });
  queue_ = active;
  log_.info() << "recovered " << applications_.size() << " applications from the state store ("
              << active.size() << " not finished, " << running
              << " with an AM that may still run: their node managers and AMs register again); "
              << "epoch " << epoch_;
}

bool ClusterState::adoptReportedContainer(Node& node, const rest::ContainerStatus& status) {
  if (epoch_ == 0) return false;  // nothing was recovered
  const std::optional<ParsedContainerId> parsed = parseContainerId(status.containerId);
  if (!parsed || parsed->epoch >= epoch_ ||
      parsed->timestamp != std::to_string(options_.clusterTimestamp)) {
    return false;
  }
  const std::string attemptId = "appattempt_" + parsed->timestamp + "_" +
                                padded(parsed->application, 4) + "_" + padded(parsed->attempt, 6);
  auto found = attempts_.find(attemptId);
  if (found == attempts_.end()) return false;
  Attempt& attempt = *found->second;
  Application& app = *attempt.app;
  const bool live =
      attempt.state == Attempt::State::kLaunched || attempt.state == Attempt::State::kRegistered;
  if (!live || app.current() != &attempt) return false;
  const bool amContainer = status.containerId == attempt.amContainerId;
  const bool running = status.state != "COMPLETE";
  if (!running) {
    // It ended while the RM was down: its AM learns of it as of any completion.
    if (amContainer) {
      failAttempt(attempt, "AM container " + status.containerId + " exited with code " +
                               std::to_string(status.exitStatus) +
                               " while the resource manager was down");
    } else if (attempt.state == Attempt::State::kRegistered) {
      attempt.completedToReport.push_back({status.containerId, status.exitStatus,
                                           rest::container_state::kComplete, status.diagnostics});
    }
    return true;
  }
  auto record = std::make_unique<ContainerRecord>();
  record->id = status.containerId;
  record->attempt = &attempt;
  record->node = &node;
  record->resource = status.resource;
  if (amContainer && record->resource.memoryMb == 0 && record->resource.vCores == 0) {
    record->resource = app.submission.resource;
  }
  record->amContainer = amContainer;
  record->state = ContainerRecord::State::kRunning;
  record->seenOnNode = true;
  node.used = plus(node.used, record->resource);
  node.containers.insert(record->id);
  attempt.containers.insert(record->id);
  app.allocated = plus(app.allocated, record->resource);
  ++app.liveContainers;
  log_.info() << "node " << node.id << " still runs "
              << (amContainer ? "AM container " : "container ") << record->id << " of "
              << attempt.id << ": kept";
  containers_.emplace(record->id, std::move(record));
  return true;
}

}  // namespace tide::rm
