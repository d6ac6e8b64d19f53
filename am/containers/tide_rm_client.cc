#include "am/containers/tide_rm_client.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "common/logging.h"
#include "rest/messages/node.h"

namespace tide::am {
namespace {

rest::HttpClientOptions rmOptions(const std::string& token, const rest::TlsSettings& tls) {
  rest::HttpClientOptions options;
  tls.applyTo(options);
  options.defaultHeaders = {{"Authorization", "Bearer " + token}};
  options.requestTimeout = std::chrono::milliseconds(10000);
  return options;
}

}  // namespace

TideRmClient::TideRmClient(TideRmAttempt attempt, rest::TlsSettings tls)
    : attempt_(std::move(attempt)),
      tls_(std::move(tls)),
      rm_(attempt_.rmAddress, rmOptions(attempt_.amToken, tls_)) {}

rest::RegisterApplicationMasterResponse TideRmClient::registerAm(const AmEndpoint& endpoint) {
  endpoint_ = endpoint;
  rest::RegisterApplicationMasterRequest request{endpoint.host, endpoint.port,
                                                 endpoint.trackingUrl};
  auto reply = rm_.postJson("/ws/v1/am/" + attempt_.attemptId + "/register", rest::toJson(request),
                            {/*idempotent=*/true, std::nullopt});
  return rest::registerApplicationMasterResponseFromJson(reply);
}

HeartbeatResult TideRmClient::heartbeat(const ContainerAsk& ask) {
  rest::AllocateRequest request = allocateRequest(ask);
  auto reply = rm_.postJson("/ws/v1/am/" + attempt_.attemptId + "/allocate", rest::toJson(request));
  rest::AllocateResponse response = rest::allocateResponseFromJson(reply);
  if (response.reRegister) {
    // tide-rm restarted and recovered this attempt from its state store (YARN's
    // ApplicationMasterNotRegisteredException): register again, start the responseId
    // handshake over and state every outstanding ask again (host asks included).
    Logger("am").warn() << "the resource manager restarted and asks " << attempt_.attemptId
                        << " to register again; registering and resending the outstanding asks";
    registerAm(endpoint_);
    responseId_ = 0;
    askedHosts_.clear();
    request = allocateRequest(ask);
    reply = rm_.postJson("/ws/v1/am/" + attempt_.attemptId + "/allocate", rest::toJson(request));
    response = rest::allocateResponseFromJson(reply);
    if (response.reRegister) {
      throw std::runtime_error("the resource manager still asks " + attempt_.attemptId +
                               " to register again after it did");
    }
  }
  responseId_ = response.responseId;
  HeartbeatResult result;
  result.granted = std::move(response.allocatedContainers);
  result.completed = std::move(response.completedContainers);
  result.numClusterNodes = response.numClusterNodes;
  result.capacity.fitNow = response.containersFitNow;
  result.capacity.fitTotal = response.containersFitTotal;
  result.capacity.source = response.containersFitTotal >= 0
                               ? "tide-rm allocate response (per live node)"
                               : "unknown: tide-rm has not seen an ask with the executor size";
  return result;
}

int TideRmClient::addHostAsks(rest::AllocateRequest& request, const rest::ResourceRequest& any,
                              const std::vector<std::pair<std::string, int>>& hostAsks,
                              int profileId) {
  int onHosts = 0;
  std::set<std::string> asked;
  for (const auto& [host, count] : hostAsks) {
    asked.insert(host);
    // tide-rm grants each ask on its own, so the host asks and "*" add up to `outstanding`.
    rest::ResourceRequest local = any;
    local.resourceName = host;
    local.numContainers = count;
    local.relaxLocality = true;
    request.asks.push_back(local);
    onHosts += count;
  }
  std::set<std::string>& before = askedHosts_[profileId];
  for (const std::string& host : before) {
    if (asked.count(host) != 0) continue;
    rest::ResourceRequest withdrawn = any;
    withdrawn.resourceName = host;
    withdrawn.numContainers = 0;
    request.asks.push_back(withdrawn);
  }
  before = std::move(asked);
  return onHosts;
}

rest::AllocateRequest TideRmClient::allocateRequest(const ContainerAsk& ask) {
  rest::AllocateRequest request;
  request.responseId = responseId_;
  request.progress = ask.progress;
  rest::ResourceRequest any;
  any.priority = ask.priority;
  any.resource = ask.resource;
  // The other resource profiles' shapes, each at its own priority (Spark's YarnAllocator asks
  // each ResourceProfile at a priority of its own), with their own host asks. Before the
  // default's "*" ask: tide-rm counts the containers that fit of the last "*" size it was
  // asked, which stays the default.
  for (const ProfileAsk& profile : ask.profileAsks) {
    rest::ResourceRequest other;
    other.priority = profile.priority;
    other.resource = profile.resource;
    const int onHosts = addHostAsks(request, other, profile.hostAsks, profile.profileId);
    other.numContainers = std::max(0, profile.outstanding - onHosts);
    request.asks.push_back(other);
  }
  const int onHosts = addHostAsks(request, any, ask.hostAsks, 0);
  any.numContainers = std::max(0, ask.outstanding - onHosts);
  request.asks.push_back(any);
  request.releases = ask.releases;
  return request;
}

rest::HttpClient& TideRmClient::nodeClient(const std::string& nodeHttpAddress) {
  std::lock_guard<std::mutex> lock(nodesMutex_);
  auto& client = nodes_[nodeHttpAddress];
  if (!client) {
    rest::HttpClientOptions options;
    options.requestTimeout = std::chrono::milliseconds(10000);
    tls_.applyTo(options);
    client = std::make_unique<rest::HttpClient>(tls_.urlOf(nodeHttpAddress), options);
  }
  return *client;
}

void TideRmClient::launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) {
  rest::ContainerLaunchRequest request;
  request.containerId = container.id;
  request.token = container.token;
  request.command = launch.command;
  request.resource = container.resource;
  for (const auto& [key, value] : launch.environment) request.environment[key] = value;
  if (const char* app = std::getenv("TIDE_APPLICATION_ID")) request.applicationId = app;
  rest::HttpClient& node = nodeClient(container.nodeHttpAddress);
  rest::HttpResponse response = node.request(
      "POST", "/ws/v1/node/containers", rest::toJson(request),
      {{"Content-Type", "application/json"}, {"X-Tide-Container-Token", container.token}});
  if (!response.ok())
    throw rest::HttpError::fromResponse("POST", node.urlFor("/ws/v1/node/containers"), response);
}

