#pragma once

// The connection layer under HttpServer: cpp-httplib's request parsing and routing on top of
// tide's own handling of each accepted socket, so that slow or greedy clients cannot take a
// server from everyone else (the slowloris attack) and so that TLS is served when configured.
//
// - A connection holds a worker (a pool that keeps `minThreads` warm and grows up to
//   `maxThreads`) only while it has a request to read or answer, so connections that never
//   finish a request hold only themselves. Between requests a kept-alive connection waits in
//   one epoll set of the server's, holding no thread, watched by one worker at a time that
//   serves the first to become readable itself: thousands of node managers heartbeating to
//   tide-rm, or of executors keeping a connection to the AM, cost file descriptors, not threads.
// - A handler may leave its answer for later (deferReply: a long poll): the connection then
//   waits without a thread too, until wakeDeferred() or the reply's deadline, when a worker
//   resumes it and writes the answer. A wakeDeferred() that comes after the handler (or a
//   resume) began looking for an answer, before the connection is parked, resumes it at once.
// - A request's line, headers and body must all arrive within `requestReadTimeout` of its first
//   byte, however slowly they trickle; otherwise the connection is closed. Over plain HTTP a
//   request whose head is still trickling in waits without a worker too (its bytes looked at,
//   not read, every 50 ms), so slow clients hold none. An idle kept-alive connection is closed
//   after `keepAliveTimeout`.
// - At most `maxConnections` connections in all, and `maxConnectionsPerAddress` from one client
//   address, are open at once; further ones get a 503 naming the limit and are closed at once.
// - With a certificate and key, every connection is TLS (the handshake within
//   requestReadTimeout too).

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
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
  size_t maxThreads = 0;  // 0: maxConnections
  size_t maxConnections = 1024;
  size_t maxConnectionsPerAddress = 256;
};

// PEM files for a TLS server; both empty = plain HTTP.
struct TlsServerFiles {
  std::string certFile;
  std::string keyFile;
  bool enabled() const { return !certFile.empty(); }
};

// A reply a handler leaves for later (see deferReply).
struct DeferredReply {
  // Runs on a worker when the server is woken (timedOut false) or at `deadline` (true), outside
  // any lock of the server's: fills `res` and returns true to answer now, or false to wait on (a
  // resume with timedOut must answer). Its answer goes out as status, Content-Type and body.
  std::function<bool(httplib::Response& res, bool timedOut)> resume;
  std::chrono::steady_clock::time_point deadline;
};

// From inside a route handler on a GuardedServer's worker: the request is answered later, by
// `reply.resume`, and the worker is free as soon as the handler returns (whatever the handler
// put into its response is discarded). False when the calling thread is not serving a
// GuardedServer's request: the handler must answer now.
bool deferReply(DeferredReply reply);

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
  // Every deferred reply is resumed soon (each on a worker). Thread-safe; cheap when none waits.
  void wakeDeferred();

  struct Connection;
  class Parking;

 private:
  bool process_and_close_socket(socket_t sock) override;
  // Serves `connection`'s requests while they come without waiting; then parks it.
  void serve(std::shared_ptr<Connection> connection);
  void resume(std::shared_ptr<Connection> connection, bool timedOut);
  // nullptr when the connection may open, else which limit it is over.
  const char* admit(const std::string& address);
  void release(const std::string& address);

  ConnectionLimits limits_;
  struct SslContextDeleter {
    void operator()(void* context) const;
  };
  std::unique_ptr<void, SslContextDeleter> sslContext_;  // SSL_CTX*
  // The pool and the parking of the current listen(): made by httplib's task queue factory,
  // ended by its shutdown.
  std::shared_ptr<Parking> parking_;
  mutable std::mutex mutex_;
  std::map<std::string, size_t> perAddress_;  // guarded by mutex_
  size_t open_ = 0;                           // guarded by mutex_
};

}  // namespace tide::rest
