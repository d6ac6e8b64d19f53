#pragma once

// Serves this executor's blocks to other executors: GET /blocks/<jobId>/<stage>/<index>/part-<n>
// answers the block's bytes, 404 when it is not here. Only holders of the application secret
// (Authorization: Bearer) are answered. Listens on an ephemeral port, on every interface, since
// the executors reading from it may be on other hosts; the AM tells them the address it sees
// this executor at.

#include <memory>
#include <string>

#include "executor/block_store.h"
#include "rest/http_server.h"

namespace tide::executor {

class BlockServer {
 public:
  // `store` must outlive the server.
  BlockServer(const BlockStore& store, const std::string& appSecret,
              const std::string& bindAddress = "0.0.0.0");
  ~BlockServer();

  // Starts serving; returns the port.
  int start();
  void stop();
  int port() const;

 private:
  const BlockStore& store_;
  std::unique_ptr<rest::HttpServer> server_;
};

}  // namespace tide::executor
