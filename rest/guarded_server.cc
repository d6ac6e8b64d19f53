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
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

namespace tide::rest {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// How often a waiting connection looks whether its server is stopping.
constexpr Millis kStopCheckInterval{100};
// How often a connection whose request head trickles in is looked at again.
constexpr Millis kTrickleRecheck{50};
// How long a worker beyond minThreads waits for work before it leaves.
constexpr Millis kExtraWorkerLinger{2000};
// Workers beyond maxThreads: the parking's watcher, and a few that only refuse connections
// over the limit, which is quick.
constexpr size_t kWatcherAndRefusingWorkers = 1 + 4;

// Whether the request head (line and headers) waiting on plain socket `sock` has arrived
// whole, looking without reading; true too for a closed or failed socket and for a peer that
// has shut down its side after part of a head (the worker then reads what there is and closes
// at once, not after requestReadTimeout), and for a head larger than what is looked at.
bool requestHeadArrived(int sock) {
  char buffer[16384];
  const ssize_t n = ::recv(sock, buffer, sizeof buffer, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  if (static_cast<size_t>(n) == sizeof buffer) return true;
  if (std::string_view(buffer, static_cast<size_t>(n)).find("\r\n\r\n") != std::string_view::npos) {
    return true;
  }
  pollfd fd{sock, POLLRDHUP, 0};
  return ::poll(&fd, 1, 0) > 0 && (fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

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
  // A request arrived (or the peer closed): reading will not wait.
  bool readableNow() const {
    if (hasBuffered()) return true;
    pollfd fd{sock_, POLLIN, 0};
    return ::poll(&fd, 1, 0) > 0;
  }
  void setSwallow(bool swallow) { swallow_ = swallow; }
  // Writes all of `data`; false when the connection cannot take it.
  bool writeAll(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = write(data.data() + done, data.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

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
    if (swallow_) return static_cast<ssize_t>(size);  // a deferred reply's placeholder answer
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
  bool swallow_ = false;
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

// A deferred reply's answer, written by the server itself (httplib wrote only a placeholder).
std::string responseText(const httplib::Response& res, bool close) {
  std::string text = "HTTP/1.1 " + std::to_string(res.status) + " " +
                     (res.status < 400   ? "OK"
                      : res.status < 500 ? "Client Error"
                                         : "Server Error") +
                     "\r\n";
  for (const auto& [name, value] : res.headers) {
    if (name == "Content-Length" || name == "Connection") continue;
    text += name + ": " + value + "\r\n";
  }
  text += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  text += close ? "Connection: close\r\n\r\n" : "Connection: Keep-Alive\r\n\r\n";
  return text + res.body;
}

}  // namespace

// One accepted connection, passed between the workers and the parking. Closed (and its slot
// released) when the last reference goes.
struct GuardedServer::Connection {
  Connection(GuardedServer& owner, socket_t socket, std::string peer)
      : server(owner), sock(socket), address(std::move(peer)) {}
  ~Connection() {
    stream.reset();
    if (ssl) {
      if (ok) SSL_shutdown(ssl);  // best effort: the socket is non-blocking
      SSL_free(ssl);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    server.release(address);
  }
  GuardedServer& server;
  socket_t sock;
  std::string address;
  SSL* ssl = nullptr;
  bool ok = true;
  std::unique_ptr<GuardedStream> stream;
  size_t left = 0;  // requests it may still make (keepAliveMaxCount)
  // Set by deferReply during a request: how it is answered, and whether the connection closes
  // after that answer.
  std::shared_ptr<DeferredReply> deferred;
  bool closeAfter = false;
  // While parked (guarded by the parking's mutex).
  std::multimap<Clock::time_point, Connection*>::iterator deadline;
  bool watched = false;  // in the epoll set, for its next request
  // A request has begun to arrive but its head has not (plain HTTP): it waits in the parking,
  // looked at again every kTrickleRecheck, until it is whole or this deadline passes.
  bool trickling = false;
  Clock::time_point requestDeadline = Clock::time_point::max();
  // The parking's count of wakeDeferred() calls before its handler (or resume) last looked for
  // an answer: a wake after that, before it is parked, resumes it at once instead of being lost.
  uint64_t wakesSeen = 0;
};

namespace {

// The connection whose request this thread is serving, for deferReply.
thread_local GuardedServer::Connection* servingNow = nullptr;

}  // namespace

bool deferReply(DeferredReply reply) {
  GuardedServer::Connection* connection = servingNow;
  if (connection == nullptr || connection->deferred) return false;
  connection->deferred = std::make_shared<DeferredReply>(std::move(reply));
  connection->stream->setSwallow(true);
  return true;
}

// Where connections wait without a thread: idle kept-alive ones in an epoll set for their next
// request (until keepAliveTimeout), deferred replies for wakeDeferred() (until their deadline),
// requests whose head trickles in (looked at every kTrickleRecheck). One pool worker at a time
// watches them all (the watcher; leader/followers): when something is ready it hands the
// watching to another worker and serves the first ready connection itself, so a request waits
// for one thread to wake, as when each connection had its own (a hand-over to a second thread
// made every request wait for two, which a loaded machine made costly).
class GuardedServer::Parking {
 public:
  Parking(GuardedServer& server, size_t minThreads, size_t maxThreads)
      : server_(server), pool_(minThreads, maxThreads) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_ < 0 || wake_ < 0) throw std::runtime_error("http server: no epoll or eventfd");
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = nullptr;  // the wake-up
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &event);
  }
  ~Parking() {
    stop();
    ::close(epoll_);
    ::close(wake_);
  }

  // The first listen() starts the watcher.
  void start() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (watcherStarted_ || stopping_) return;
    watcherStarted_ = true;
    ++watchers_;
    pool_.enqueue([this] { watch(); });
  }

  void enqueue(std::function<void()> task) { pool_.enqueue(std::move(task)); }

  // How many times wakeDeferred() has been called: read before a handler looks for its answer
  // (Connection::wakesSeen).
  uint64_t wakes() const { return wakes_.load(); }

  // `deferred`: waits for wakeDeferred() or the deadline (resumed at once when a wake came since
  // it last looked); else for its next request.
  void park(std::shared_ptr<Connection> connection, Clock::time_point until, bool deferred) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) return;  // closed as `connection` goes
    Connection* c = connection.get();
    if (deferred && c->wakesSeen != wakes_.load()) {
      lock.unlock();
      pool_.enqueue([this, connection] { server_.resume(connection, false); });
      return;
    }
    const bool earliest = deadlines_.empty() || until < deadlines_.begin()->first;
    c->deadline = deadlines_.emplace(until, c);
    if (deferred) {
      deferred_.insert(c);
    } else if (c->trickling) {
      // Looked at again at `until` (not in the epoll set: its unread bytes would wake it at once).
    } else {
      epoll_event event{};
      event.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
      event.data.ptr = c;
      c->watched = ::epoll_ctl(epoll_, EPOLL_CTL_ADD, c->sock, &event) == 0;
    }
    parked_.emplace(c, std::move(connection));
    lock.unlock();
    if (earliest) poke();
  }

