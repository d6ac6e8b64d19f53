#pragma once

// The node manager's side of the RM protocol: registers the node (POST /ws/v1/nm/register),
// then heartbeats every container's status (POST /ws/v1/nm/{nodeId}/heartbeat), stops the
// containers the answer lists and registers again when the RM asks for it (reRegister, or a
// 404 for an unknown node). An unreachable RM is retried with growing, jittered delays and
// logged; containers keep running meanwhile.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/logging.h"
#include "deploy/nm/container_manager.h"
#include "deploy/nm/node_identity.h"
#include "rest/http_client.h"
#include "rest/messages/node.h"

namespace tide::nm {

struct NodeStatusUpdaterOptions {
  std::string rmUrl;   // "http://host:port" (or https://)
  std::string caFile;  // tls.caFile: what an https:// RM is verified against ("" = system CAs)
  std::string host;    // advertised in the registration
  int port = 0;
  rest::Resource capability;
  // Set when the operator configured nm.heartbeatInterval: it then wins over the interval the
  // RM suggests at registration.
  std::optional<DurationMs> heartbeatInterval;
  DurationMs defaultHeartbeatInterval = 1000;
  DurationMs initialRetryDelay = 500;  // after the first failure; doubles up to maxRetryDelay
  // Kept short so that a restarted RM hears from its nodes within a few seconds; the jitter
  // spreads the nodes that lost it together.
  DurationMs maxRetryDelay = 3000;
  std::chrono::milliseconds requestTimeout{10000};
  // Sent as "Authorization: Bearer" when registering: the node credential derived from the
  // cluster secret (rest/messages/credentials.h); empty = none (rm.authentication=none).
  std::string registrationCredential;
  // Asked for the credential again when the RM refuses a registration (401): a node started
  // before tide-rm has written its cluster secret file has none, or an old one. Returns nullopt
  // while there is none; unset = the credential above is final. `credentialSource` says what
  // it reads (for the log: what the node waits for).
  std::function<std::optional<std::string>()> reloadCredential;
  std::string credentialSource;
};

class NodeStatusUpdater {
 public:
  NodeStatusUpdater(NodeStatusUpdaterOptions options, ContainerManager& containers,
                    NodeIdentity& identity);
  ~NodeStatusUpdater();  // stops
  NodeStatusUpdater(const NodeStatusUpdater&) = delete;
  NodeStatusUpdater& operator=(const NodeStatusUpdater&) = delete;

  void start();
  // Wakes the loop up and joins it. Idempotent.
  void stop();

  // One step of the loop: register when not registered, else heartbeat. Returns how long to
  // wait before the next step. Public so that tests can drive it without the thread.
  DurationMs runOnce();

 private:
  DurationMs registerNode();
  DurationMs heartbeat();
  DurationMs retryDelay(const std::string& what, const std::string& error);
  DurationMs refused(const rest::HttpResponse& response);
  DurationMs interval() const;

  NodeStatusUpdaterOptions options_;
  ContainerManager& containers_;
  NodeIdentity& identity_;
  Logger log_{"nm"};
  std::unique_ptr<rest::HttpClient> client_;
  std::mt19937_64 rng_{std::random_device{}()};
  DurationMs rmInterval_ = 0;  // what the RM suggested at registration
  int consecutiveFailures_ = 0;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopRequested_ = false;
  std::thread thread_;
};

}  // namespace tide::nm
