#pragma once

// A node manager that launches nothing, for bench/scale/executor_load: it registers with a real
// tide-rm (with the node credential derived from the cluster secret, as tide-nm does), heartbeats
// the containers it holds, and serves the node manager's container API on its own address. A
// launch must carry the container's RM-issued token (or come from the RM with the node secret);
// instead of a process it hands the launch to `onLaunch`, which starts a simulated executor with
// the container's environment (TIDE_AM_ADDRESS, TIDE_APP_SECRET, TIDE_EXECUTOR_ID, ...). So the
// AM and its executor port are the real ones, and a simulated executor joins the AM the way a
// real one does: in a container the AM was granted and launched.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rest/http_client.h"
#include "rest/http_server.h"
#include "rest/messages/node.h"

namespace tide::bench {

class FakeNode {
 public:
  using LaunchHandler = std::function<void(const rest::ContainerLaunchRequest& launch,
                                           const std::string& nodeId, const std::string& host)>;
  using StopHandler = std::function<void(const std::string& containerId)>;

  // Serves on `host` (a loopback address of its own, e.g. 127.0.0.12: executors on it connect
  // from there) and registers `capability` with the RM at `rmAddress`.
  FakeNode(std::string host, rest::Resource capability, const std::string& rmAddress,
           const std::string& nodeCredential, LaunchHandler onLaunch, StopHandler onStop);
  ~FakeNode();

  // Sends one heartbeat with every container's state; stops those the RM says to stop.
  void heartbeat();
  // A simulated executor left by itself (its AM released it): its container completes.
  void containerExited(const std::string& containerId, int exitStatus);

  const std::string& nodeId() const { return nodeId_; }
  int64_t heartbeatIntervalMs() const { return heartbeatIntervalMs_; }

 private:
  void registerWithRm();
  void launch(const httplib::Request& req, httplib::Response& res);
  void remove(const httplib::Request& req, httplib::Response& res);
  // The container token in the request is this container's, or the caller is the RM.
  bool authorized(const httplib::Request& req, const std::string& containerId) const;
  void stopContainer(const std::string& containerId, int exitStatus);
  // Marks a held container COMPLETE with `exitStatus`; false when it is unknown or was already.
  bool markComplete(const std::string& containerId, int exitStatus);

  std::string host_;
  rest::Resource capability_;
  std::string nodeCredential_;
  LaunchHandler onLaunch_;
  StopHandler onStop_;
  std::unique_ptr<rest::HttpServer> server_;
  std::unique_ptr<rest::HttpClient> rm_;

  mutable std::mutex mutex_;
  std::string nodeId_;      // guarded by mutex_ after registration
  std::string nodeSecret_;  // guarded by mutex_
  int64_t heartbeatIntervalMs_ = 1000;
  struct Held {
    rest::ContainerReport report;
  };
  std::map<std::string, Held> containers_;  // guarded by mutex_
};

}  // namespace tide::bench
