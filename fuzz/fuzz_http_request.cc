// HTTP requests, path and query parameters: the input is sent as raw bytes to an in-process
// tide-rm REST server (every route: path parameters such as application ids, ?states, ?limit,
// ?offset, bodies), then the connection is half-closed and the answer read to its end. The
// server must neither crash nor trip a sanitizer, and must still answer a plain request.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "deploy/rm/rm_server.h"

namespace {

int serverPort() {
  static std::unique_ptr<tide::rm::ResourceManagerServer> server = [] {
    tide::rm::ResourceManagerServerOptions options;
    options.config.port = 0;
    options.serverThreads = 4;
    auto created = std::make_unique<tide::rm::ResourceManagerServer>(options);
    created->start();
    return created;
  }();
  return server->port();
}

// Sends `request`, half-closes, reads the answer; the number of bytes answered (-1: no
// connection).
ssize_t exchange(const std::string& request) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(serverPort()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(sock);
    return -1;
  }
  (void)::send(sock, request.data(), request.size(), MSG_NOSIGNAL);
  ::shutdown(sock, SHUT_WR);
  ssize_t total = 0;
  char buffer[4096];
  while (true) {
    pollfd fd{sock, POLLIN, 0};
    if (::poll(&fd, 1, 15000) <= 0) break;  // the server closes within requestReadTimeout
    const ssize_t n = ::recv(sock, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    total += n;
  }
  ::close(sock);
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exchange(std::string(reinterpret_cast<const char*>(data), size));
  // Still serving.
  static int counter = 0;
  if (++counter % 256 == 0 &&
      exchange("GET /ws/v1/cluster/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") <= 0) {
    std::abort();
  }
  return 0;
}
