#pragma once

// Serves this executor's blocks to other executors: GET /blocks/<jobId>/<stage>/<index>/part-<n>
// answers the block's bytes, 404 when it is not here. Only holders of the application secret
// (Authorization: Bearer) are answered. Listens on an ephemeral port of the executor's host (its
// node's configured host), never on every interface; the executor registers that host and the
// AM hands it to the executors reading from it.

#include <memory>
#include <string>

#include "executor/block_store.h"
#include "rest/http_server.h"
#include "rest/tls_settings.h"

namespace tide::executor {

class BlockServer {
 public:
  // `store` must outlive the server.
  // With `tls` enabled it serves HTTPS only.
  BlockServer(const BlockStore& store, const std::string& appSecret, const std::string& bindAddress,
              const rest::TlsSettings& tls = {});
  // "http://host:port" ("https://" with TLS), once started.
  std::string baseUrl() const { return server_->baseUrl(); }
  ~BlockServer() { stop(); }

  // Starts serving; returns the port.
  int start() { return server_->start(); }
  void stop() { server_->stop(); }
  int port() const { return server_->port(); }

 private:
  const BlockStore& store_;
  std::unique_ptr<rest::HttpServer> server_;
};

}  // namespace tide::executor
