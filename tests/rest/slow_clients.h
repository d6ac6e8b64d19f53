#pragma once

// The slowloris attack, for tests: `count` connections to host:port that each send a request
// line and then one more header line every `interval`, never finishing the request. A
// connection the server closes is opened again (as an attacker would), so the pressure stays
// for as long as the object lives. Everything is closed and joined on destruction.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/sockets.h"

namespace tide::testing_support {

class SlowClients {
 public:
  SlowClients(std::string host, int port, int count,
              std::chrono::milliseconds interval = std::chrono::seconds(2),
              std::string sourceAddress = "")
      : host_(std::move(host)),
        port_(port),
        interval_(interval),
        source_(std::move(sourceAddress)),
        sockets_(static_cast<size_t>(count), -1) {
    int openNow = 0;
    for (int& sock : sockets_) {
      sock = connectOne();
      if (sock >= 0) ++openNow;
    }
    openNow_ = openNow;
    thread_ = std::thread([this] { trickle(); });
  }

  ~SlowClients() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    for (int sock : sockets_) {
      if (sock >= 0) ::close(sock);
    }
  }

  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  // Connections open at the last round (connected and not closed by the server).
  int open() const { return openNow_; }
  // How often the server closed one of them (each then opened again).
  int closedByServer() const { return closedByServer_; }
  // Connections that did not connect at all (refused or failed).
  int failedToConnect() const { return failedToConnect_; }

 private:
  int connectOne() {
    const int sock = connectTcp(host_, port_, source_);
    if (sock < 0) {
      ++failedToConnect_;
      return -1;
    }
    const std::string start = "GET /slow HTTP/1.1\r\nHost: " + host_ + "\r\n";
    if (!sendAll(sock, start)) {
      ::close(sock);
      ++failedToConnect_;
      return -1;
    }
    return sock;
  }

  // True when the server has answered (an error, since the request never ends) or closed the
  // connection: either way it is done with it.
  static bool closedByPeer(int sock) {
    pollfd fd{sock, POLLIN, 0};
    return ::poll(&fd, 1, 0) > 0;
  }

  void trickle() {
    int line = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
      const std::string header = "X-Slow-" + std::to_string(line++) + ": 1\r\n";
      int openNow = 0;
      for (int& sock : sockets_) {
        if (sock >= 0 &&
            (closedByPeer(sock) || ::send(sock, header.data(), header.size(), MSG_NOSIGNAL) < 0)) {
          ::close(sock);
          sock = -1;
          ++closedByServer_;
        }
        if (sock < 0) sock = connectOne();
        if (sock >= 0) ++openNow;
      }
      openNow_ = openNow;
    }
  }

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds interval_;
  const std::string source_;
  std::vector<int> sockets_;  // used by the constructor, then only by thread_
  std::atomic<int> openNow_{0};
  std::atomic<int> closedByServer_{0};
  std::atomic<int> failedToConnect_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace tide::testing_support
