#pragma once

// A tiny stand-in for tide-rm's node protocol, on 127.0.0.1 and an ephemeral port: it answers
// registrations with a known secret, records every heartbeat, and can be told to stop
// containers, ask for re-registration or forget the node.

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rest/http_server.h"
#include "rest/json.h"
#include "rest/messages/node.h"
#include "tests/support/locked.h"

namespace tide::nm::testing {

class FakeResourceManager {
 public:
  struct Heartbeat {
    std::string nodeId;
    std::string authorization;
    rest::NodeHeartbeat body;
  };

  explicit FakeResourceManager(std::string secret = "fake-rm-node-secret",
                               int64_t heartbeatIntervalMs = 100)
      : secret_(std::move(secret)), heartbeatIntervalMs_(heartbeatIntervalMs) {
    rest::HttpServerOptions options;
    options.log = [](const std::string&) {};
    server_ = std::make_unique<rest::HttpServer>(options);
    server_->post(
        "/ws/v1/nm/register", [this](const httplib::Request& req, httplib::Response& res) {
          {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!requiredCredential_.empty() &&
                req.get_header_value("Authorization") != "Bearer " + requiredCredential_) {
              ++refusedRegistrations_;
              rest::replyError(res, 401, "a node credential is required");
              return;
            }
          }
          const rest::NodeRegistration registration =
              rest::nodeRegistrationFromJson(rest::parseJson(req.body));
          rest::NodeRegistrationResponse answer;
          answer.nodeId = registration.host + ":" + std::to_string(registration.port);
          answer.nodeSecret = secret_;
          answer.heartbeatIntervalMs = heartbeatIntervalMs_;
          std::lock_guard<std::mutex> lock(mutex_);
          registrations_.push_back(registration);
          knownNodes_.insert(answer.nodeId);
          rest::replyJson(res, rest::toJson(answer));
        });
    server_->post(R"(/ws/v1/nm/([^/]+)/heartbeat)",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    const std::string nodeId = req.matches[1];
                    Heartbeat heartbeat{nodeId, req.get_header_value("Authorization"),
                                        rest::nodeHeartbeatFromJson(rest::parseJson(req.body))};
                    std::lock_guard<std::mutex> lock(mutex_);
                    if (knownNodes_.count(nodeId) == 0) {
                      rest::replyError(res, 404, "unknown node " + nodeId);
                      return;
                    }
                    heartbeats_.push_back(std::move(heartbeat));
                    rest::NodeHeartbeatResponse answer;
                    answer.containersToStop.swap(toStop_);
                    answer.reRegister = reRegisterNext_;
                    if (reRegisterNext_) knownNodes_.erase(nodeId);
                    reRegisterNext_ = false;
                    rest::replyJson(res, rest::toJson(answer));
                  });
    server_->start();
  }

  // Stops serving before the recorded state goes away.
  ~FakeResourceManager() { server_->stop(); }

  std::string url() const { return server_->baseUrl(); }
  const std::string& secret() const { return secret_; }

  std::vector<rest::NodeRegistration> registrations() const {
    return testing_support::lockedCopy(mutex_, registrations_);
  }
  std::vector<Heartbeat> heartbeats() const {
    return testing_support::lockedCopy(mutex_, heartbeats_);
  }
  // The status of a container in the latest heartbeat that mentioned it, if any.
  std::optional<rest::ContainerStatus> lastStatusOf(const std::string& containerId) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = heartbeats_.rbegin(); it != heartbeats_.rend(); ++it) {
      for (const rest::ContainerStatus& status : it->body.containers) {
        if (status.containerId == containerId) return status;
      }
    }
    return std::nullopt;
  }

  void stopInNextHeartbeat(const std::string& containerId) {
    std::lock_guard<std::mutex> lock(mutex_);
    toStop_.push_back(containerId);
  }
  void askToReRegister() {
    std::lock_guard<std::mutex> lock(mutex_);
    reRegisterNext_ = true;
  }
  // Registrations without "Authorization: Bearer <credential>" get 401 from now on.
  void requireRegistrationCredential(std::string credential) {
    std::lock_guard<std::mutex> lock(mutex_);
    requiredCredential_ = std::move(credential);
  }
  int refusedRegistrations() const {
    return testing_support::lockedCopy(mutex_, refusedRegistrations_);
  }
  // As after an RM restart: heartbeats of every node get 404 until it registers again.
  void forgetNodes() {
    std::lock_guard<std::mutex> lock(mutex_);
    knownNodes_.clear();
  }

 private:
  std::string secret_;
  int64_t heartbeatIntervalMs_;
  std::unique_ptr<rest::HttpServer> server_;
  mutable std::mutex mutex_;
  std::vector<rest::NodeRegistration> registrations_;
  std::vector<Heartbeat> heartbeats_;
  std::set<std::string> knownNodes_;
  std::vector<std::string> toStop_;
  bool reRegisterNext_ = false;
  std::string requiredCredential_;
  int refusedRegistrations_ = 0;
};

}  // namespace tide::nm::testing
