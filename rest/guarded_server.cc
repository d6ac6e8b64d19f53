#include "rest/guarded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tide::rest {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// How often a waiting connection looks whether its server is stopping.
constexpr Millis kStopCheckInterval{100};

// How long a worker beyond minThreads waits for work before it leaves.
constexpr Millis kExtraWorkerLinger{2000};

// Workers beyond maxConnections: they only refuse connections over the limit, which is quick.
constexpr size_t kRefusingWorkers = 4;

}  // namespace

// Workers for connections: `minThreads` stay for the next connection, more are started while
// connections wait (up to `maxThreads`) and leave once there is nothing to do. Each connection
// holds one worker from its accept to its close.
class GrowingThreadPool : public httplib::TaskQueue {
 public:
  GrowingThreadPool(size_t minThreads, size_t maxThreads) : state_(std::make_shared<State>()) {
    state_->minThreads = std::max<size_t>(1, minThreads);
    state_->maxThreads = std::max(maxThreads, state_->minThreads);
  }

  ~GrowingThreadPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::vector<std::thread> exited;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      exited.swap(state_->exited);
      state_->tasks.push_back(std::move(fn));
      state_->changed.notify_one();
      if (state_->tasks.size() > state_->idle && state_->threads < state_->maxThreads) {
        try {
          // Started under the lock, so the worker finds itself in `live` when it leaves.
          std::thread worker([state = state_] { work(*state); });
          ++state_->threads;
          state_->live.emplace(worker.get_id(), std::move(worker));
        } catch (const std::system_error&) {
          // No thread to be had now: the task waits for a running worker, or, when there is
          // none, is served on the accepting thread.
          if (state_->threads == 0) {
            ++state_->threads;
            lock.unlock();
            work(*state_);
          }
        }
      }
    }
    joinAll(exited);
  }

  // Returns once every worker has ended, its thread-exit handlers included: a worker still
  // running OpenSSL's per-thread cleanup when the process exits races libcrypto's own atexit
  // cleanup, which frees the locks that per-thread cleanup takes.
  void shutdown() override {
    std::vector<std::thread> exited;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->stopping = true;
      state_->changed.notify_all();
      state_->changed.wait(lock, [this] { return state_->threads == 0; });
      exited.swap(state_->exited);
    }
    joinAll(exited);
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::function<void()>> tasks;  // guarded by mutex
    size_t threads = 0;                       // guarded by mutex
    size_t idle = 0;                          // guarded by mutex
    bool stopping = false;                    // guarded by mutex
    // Workers by thread id while they run; a leaving worker moves its own thread to `exited`,
    // joined by the next enqueue() or by shutdown() (a thread cannot join itself).
    std::map<std::thread::id, std::thread> live;  // guarded by mutex
    std::vector<std::thread> exited;              // guarded by mutex
    size_t minThreads = 1;
    size_t maxThreads = 1;
  };

  static void joinAll(std::vector<std::thread>& threads) {
    for (std::thread& thread : threads) thread.join();
  }

  static void work(State& state) {
    std::unique_lock<std::mutex> lock(state.mutex);
    while (true) {
      if (!state.tasks.empty()) {
        std::function<void()> task = std::move(state.tasks.front());
        state.tasks.pop_front();
        lock.unlock();
        task();
        task = nullptr;
        lock.lock();
        continue;
      }
      if (state.stopping) break;
      // A worker beyond minThreads waits a little before it leaves: requests come in bursts
      // (a thousand node managers heartbeating), and starting a thread per burst cost tide-rm
      // more than the requests.
      const bool extra = state.threads > state.minThreads;
      const auto woken = [&state] { return state.stopping || !state.tasks.empty(); };
      ++state.idle;
      const bool gotWork = extra ? state.changed.wait_for(lock, kExtraWorkerLinger, woken)
                                 : (state.changed.wait(lock, woken), true);
      --state.idle;
      if (!gotWork) break;
    }
    // The accepting thread serving a task itself (no worker could be started) is not in `live`.
    auto self = state.live.find(std::this_thread::get_id());
    if (self != state.live.end()) {
      state.exited.push_back(std::move(self->second));
      state.live.erase(self);
    }
    --state.threads;
    state.changed.notify_all();
  }

  std::shared_ptr<State> state_;
};

