#pragma once

// tide-rm's REST layer: serves the client API, the ApplicationMaster protocol and the node
// manager protocol (rest/messages/cluster.h, rest/messages/node.h) over ClusterState, runs the
// expiry checker, and carries out the state's network work (launching AM containers, prompt
// container stops) on a thread of its own so that no request waits on a node manager.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

#include "common/clock.h"
#include "common/host_unique_name.h"
#include "common/logging.h"
#include "deploy/rm/cluster_state.h"
#include "deploy/rm/rm_config.h"
#include "deploy/rm/state_store.h"
#include "rest/http_server.h"

namespace tide::rm {

struct ResourceManagerServerOptions {
  RmConfig config;
  // Epoch ms, used as given; 0 = the stored one, or on a first start the first millisecond from
  // now that no other tide-rm on this host holds (deploy/rm/cluster_timestamp.h).
  int64_t clusterTimestamp = 0;
  uint64_t placementSeed = 0;
  SecretGenerator secrets;       // unset = systemSecretGenerator()
  const Clock* clock = nullptr;  // unset = a SteadyClock
  // How often nodes and AMs are checked for expiry; 0 = min(250 ms, the expiries / 4).
  DurationMs expiryCheckIntervalMs = 0;
  // Server threads kept ready; more start while requests are in progress (a kept-alive
  // connection between requests holds none).
  size_t serverThreads = 64;
  // Connections open at once (one per node manager and AM); 0 = what the open-files limit
  // leaves room for (tide-rm raises its soft limit to the hard one first), at least 1024.
  size_t maxConnections = 0;
  std::string version = "tide-rm";
  // The cluster secret every client token and node credential derives from (config.
  // authenticate); empty = a fresh random one, for in-process use (see clusterSecret()).
  std::string clusterSecret;
};

class ResourceManagerServer {
 public:
  explicit ResourceManagerServer(ResourceManagerServerOptions options);
  ~ResourceManagerServer();  // stops
  ResourceManagerServer(const ResourceManagerServer&) = delete;
  ResourceManagerServer& operator=(const ResourceManagerServer&) = delete;

  // Binds rm.host:rm.port, starts serving and the background threads; returns the bound port.
  int start();
  void stop();

  int port() const { return server_.port(); }
  // "http://host:port" ("https://" with TLS): what AMs get as TIDE_RM_ADDRESS.
  std::string baseUrl() const { return server_.baseUrl(); }
  // The cluster secret, which is also the admin token.
  const std::string& clusterSecret() const { return options_.clusterSecret; }

  // Runs `body` on the state under the lock, then carries out the network work it queued.
  // For tests and the bench, which set up nodes in-process.
  template <typename Body>
  auto withState(Body&& body) {
    std::unique_lock<std::mutex> lock(stateMutex_);
    // What changed is in the state store before anyone hears of it (even when the body
    // failed half-way), and before the network work it decided goes out.
    if constexpr (std::is_void_v<decltype(body(*state_))>) {
      try {
        body(*state_);
      } catch (...) {
        persist();
        throw;
      }
      persist();
      dispatch(state_->takeOutbox());
    } else {
      std::optional<decltype(body(*state_))> result;
      try {
        result.emplace(body(*state_));
      } catch (...) {
        persist();
        throw;
      }
      persist();
      dispatch(state_->takeOutbox());
      return std::move(*result);
    }
  }

 private:
  void addRoutes();
  void addApplicationRoutes();
  // addApplicationRoutes' groups, registered in this order: new-application and submission;
  // the reports (all, one, its state); the control token; the kill (PUT state).
  void addSubmissionRoutes();
  void addApplicationReportRoutes();
  void addControlTokenRoute();
  void addKillRoute();
  void addClusterRoutes();
  void addNodeRoutes();
  void addApplicationMasterRoutes();
  // Writes what the state queued for the store (under stateMutex_). A store that cannot be
  // written ends the process: answering as if it had been would lose applications silently.
  void persist();
  void dispatch(Outbox outbox);
  void runExpiryChecker();
  void runDispatcher();
  void launch(const AmLaunch& launch);
  void stopOnNode(const ContainerStopOrder& order);

  ResourceManagerServerOptions options_;
  std::unique_ptr<Clock> ownedClock_;
  const Clock* clock_;
  Logger log_{"rm"};

  std::mutex stateMutex_;
  std::unique_ptr<ClusterState> state_;
  std::unique_ptr<StateStore> store_;  // null without a state store
  // Keeps this cluster's timestamp (and so its application ids) its own on this host.
  std::optional<HostUniqueName> clusterTimestampClaim_;

  rest::HttpServer server_;

  std::mutex workMutex_;
  std::condition_variable workChanged_;
  std::deque<Outbox> work_;
  bool stopping_ = false;
  std::thread expiryChecker_;
  std::thread dispatcher_;
};

}  // namespace tide::rm
