#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "am/containers/resource_manager_client.h"
#include "rest/http_client.h"
#include "rest/tls_settings.h"

namespace tide::am {

// Where this AM attempt reaches tide-rm, as the RM put it in the AM container's environment.
struct TideRmAttempt {
  std::string rmAddress;  // TIDE_RM_ADDRESS, e.g. http://127.0.0.1:8088
  std::string attemptId;  // TIDE_APP_ATTEMPT_ID
  std::string amToken;    // TIDE_AM_TOKEN
};

// ResourceManagerClient over tide-rm's YARN-shaped REST API; starts executors through the
// node managers' container API with the RM-issued container token.
class TideRmClient final : public ResourceManagerClient {
 public:
  // `tls`: the CA tide-rm and the node managers are verified against, and whether the node
  // managers serve HTTPS.
  explicit TideRmClient(TideRmAttempt attempt, rest::TlsSettings tls = {});
  rest::RegisterApplicationMasterResponse registerAm(const AmEndpoint& endpoint) override;
  HeartbeatResult heartbeat(const ContainerAsk& ask) override;
  // Thread-safe: executors are started on a small pool, one client per node manager.
  void launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) override;
  // Waits up to kUnregisterPatience for an unreachable tide-rm (a restart) to take the final
  // status.
  void unregister(const std::string& finalStatus, const std::string& diagnostics) override;
  static constexpr std::chrono::milliseconds kUnregisterPatience{std::chrono::minutes(3)};
  // The allocate request a heartbeat sends for `ask` (each profile's "*" and host asks, and 0
  // for hosts no longer asked on); it remembers the hosts asked, so call it once per heartbeat.
  rest::AllocateRequest allocateRequest(const ContainerAsk& ask);
  // GET /api/v1/logs/{app}/{container}/{path} on the container's node manager.
  Status readContainerLog(const rest::Container& container, const std::string& applicationId,
                          const std::string& path, std::optional<int64_t> tailBytes,
                          std::string* content) override;

 private:
  rest::HttpClient& nodeClient(const std::string& nodeHttpAddress);

  // Adds one profile's host asks (of `any`'s priority and size) to the request, and asks of 0
  // for the hosts its previous heartbeat named and this one does not; returns the containers
  // asked on hosts.
  int addHostAsks(rest::AllocateRequest& request, const rest::ResourceRequest& any,
                  const std::vector<std::pair<std::string, int>>& hostAsks, int profileId);

  TideRmAttempt attempt_;
  rest::TlsSettings tls_;
  rest::HttpClient rm_;
  int64_t responseId_ = 0;
  // What registerAm sent: sent again when a restarted tide-rm asks the AM to register again.
  AmEndpoint endpoint_;
  // Hosts each profile's last heartbeat asked containers on (by profile id; 0 the default): an
  // ask that is not repeated is sent as 0, or tide-rm would keep it outstanding.
  std::map<int, std::set<std::string>> askedHosts_;
  std::mutex nodesMutex_;
  std::map<std::string, std::unique_ptr<rest::HttpClient>> nodes_;
};

}  // namespace tide::am