namespace {

std::string sslErrors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    text += (text.empty() ? "" : "; ") + std::string(buffer);
  }
  return text.empty() ? "unknown error" : text;
}

void addressOf(const sockaddr_storage& address, socklen_t length, std::string& ip, int& port) {
  ip.clear();
  port = 0;
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) ip = text;
    port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text)) ip = text;
    port = ntohs(in6->sin6_port);
  } else if (address.ss_family == AF_UNIX) {
    (void)length;
    ip = "unix";
  }
}

// One accepted connection, plain or TLS, over a non-blocking socket: every wait is bounded by
// the read or write timeout, by the current request's deadline, and by the server stopping.
class GuardedStream : public httplib::Stream {
 public:
  GuardedStream(socket_t sock, const ConnectionLimits& limits,
                const std::atomic<socket_t>& serverSocket, SSL* ssl)
      : sock_(sock), limits_(limits), serverSocket_(serverSocket), ssl_(ssl) {}

  void beginRequest() { deadline_ = Clock::now() + limits_.requestReadTimeout; }
  void setDeadline(Clock::time_point deadline) { deadline_ = deadline; }

  bool stopping() const { return serverSocket_ == INVALID_SOCKET; }

  // Waits for `events` until `until`; false on timeout, error or the server stopping.
  bool waitFor(short events, Clock::time_point until) const {
    while (!stopping()) {
      const auto now = Clock::now();
      if (now >= until) return false;
      const auto slice =
          std::min(std::chrono::duration_cast<Millis>(until - now) + Millis(1), kStopCheckInterval);
      pollfd fd{sock_, events, 0};
      const int ready = ::poll(&fd, 1, static_cast<int>(slice.count()));
      if (ready > 0) return (fd.revents & (events | POLLHUP | POLLERR)) != 0;
      if (ready < 0 && errno != EINTR) return false;
    }
    return false;
  }

  bool hasBuffered() const { return ssl_ && SSL_pending(ssl_) > 0; }

  bool is_readable() const override { return hasBuffered() || waitFor(POLLIN, readUntil()); }

  bool is_writable() const override {
    return waitFor(POLLOUT, Clock::now() + limits_.writeTimeout);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (ssl_) return tlsRead(ptr, size);
    while (true) {
      const ssize_t n = ::recv(sock_, ptr, size, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!waitFor(POLLIN, readUntil())) return -1;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (ssl_) return tlsWrite(ptr, size);
    const auto until = Clock::now() + limits_.writeTimeout;
    while (true) {
      const ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!waitFor(POLLOUT, until)) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      addressOf(address, length, ip, port);
    }
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      addressOf(address, length, ip, port);
    }
  }

  socket_t socket() const override { return sock_; }

  // The TLS handshake, bounded by the current deadline.
  bool handshake() {
    while (true) {
      ERR_clear_error();
      const int result = SSL_accept(ssl_);
      if (result == 1) return true;
      if (!waitForTls(SSL_get_error(ssl_, result), deadline_)) return false;
    }
  }

 private:
  Clock::time_point readUntil() const {
    return std::min(deadline_, Clock::now() + limits_.readTimeout);
  }

  bool waitForTls(int error, Clock::time_point until) const {
    if (error == SSL_ERROR_WANT_READ) return waitFor(POLLIN, until);
    if (error == SSL_ERROR_WANT_WRITE) return waitFor(POLLOUT, until);
    return false;
  }

  ssize_t tlsRead(char* ptr, size_t size) {
    const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 30));
    while (true) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, ptr, chunk);
      if (n > 0) return n;
      const int error = SSL_get_error(ssl_, n);
      if (error == SSL_ERROR_ZERO_RETURN) return 0;
      if (!waitForTls(error, readUntil())) return -1;
    }
  }

  ssize_t tlsWrite(const char* ptr, size_t size) {
    const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 30));
    const auto until = Clock::now() + limits_.writeTimeout;
    while (true) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, ptr, chunk);
      if (n > 0) return n;
      if (!waitForTls(SSL_get_error(ssl_, n), until)) return -1;
    }
  }

  socket_t sock_;
  const ConnectionLimits& limits_;
  const std::atomic<socket_t>& serverSocket_;
  SSL* ssl_;
  Clock::time_point deadline_ = Clock::now();
};