  void wakeDeferred() {
    std::vector<std::shared_ptr<Connection>> woken;
    // Counted before the parked ones are taken: one parked after this sees the new count.
    ++wakes_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (deferred_.empty()) return;
      for (Connection* c : deferred_) woken.push_back(unpark(c));
      deferred_.clear();
    }
    for (auto& c : woken) {
      pool_.enqueue([this, c] { server_.resume(c, false); });
    }
  }

  // Closes every parked connection and ends the pool once its running tasks are done;
  // idempotent.
  void stop() {
    std::map<Connection*, std::shared_ptr<Connection>> closing;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      stopping_ = true;
      closing.swap(parked_);
      deferred_.clear();
      deadlines_.clear();
      poke();
      watchersLeft_.wait(lock, [this] { return watchers_ == 0; });
    }
    closing.clear();
    pool_.shutdown();
  }

 private:
  void poke() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof one);
  }

  // Under mutex_: takes `c` out of the parking.
  std::shared_ptr<Connection> unpark(Connection* c) {
    auto it = parked_.find(c);
    std::shared_ptr<Connection> connection = std::move(it->second);
    parked_.erase(it);
    deadlines_.erase(c->deadline);
    if (c->watched) {
      ::epoll_ctl(epoll_, EPOLL_CTL_DEL, c->sock, nullptr);
      c->watched = false;
    }
    return connection;
  }

  // The watcher's loop, on a pool worker: returns to the pool once it has handed the watching
  // on and served a connection, or when stopped.
  void watch() {
    std::vector<epoll_event> events(256);
    while (true) {
      int timeoutMs = -1;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return leaveLocked();
        if (!deadlines_.empty()) {
          const auto wait = deadlines_.begin()->first - Clock::now();
          timeoutMs = static_cast<int>(std::clamp<int64_t>(
              std::chrono::duration_cast<Millis>(wait).count() + 1, 0, kStopCheckInterval.count()));
        }
      }
      const int n =
          ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()),
                       timeoutMs < 0 ? static_cast<int>(kStopCheckInterval.count()) : timeoutMs);
      std::vector<std::shared_ptr<Connection>> readable, timedOut, expired;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return leaveLocked();
        for (int i = 0; i < n; ++i) {
          auto* c = static_cast<Connection*>(events[i].data.ptr);
          if (c == nullptr) {
            uint64_t value = 0;
            [[maybe_unused]] ssize_t r = ::read(wake_, &value, sizeof value);
            continue;
          }
          // Gone meanwhile (woken, or expired in an earlier batch): the event is stale.
          if (parked_.count(c) == 0 || !c->watched) continue;
          readable.push_back(unpark(c));
        }
        const Clock::time_point now = Clock::now();
        while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
          Connection* c = deadlines_.begin()->second;
          const bool deferred = deferred_.erase(c) > 0;
          if (deferred) {
            timedOut.push_back(unpark(c));
          } else if (c->trickling && now < c->requestDeadline) {
            if (!requestHeadArrived(c->sock)) {  // still not whole: look again later
              deadlines_.erase(c->deadline);
              c->deadline = deadlines_.emplace(now + kTrickleRecheck, c);
              continue;
            }
            readable.push_back(unpark(c));
          } else {
            expired.push_back(unpark(c));
          }
        }
      }
      expired.clear();  // idle past keepAliveTimeout: closed here
      std::vector<std::function<void()>> ready;
      for (auto& c : readable) ready.push_back([this, c] { server_.serve(c); });
      for (auto& c : timedOut) ready.push_back([this, c] { server_.resume(c, true); });
      readable.clear();
      timedOut.clear();
      if (ready.empty()) continue;
      // The next watcher takes this one's place in watchers_; the others go to workers of
      // their own; this thread serves the first.
      pool_.enqueue([this] { watch(); });
      for (size_t i = 1; i < ready.size(); ++i) pool_.enqueue(std::move(ready[i]));
      ready.front()();
      return;
    }
  }

  // Under mutex_: a watcher that saw the stop leaves.
  void leaveLocked() {
    --watchers_;
    watchersLeft_.notify_all();
  }

  GuardedServer& server_;
  GrowingThreadPool pool_;
  int epoll_ = -1;
  int wake_ = -1;
  std::mutex mutex_;
  std::condition_variable watchersLeft_;
  bool stopping_ = false;        // guarded by mutex_
  bool watcherStarted_ = false;  // guarded by mutex_
  int watchers_ = 0;             // guarded by mutex_: the running or spawned watcher (0 or 1)
  std::map<Connection*, std::shared_ptr<Connection>> parked_;  // guarded by mutex_
  std::multimap<Clock::time_point, Connection*> deadlines_;    // guarded by mutex_
  std::set<Connection*> deferred_;                             // guarded by mutex_
  std::atomic<uint64_t> wakes_{0};                             // wakeDeferred() calls
};