Status TideRmClient::readContainerLog(const rest::Container& container,
                                      const std::string& applicationId, const std::string& path,
                                      std::optional<int64_t> tailBytes, std::string* content) {
  std::string url = "/api/v1/logs/" + applicationId + "/" + container.id + "/" + path;
  if (tailBytes) url += "?tail=" + std::to_string(*tailBytes);
  rest::HttpResponse response;
  try {
    response = nodeClient(container.nodeHttpAddress)
                   .request("GET", url, "", {{"X-Tide-Container-Token", container.token}});
  } catch (const std::exception& e) {
    return Status::unavailable("the node manager " + container.nodeHttpAddress + " of container " +
                               container.id + " cannot be reached: " + e.what());
  }
  if (response.status == 404) return Status::notFound(response.body);
  if (!response.ok()) {
    return Status::unavailable("the node manager " + container.nodeHttpAddress + " answered HTTP " +
                               std::to_string(response.status) + ": " + response.body);
  }
  *content = std::move(response.body);
  return Status();
}

void TideRmClient::unregister(const std::string& finalStatus, const std::string& diagnostics) {
  rest::FinishApplicationMasterRequest request{finalStatus, diagnostics};
  // An AM that ends while tide-rm restarts waits for it (as YARN's AMRMClient does): leaving
  // without unregistering would fail the attempt and run the application again.
  const auto started = std::chrono::steady_clock::now();
  std::chrono::milliseconds delay(200);
  bool said = false;
  while (true) {
    try {
      rm_.postJson("/ws/v1/am/" + attempt_.attemptId + "/finish", rest::toJson(request),
                   {/*idempotent=*/true, std::nullopt});
      if (said) Logger("am").info() << "the resource manager recorded the final status";
      return;
    } catch (const rest::HttpError& error) {
      const long status = error.status();
      const bool unreachable =
          error.isTransportError() || status == 502 || status == 503 || status == 504;
      if (!unreachable || std::chrono::steady_clock::now() - started >= kUnregisterPatience) {
        throw;
      }
      if (!said) {
        said = true;
        Logger("am").warn()
            << "the resource manager does not answer (" << error.what() << "); waiting up to "
            << std::chrono::duration_cast<std::chrono::seconds>(kUnregisterPatience).count()
            << " s for it to record the final status " << finalStatus;
      }
      std::this_thread::sleep_for(delay);
      delay = std::min<std::chrono::milliseconds>(std::chrono::seconds(5), delay * 2);
    }
  }
}

}  // namespace tide::am
