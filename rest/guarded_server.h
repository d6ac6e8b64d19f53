#pragma once

// The connection layer under HttpServer: cpp-httplib's request parsing and routing on top of
// tide's own handling of each accepted socket, so that slow or greedy clients cannot take a
// server from everyone else (the slowloris attack) and so that TLS is served when configured.
//
// - A connection holds a worker (a pool that keeps `minThreads` warm and grows up to
//   `maxConnections`) only while a request is being read, handled or answered, so connections
//   that never finish a request hold only themselves. Between requests a kept-alive connection
//   waits without a thread, in one epoll set (IdleConnections), and gets a worker again when its
//   next request arrives: a resource manager with thousands of node managers heartbeating over
//   kept-alive connections needs threads for the requests in progress, not for every node.
// - A request's line, headers and body must all arrive within `requestReadTimeout` of its first
//   byte, however slowly they trickle; otherwise the connection is closed. An idle kept-alive
//   connection is closed after `keepAliveTimeout`.
// - At most `maxConnections` connections in all, and `maxConnectionsPerAddress` from one client
//   address, are open at once; further ones get a 503 naming the limit and are closed at once.
// - With a certificate and key, every connection is TLS (the handshake within
//   requestReadTimeout too).

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tide::rest {

struct ConnectionLimits {
  std::chrono::milliseconds keepAliveTimeout{1000};
  std::chrono::milliseconds readTimeout{5000};  // longest wait for any one read
  std::chrono::milliseconds writeTimeout{5000};
  std::chrono::milliseconds requestReadTimeout{10000};  // whole request line, headers and body
  size_t keepAliveMaxCount = 100;                       // requests per connection
  size_t minThreads = 8;
  size_t maxConnections = 1024;
  size_t maxConnectionsPerAddress = 256;
};

// PEM files for a TLS server; both empty = plain HTTP.
class GrowingThreadPool;
class IdleConnections;
struct OpenConnection;

struct TlsServerFiles {
  std::string certFile;
  std::string keyFile;
  bool enabled() const { return !certFile.empty(); }
};

class GuardedServer : public httplib::Server {
 public:
  // Throws std::runtime_error when the certificate or key cannot be loaded.
  GuardedServer(ConnectionLimits limits, const TlsServerFiles& tls);
  ~GuardedServer() override;

  bool tls() const { return sslContext_ != nullptr; }
  // After binding: lets `backlog` connections wait for accept (httplib listens with 5, so a
  // burst of connections would see SYNs dropped and retried only after a second).
  void widenBacklog(int backlog);
  // Connections open right now (for tests and status).
  size_t openConnections() const;

 private:
  bool process_and_close_socket(socket_t sock) override;
  // nullptr when the connection may open, else which limit it is over.
  const char* admit(const std::string& address);
  void release(const std::string& address);
  // Serves the connection's requests while they come without waiting, then parks it with
  // idle_ (or closes it: at its last request, on an error, when the server stops).
  void serve(std::unique_ptr<OpenConnection> connection);
  void close(OpenConnection& connection);

  ConnectionLimits limits_;
  // The workers, shared with the TaskQueue httplib holds (it deletes that one when its accept
  // loop ends, and stops parking first, see ServerQueue).
  std::shared_ptr<GrowingThreadPool> pool_;
  std::unique_ptr<IdleConnections> idle_;
  struct SslContextDeleter {
    void operator()(void* context) const;
  };
  std::unique_ptr<void, SslContextDeleter> sslContext_;  // SSL_CTX*
  mutable std::mutex mutex_;
  std::map<std::string, size_t> perAddress_;  // guarded by mutex_
  size_t open_ = 0;                           // guarded by mutex_
};

}  // namespace tide::rest