namespace {

// httplib's task queue for one listen(): the parking's pool; its shutdown ends the parking.
class ParkingQueue : public httplib::TaskQueue {
 public:
  explicit ParkingQueue(std::shared_ptr<GuardedServer::Parking> parking)
      : parking_(std::move(parking)) {}
  void enqueue(std::function<void()> fn) override { parking_->enqueue(std::move(fn)); }
  void shutdown() override { parking_->stop(); }

 private:
  std::shared_ptr<GuardedServer::Parking> parking_;
};

}  // namespace

void GuardedServer::SslContextDeleter::operator()(void* context) const {
  SSL_CTX_free(static_cast<SSL_CTX*>(context));
}

GuardedServer::GuardedServer(ConnectionLimits limits, const TlsServerFiles& tls) : limits_(limits) {
  // Without maxThreads, as many workers as connections may be open (a handler that blocks holds
  // its worker, and every open connection may be in one), and a few more, so that a connection
  // beyond maxConnections is refused at once even then. Either way one more for the watcher.
  const size_t maxThreads = limits_.maxThreads > 0
                                ? limits_.maxThreads + 1
                                : limits_.maxConnections + kWatcherAndRefusingWorkers;
  parking_ = std::make_shared<Parking>(*this, limits_.minThreads, maxThreads);
  new_task_queue = [parking = parking_] {
    parking->start();
    return new ParkingQueue(parking);
  };
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
  // Before the members the parked connections' release() uses (mutex_, perAddress_) go.
  parking_->stop();
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

void GuardedServer::wakeDeferred() {
  parking_->wakeDeferred();
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

  auto connection = std::make_shared<Connection>(*this, sock, address);
  if (context) {
    connection->ssl = SSL_new(context);
    connection->ok = connection->ssl != nullptr && SSL_set_fd(connection->ssl, sock) == 1;
  }
  connection->stream = std::make_unique<GuardedStream>(sock, limits_, svr_sock_, connection->ssl);
  connection->left = limits_.keepAliveMaxCount;
  if (connection->ok && connection->ssl) {
    connection->stream->beginRequest();
    connection->ok = connection->stream->handshake();
  }
  if (!connection->ok) return false;
  serve(std::move(connection));
  return true;
}

void GuardedServer::serve(std::shared_ptr<Connection> connection) {
  GuardedStream& stream = *connection->stream;
  while (connection->left > 0 && !stream.stopping()) {
    // Nothing to read yet: the connection waits for its next request (up to keepAliveTimeout)
    // in the parking, not on this thread.
    if (!stream.readableNow()) {
      parking_->park(std::move(connection), Clock::now() + limits_.keepAliveTimeout, false);
      return;
    }
    // A request that trickles in (slowloris) waits in the parking until its head is whole, so
    // that however few workers a server has, slow clients hold none of them. (Over TLS the
    // bytes cannot be looked at: the worker reads them, within requestReadTimeout.)
    if (!connection->ssl && !requestHeadArrived(connection->sock)) {
      const Clock::time_point now = Clock::now();
      if (!connection->trickling) {
        connection->trickling = true;
        connection->requestDeadline = now + limits_.requestReadTimeout;
      }
      if (now >= connection->requestDeadline) return;  // too slow: closed
      parking_->park(std::move(connection), now + kTrickleRecheck, false);
      return;
    }
    if (connection->trickling) {
      stream.setDeadline(connection->requestDeadline);
      connection->trickling = false;
      connection->requestDeadline = Clock::time_point::max();
    } else {
      stream.beginRequest();
    }
    bool closed = false;
    connection->wakesSeen = parking_->wakes();
    servingNow = connection.get();
    const bool served = process_request(stream, connection->left == 1, closed, nullptr);
    servingNow = nullptr;
    --connection->left;
    if (connection->deferred) {
      stream.setSwallow(false);
      connection->closeAfter = closed || !served;
      const Clock::time_point deadline = connection->deferred->deadline;
      parking_->park(std::move(connection), deadline, true);
      return;
    }
    if (!served || closed) return;
  }
}

void GuardedServer::resume(std::shared_ptr<Connection> connection, bool timedOut) {
  httplib::Response res;
  res.status = 200;
  bool answer = false;
  connection->wakesSeen = parking_->wakes();
  try {
    answer = connection->deferred->resume(res, timedOut) || timedOut;
  } catch (const std::exception& error) {
    res = httplib::Response();
    res.status = 500;
    std::string message = error.what();
    for (char& ch : message) {
      if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ch = ' ';
    }
    res.set_content(R"({"error":{"code":500,"message":")" + message + R"("}})", "application/json");
    answer = true;
  }
  if (!answer) {
    const Clock::time_point deadline = connection->deferred->deadline;
    parking_->park(std::move(connection), deadline, true);
    return;
  }
  connection->deferred.reset();
  if (!connection->stream->writeAll(responseText(res, connection->closeAfter)) ||
      connection->closeAfter) {
    return;
  }
  serve(std::move(connection));
}

}  // namespace tide::rest
