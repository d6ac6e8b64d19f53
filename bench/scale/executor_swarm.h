#pragma once

// Many simulated executors in one thread: each speaks tide-executor's protocol with the AM
// (rest/messages/executor.h) as executor/executor_backend.cc does (register, then sync: report
// every finished task at once, long-poll when it has nothing to say, wait out the interval after
// an early empty answer, retry 503s and transport errors with backoff), and runs every task it is
// given as a builtin noop that is done at once. One thread drives all of them over epoll
// (curl_multi_socket_action), with a libcurl multi handle per node: libcurl looks for a
// connection to reuse among all those of its multi handle to the same host, so one multi handle
// for 2,000 executors spent more time scanning its connection cache than the AM spent answering.
// Each executor keeps its own keep-alive connection, from its node's loopback address.

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tide::bench {

struct SimulatedExecutor {
  std::string executorId;
  std::string containerId;
  std::string amAddress;  // TIDE_AM_ADDRESS
  std::string appSecret;  // TIDE_APP_SECRET: its bearer token
  std::string nodeId;     // TIDE_NODE_ID
  std::string host;       // its node's address: it connects from there
  int cores = 1;
};

// What the swarm saw since the last takeStats().
struct SwarmStats {
  std::vector<double> syncMs;  // syncs that report tasks (not held by the AM): round trip
  std::vector<double> pollMs;  // syncs with nothing to report (the AM may hold them)
  int64_t tasksReported = 0;   // task ends the AM acknowledged
  int64_t syncs = 0;
  int64_t retries = 0;  // 503s and transport errors, retried with backoff
  int64_t registered = 0;
  int64_t exited = 0;  // released by the AM (shutdown), refused, or stopped by its node
  std::vector<std::string> errors;  // the first few
};

class ExecutorSwarm {
 public:
  // `onExit(containerId, exitStatus)`: an executor left by itself (shutdown: 0; refused: 1).
  explicit ExecutorSwarm(std::function<void(const std::string&, int)> onExit);
  ~ExecutorSwarm();
  ExecutorSwarm(const ExecutorSwarm&) = delete;
  ExecutorSwarm& operator=(const ExecutorSwarm&) = delete;

  // Thread-safe: a container was launched; the executor registers at once.
  void add(SimulatedExecutor executor);
  // Thread-safe: its container was stopped; it stops talking to the AM.
  void stop(const std::string& containerId);
  // Thread-safe.
  SwarmStats takeStats();
  int64_t live() const { return live_.load(); }

  // The swarm's thread: until quit().
  void run();
  void quit();

 private:
  struct Sim;
  struct Shard;
  Shard& shardFor(const std::string& host);
  void drainCommands();
  void send(Sim& sim);
  void finished(CURL* easy, CURLcode code);
  void schedule(Sim& sim, std::chrono::steady_clock::time_point at);
  void exitSim(Sim& sim, int status, const std::string& why);
  void error(const std::string& message);
  static int onSocket(CURL* easy, curl_socket_t fd, int what, void* self, void* socketData);
  static int onTimer(CURLM* multi, long timeoutMs, void* self);

  std::function<void(const std::string&, int)> onExit_;
  int epoll_ = -1;
  int wake_ = -1;  // eventfd: commands are waiting
  std::vector<std::unique_ptr<Shard>> shards_;
  std::map<std::string, Shard*> shardByHost_;
  std::vector<std::unique_ptr<Sim>> sims_;
  std::map<std::string, Sim*> byContainer_;
  std::multimap<std::chrono::steady_clock::time_point, Sim*> timers_;
  std::atomic<bool> quit_{false};
  std::atomic<int64_t> live_{0};

  std::mutex mutex_;
  std::vector<SimulatedExecutor> toAdd_;  // guarded by mutex_
  std::vector<std::string> toStop_;       // guarded by mutex_
  SwarmStats stats_;                      // guarded by mutex_
};

}  // namespace tide::bench
