#pragma once

// The REST side of rm_load's simulated node managers: one listening socket per simulated node
// address (127.a.b.c, all on one port), served by a single epoll thread, so that thousands of
// nodes cost one thread. It takes what tide-rm sends a node manager — the launch of an AM
// container (POST /ws/v1/node/containers) and the prompt stop of a container (DELETE
// /ws/v1/node/containers/{id}) — and hands each to a callback; every connection is answered
// and closed (tide-rm opens one per call).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/rm/wakeable_epoll.h"

namespace tide::bench {

struct NodeRequest {
  size_t node = 0;  // index into the addresses the listener was made with
  std::string method;
  std::string path;
  std::string body;
};

// Answers a request with this status (and an empty JSON object).
using NodeRequestHandler = std::function<int(const NodeRequest&)>;

class NodeListener {
 public:
  // Binds every address on one port (the first gets an ephemeral one, the others the same);
  // throws std::runtime_error naming the address that cannot be bound.
  NodeListener(const std::vector<std::string>& addresses, NodeRequestHandler handler);
  ~NodeListener();  // stops
  NodeListener(const NodeListener&) = delete;
  NodeListener& operator=(const NodeListener&) = delete;

  int port() const { return port_; }
  void start();
  void stop();

 private:
  void run();

  // Epoll tags: listeners are 0..n-1, the wake kWakeTag, connections kConnectionTag + fd.
  static constexpr uint64_t kWakeTag = 1ULL << 40;
  static constexpr uint64_t kConnectionTag = 1ULL << 41;

  NodeRequestHandler handler_;
  std::vector<int> listeners_;
  int port_ = 0;
  WakeableEpoll epoll_{kWakeTag};  // woken to end run()
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace tide::bench