// `why` names the limit that was reached.
void refuseBusy(socket_t sock, bool tls, const char* why) {
  if (!tls) {
    const std::string body = std::string(R"({"error":{"code":503,"message":")") + why + R"("}})";
    const std::string response =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    // Best effort: the socket may not take it all at once, and we do not wait for it.
    [[maybe_unused]] ssize_t sent =
        ::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

}  // namespace

// An admitted connection between two of its requests.
struct OpenConnection {
  socket_t sock = INVALID_SOCKET;
  SSL* ssl = nullptr;
  std::string address;  // the client's, as admit() counted it
  size_t requestsLeft = 0;
};

// Kept-alive connections waiting for their next request, all in one epoll set, watched by one
// pool worker at a time (the watcher; leader/followers): when a connection becomes readable
// the watcher hands the watching to another worker and serves that connection itself, so a
// request waits for one thread to wake, as when each connection had its own (a hand-over to
// a second thread made every request wait for two, which a loaded machine made costly). One
// idle for keepAliveTimeout is closed. Once stopped, nothing more is parked or resumed.
class IdleConnections {
 public:
  using Task = std::function<void()>;
  // Runs a task on a pool worker.
  using Spawn = std::function<void(Task)>;
  // Serves a connection on the calling thread (then parks or closes it).
  using Serve = std::function<void(std::unique_ptr<OpenConnection>)>;
  using Close = std::function<void(OpenConnection&)>;

  IdleConnections(Millis keepAliveTimeout, Spawn spawn, Serve serve, Close close)
      : keepAliveTimeout_(keepAliveTimeout),
        spawn_(std::move(spawn)),
        serve_(std::move(serve)),
        close_(std::move(close)) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_ < 0 || wake_ < 0) {
      throw std::runtime_error(std::string("http server: epoll: ") + std::strerror(errno));
    }
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = wake_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &event);
  }

  ~IdleConnections() {
    stop();
    ::close(wake_);
    ::close(epoll_);
  }

  // Takes the connection (true) to serve it again once readable; false once stopped (the
  // caller closes it). The first parking starts the watcher.
  bool park(std::unique_ptr<OpenConnection>& connection) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return false;
    if (!watcherStarted_) {
      watcherStarted_ = true;
      ++watchers_;
      spawn_([this] { watch(); });
    }
    const socket_t sock = connection->sock;
    Parked& parked = parked_[sock];
    parked.connection = std::move(connection);
    parked.serial = ++serial_;
    // The watcher waits for the earliest expiry; without one it waits for events only.
    if (expiries_.empty()) wake();
    expiries_.push_back({Clock::now() + keepAliveTimeout_, sock, parked.serial});
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = sock;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, sock, &event) != 0) {
      connection = std::move(parked.connection);
      parked_.erase(sock);
      return false;
    }
    return true;
  }

  // Ends the watching (waits for the watcher to leave) and closes every parked connection;
  // idempotent.
  void stop() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    wake();
    watchersLeft_.wait(lock, [this] { return watchers_ == 0; });
    for (auto& [sock, parked] : parked_) close_(*parked.connection);
    parked_.clear();
  }

 private:
  struct Parked {
    std::unique_ptr<OpenConnection> connection;
    uint64_t serial = 0;  // which parking of this socket an expiry is for
  };
  struct Expiry {
    Clock::time_point at;
    socket_t sock;
    uint64_t serial;
  };

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake_, &one, sizeof one);
  }

  // The watcher's loop, on a pool worker: returns to the pool once it has handed the watching
  // on and served a connection, or when stopped.
  void watch() {
    epoll_event events[64];
    while (true) {
      int timeoutMs = -1;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopped_) return leaveLocked();
        if (!expiries_.empty()) {
          const auto wait = std::chrono::duration_cast<Millis>(expiries_.front().at - Clock::now());
          timeoutMs = static_cast<int>(std::max<int64_t>(0, wait.count() + 1));
        }
      }
      const int ready = ::epoll_wait(epoll_, events, 64, timeoutMs);
      std::vector<std::unique_ptr<OpenConnection>> readable, expired;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopped_) return leaveLocked();
        for (int i = 0; i < ready; ++i) {
          if (events[i].data.fd == wake_) {
            uint64_t count = 0;
            [[maybe_unused]] ssize_t read = ::read(wake_, &count, sizeof count);
            continue;
          }
          if (auto connection = take(events[i].data.fd)) readable.push_back(std::move(connection));
        }
        // Every parking waits the same keepAliveTimeout, so expiries are in time order.
        const auto now = Clock::now();
        while (!expiries_.empty() && expiries_.front().at <= now) {
          const Expiry expiry = expiries_.front();
          expiries_.pop_front();
          auto found = parked_.find(expiry.sock);
          if (found != parked_.end() && found->second.serial == expiry.serial) {
            expired.push_back(take(expiry.sock));
          }
        }
      }
      for (auto& connection : expired) close_(*connection);
      if (readable.empty()) continue;
      // The next watcher takes this one's place in watchers_.
      spawn_([this] { watch(); });
      // The others go to workers of their own; this thread serves the first.
      for (size_t i = 1; i < readable.size(); ++i) {
        OpenConnection* raw = readable[i].release();
        spawn_([this, raw] { serve_(std::unique_ptr<OpenConnection>(raw)); });
      }
      serve_(std::move(readable.front()));
      return;
    }
  }

  // Under mutex_: a watcher that saw the stop leaves.
  void leaveLocked() {
    --watchers_;
    watchersLeft_.notify_all();
  }

  // Under mutex_: removes the socket from the set and hands its connection back.
  std::unique_ptr<OpenConnection> take(socket_t sock) {
    auto found = parked_.find(sock);
    if (found == parked_.end()) return nullptr;
    std::unique_ptr<OpenConnection> connection = std::move(found->second.connection);
    parked_.erase(found);
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, sock, nullptr);
    return connection;
  }

  const Millis keepAliveTimeout_;
  const Spawn spawn_;
  const Serve serve_;
  const Close close_;
  int epoll_ = -1;
  int wake_ = -1;
  std::mutex mutex_;
  std::condition_variable watchersLeft_;
  bool stopped_ = false;               // guarded by mutex_
  bool watcherStarted_ = false;        // guarded by mutex_
  int watchers_ = 0;                   // guarded by mutex_: the running or spawned watcher (0 or 1)
  std::map<socket_t, Parked> parked_;  // guarded by mutex_
  std::deque<Expiry> expiries_;        // guarded by mutex_
  uint64_t serial_ = 0;                // guarded by mutex_
};

