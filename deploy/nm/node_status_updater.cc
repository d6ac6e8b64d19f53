#include "deploy/nm/node_status_updater.h"

#include <algorithm>

#include "rest/http_client.h"
#include "rest/json.h"

namespace tide::nm {

NodeStatusUpdater::NodeStatusUpdater(NodeStatusUpdaterOptions options, ContainerManager& containers,
                                     NodeIdentity& identity)
    : options_(std::move(options)), containers_(containers), identity_(identity) {
  rest::HttpClientOptions clientOptions;
  clientOptions.requestTimeout = options_.requestTimeout;
  clientOptions.connectTimeout = std::min(options_.requestTimeout, std::chrono::milliseconds(3000));
  // This loop retries on its own schedule (and keeps heartbeating meanwhile); a retry inside
  // the client would only delay the next heartbeat.
  clientOptions.retry.maxAttempts = 1;
  clientOptions.log = [this](const std::string& line) { log_.debug() << line; };
  clientOptions.caFile = options_.caFile;
  client_ = std::make_unique<rest::HttpClient>(options_.rmUrl, clientOptions);
}

NodeStatusUpdater::~NodeStatusUpdater() {
  stop();
}

void NodeStatusUpdater::start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopRequested_) {
      lock.unlock();
      DurationMs wait = runOnce();
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(wait), [this] { return stopRequested_; });
    }
  });
}

void NodeStatusUpdater::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopRequested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

DurationMs NodeStatusUpdater::interval() const {
  if (options_.heartbeatInterval) return *options_.heartbeatInterval;
  return rmInterval_ > 0 ? rmInterval_ : options_.defaultHeartbeatInterval;
}

DurationMs NodeStatusUpdater::runOnce() {
  try {
    return identity_.registered() ? heartbeat() : registerNode();
  } catch (const std::exception& error) {
    return retryDelay(identity_.registered() ? "heartbeat" : "registration", error.what());
  }
}

DurationMs NodeStatusUpdater::retryDelay(const std::string& what, const std::string& error) {
  ++consecutiveFailures_;
  const int doublings = std::min(consecutiveFailures_ - 1, 20);
  const DurationMs ceiling =
      std::min<DurationMs>(options_.maxRetryDelay, options_.initialRetryDelay << doublings);
  // Half fixed, half jitter: nodes that lost the RM together do not all return at once.
  std::uniform_int_distribution<DurationMs> jitter(0, ceiling / 2);
  const DurationMs delay = ceiling - ceiling / 2 + jitter(rng_);
  log_.warn() << what << " with the resource manager at " << options_.rmUrl << " failed (" << error
              << "); attempt " << consecutiveFailures_ << ", retrying in " << delay
              << "ms; containers keep running";
  return delay;
}

DurationMs NodeStatusUpdater::registerNode() {
  rest::NodeRegistration registration;
  registration.host = options_.host;
  registration.port = options_.port;
  registration.capability = options_.capability;
  rest::HttpHeaders headers = {{"Content-Type", "application/json"}};
  if (!options_.registrationCredential.empty()) {
    headers.push_back({"Authorization", "Bearer " + options_.registrationCredential});
  }
  const rest::HttpResponse response =
      client_->request("POST", "/ws/v1/nm/register", rest::toJson(registration), headers);
  if (response.status == 401 && options_.reloadCredential) return refused(response);
  if (!response.ok()) {
    return retryDelay("registration",
                      "HTTP " + std::to_string(response.status) + ": " + response.body);
  }
  const rest::NodeRegistrationResponse answer =
      rest::nodeRegistrationResponseFromJson(rest::parseJson(response.body));
  identity_.set(answer.nodeId, answer.nodeSecret, answer.logReaderDigest);
  rmInterval_ = answer.heartbeatIntervalMs;
  consecutiveFailures_ = 0;
  log_.info() << "registered with the resource manager at " << options_.rmUrl << " as node "
              << answer.nodeId << " (" << options_.capability.memoryMb << " MiB, "
              << options_.capability.vCores << " vCores); heartbeat every " << interval() << "ms";
  return 0;  // heartbeat at once, so the RM learns of running containers without delay
}

DurationMs NodeStatusUpdater::refused(const rest::HttpResponse& response) {
  std::optional<std::string> fresh;
  std::string readError;
  try {
    fresh = options_.reloadCredential();
  } catch (const std::exception& e) {
    readError = e.what();
  }
  if (fresh && *fresh != options_.registrationCredential) {
    options_.registrationCredential = *fresh;
    log_.info() << "read a new credential from " << options_.credentialSource
                << "; registering again";
    // Still counted: a new credential that is refused too waits longer each time.
    ++consecutiveFailures_;
    return 0;
  }
  const std::string waitingFor =
      !readError.empty() ? readError + "; waiting for " + options_.credentialSource
      : fresh            ? "waiting for " + options_.credentialSource + " to change"
                         : "waiting for " + options_.credentialSource + " to appear";
  return retryDelay("registration", "HTTP 401: " + response.body +
                                        "; the resource manager refuses this node's "
                                        "credential; " +
                                        waitingFor);
}

DurationMs NodeStatusUpdater::heartbeat() {
  std::vector<std::string> completedIds;
  const rest::NodeHeartbeat beat = containers_.heartbeat(&completedIds);
  const std::string nodeId = identity_.nodeId();
  const rest::HttpResponse response =
      client_->request("POST", "/ws/v1/nm/" + nodeId + "/heartbeat", rest::toJson(beat),
                       {{"Content-Type", "application/json"},
                        {"Authorization", "Bearer " + identity_.nodeSecret()}});
  if (response.status == 404) {
    log_.warn() << "the resource manager does not know node " << nodeId << "; registering again";
    identity_.markUnregistered();
    return 0;
  }
  if (!response.ok()) {
    return retryDelay("heartbeat",
                      "HTTP " + std::to_string(response.status) + ": " + response.body);
  }
  const rest::NodeHeartbeatResponse answer =
      rest::nodeHeartbeatResponseFromJson(rest::parseJson(response.body));
  if (consecutiveFailures_ > 0) {
    log_.info() << "the resource manager answers heartbeats again";
    consecutiveFailures_ = 0;
  }
  if (answer.reRegister) {
    // An RM that does not know the node (it restarted, or expired the node) has not taken in
    // these completions: they go again with the first heartbeat after registering, with every
    // running container, which a restarted RM with a state store keeps.
    log_.warn() << "the resource manager asked node " << nodeId
                << " to register again (it restarted or lost the node); registering with "
                << containers_.heartbeat(nullptr).containers.size() << " containers to report";
    identity_.markUnregistered();
    return 0;
  }
  // The RM has now seen these completions; later heartbeats leave them out.
  containers_.markReported(completedIds);
  for (const std::string& id : answer.containersToStop) {
    if (!containers_.stop(id, StopReason::kResourceManager, /*wait=*/false)) {
      log_.warn() << "the resource manager asked to stop unknown container " << id;
    }
  }
  return interval();
}

}  // namespace tide::nm
