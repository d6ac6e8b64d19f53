#pragma once

// The node manager's REST API (see rest/messages/node.h and docs/api/tide-nm.yaml):
//   POST   /ws/v1/node/containers        start a container       (container token)
//   GET    /ws/v1/node/containers        list containers         (node secret, or a token)
//   GET    /ws/v1/node/containers/{id}   one container           (its token, or node secret)
//   DELETE /ws/v1/node/containers/{id}   stop it (exit -105)     (its token, or node secret)
//   GET    /ws/v1/node/info              node id, resources, enforcement (no auth)
//   GET    /api/v1/logs/{app}            an application's kept logs: containers, files, sizes
//                                        (client token, or node secret)
//   GET    /api/v1/logs/{app}/{c}/{path} one log file, ?tail=BYTES (client token, node secret,
//                                        or container c's token)
// A container token is sent as `X-Tide-Container-Token: <containerToken(secret, id)>`; the RM
// authenticates with `Authorization: Bearer <nodeSecret>`.

#include <memory>

#include "deploy/nm/container_manager.h"
#include "deploy/nm/node_identity.h"
#include "rest/http_server.h"

namespace tide::nm {

class NodeManagerServer {
 public:
  static constexpr char kTokenHeader[] = "X-Tide-Container-Token";

  // `serverOptions` gives bind address and port (0 = ephemeral); its auth hook is not used,
  // authorization is per container.
  NodeManagerServer(ContainerManager& containers, NodeIdentity& identity,
                    rest::HttpServerOptions serverOptions);
  ~NodeManagerServer() { stop(); }

  // Binds and serves in the background; returns the bound port.
  int start() { return server_->start(); }
  void stop() { server_->stop(); }
  int port() const { return server_->port(); }
  std::string baseUrl() const { return server_->baseUrl(); }

 private:
  void launch(const httplib::Request& req, httplib::Response& res);
  void list(const httplib::Request& req, httplib::Response& res);
  void get(const httplib::Request& req, httplib::Response& res);
  void remove(const httplib::Request& req, httplib::Response& res);
  void info(const httplib::Request& req, httplib::Response& res);
  void listLogs(const httplib::Request& req, httplib::Response& res);
  void getLog(const httplib::Request& req, httplib::Response& res);

  // The secret, or a 503 when the node has not registered yet (no token can be checked).
  std::string requireSecret() const;
  bool isResourceManager(const httplib::Request& req, const std::string& secret) const;
  // Throws a 401 unless the request carries the RM's bearer secret or the container's token.
  void authorizeContainer(const httplib::Request& req, const std::string& containerId) const;
  // Whether the request carries the cluster's client token (or the cluster secret) as a bearer
  // token, checked against the digest tide-rm gave this node.
  bool isClient(const httplib::Request& req) const;

  ContainerManager& containers_;
  NodeIdentity& identity_;
  std::unique_ptr<rest::HttpServer> server_;
};

}  // namespace tide::nm