namespace {

// What httplib holds as its task queue (and deletes when its accept loop ends): the server's
// pool, with parking stopped before the pool shuts down, so that no parked connection is
// resumed onto a pool that is gone.
class ServerQueue : public httplib::TaskQueue {
 public:
  ServerQueue(std::shared_ptr<GrowingThreadPool> pool, IdleConnections& idle)
      : pool_(std::move(pool)), idle_(idle) {}
  void enqueue(std::function<void()> fn) override { pool_->enqueue(std::move(fn)); }
  void shutdown() override {
    idle_.stop();
    pool_->shutdown();
  }

 private:
  std::shared_ptr<GrowingThreadPool> pool_;
  IdleConnections& idle_;
};

// Whether a read would find something (data, or the peer's close) right now.
bool readableNow(socket_t sock) {
  pollfd fd{sock, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0;
}

}  // namespace

void GuardedServer::SslContextDeleter::operator()(void* context) const {
  SSL_CTX_free(static_cast<SSL_CTX*>(context));
}

GuardedServer::GuardedServer(ConnectionLimits limits, const TlsServerFiles& tls)
    : limits_(limits),
      // As many workers as connections may be open (a handler that blocks, a long poll, holds
      // its worker, and every open connection may be in one), and a few more, so that a
      // connection beyond maxConnections is refused at once even then.
      pool_(std::make_shared<GrowingThreadPool>(limits_.minThreads,
                                                limits_.maxConnections + kRefusingWorkers)),
      idle_(std::make_unique<IdleConnections>(
          limits_.keepAliveTimeout,
          [this](IdleConnections::Task task) { pool_->enqueue(std::move(task)); },
          [this](std::unique_ptr<OpenConnection> connection) { serve(std::move(connection)); },
          [this](OpenConnection& connection) { close(connection); })) {
  new_task_queue = [this] { return new ServerQueue(pool_, *idle_); };
  if (!tls.enabled()) return;
  if (tls.keyFile.empty()) {
    throw std::runtime_error("TLS: a certificate without a key (tls.keyFile is not set)");
  }
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  if (!context) throw std::runtime_error("TLS: cannot create a context: " + sslErrors());
  sslContext_.reset(context);
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_options(context,
                      SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(context, tls.certFile.c_str()) != 1) {
    throw std::runtime_error("TLS: cannot load the certificate " + tls.certFile + ": " +
                             sslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(context, tls.keyFile.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error("TLS: cannot load the key " + tls.keyFile + ": " + sslErrors());
  }
  if (SSL_CTX_check_private_key(context) != 1) {
    throw std::runtime_error("TLS: the key " + tls.keyFile + " does not match the certificate " +
                             tls.certFile);
  }
}

GuardedServer::~GuardedServer() {
  // Before the members the parked connections' close() uses (mutex_, perAddress_) go.
  idle_->stop();
  pool_->shutdown();
}

void GuardedServer::widenBacklog(int backlog) {
  const socket_t sock = svr_sock_;
  if (sock != INVALID_SOCKET) ::listen(sock, backlog);
}

size_t GuardedServer::openConnections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

const char* GuardedServer::admit(const std::string& address) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t& fromAddress = perAddress_[address];
  const char* refusal = open_ >= limits_.maxConnections ? "too many connections"
                        : fromAddress >= limits_.maxConnectionsPerAddress
                            ? "too many connections from this address"
                            : nullptr;
  if (refusal != nullptr) {
    if (fromAddress == 0) perAddress_.erase(address);
    return refusal;
  }
  ++fromAddress;
  ++open_;
  return nullptr;
}

void GuardedServer::release(const std::string& address) {
  std::lock_guard<std::mutex> lock(mutex_);
  --open_;
  auto it = perAddress_.find(address);
  if (it != perAddress_.end() && --it->second == 0) perAddress_.erase(it);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  SSL_CTX* context = static_cast<SSL_CTX*>(sslContext_.get());
  std::string address;
  {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    int port = 0;
    if (::getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &length) == 0) {
      addressOf(peer, length, address, port);
    }
  }
  if (const char* refusal = admit(address)) {
    refuseBusy(sock, context != nullptr, refusal);
    return false;
  }
  const int flags = ::fcntl(sock, F_GETFL, 0);
  ::fcntl(sock, F_SETFL, flags | O_NONBLOCK);

  SSL* ssl = nullptr;
  bool ok = true;
  if (context) {
    ssl = SSL_new(context);
    ok = ssl != nullptr && SSL_set_fd(ssl, sock) == 1;
  }
  auto connection = std::make_unique<OpenConnection>();
  connection->sock = sock;
  connection->ssl = ssl;
  connection->address = address;
  connection->requestsLeft = limits_.keepAliveMaxCount;
  if (ok && ssl) {
    GuardedStream stream(sock, limits_, svr_sock_, ssl);
    stream.beginRequest();
    ok = stream.handshake();
  }
  if (!ok) {
    close(*connection);
    return false;
  }
  serve(std::move(connection));
  return true;
}

void GuardedServer::serve(std::unique_ptr<OpenConnection> connection) {
  GuardedStream stream(connection->sock, limits_, svr_sock_, connection->ssl);
  while (connection->requestsLeft > 0 && !stream.stopping()) {
    // Between requests the connection waits without a worker (at most keepAliveTimeout).
    if (!stream.hasBuffered() && !readableNow(connection->sock)) {
      if (idle_->park(connection)) return;
      break;
    }
    stream.beginRequest();
    bool closed = false;
    const bool served = process_request(stream, connection->requestsLeft == 1, closed, nullptr);
    --connection->requestsLeft;
    if (!served || closed) break;
  }
  close(*connection);
}

void GuardedServer::close(OpenConnection& connection) {
  if (connection.ssl) {
    SSL_shutdown(connection.ssl);  // best effort: the socket is non-blocking
    SSL_free(connection.ssl);
    connection.ssl = nullptr;
  }
  ::shutdown(connection.sock, SHUT_RDWR);
  ::close(connection.sock);
  release(connection.address);
}

}  // namespace tide::rest
