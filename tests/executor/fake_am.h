#pragma once

// An AM for the executor's end-to-end tests: the two endpoints of rest/messages/executor.h on
// 127.0.0.1, the bearer secret checked (401 otherwise), tasks handed out in batches of the
// executor's free slots, every update collected, syncs long-polled like the real AM does.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "rest/http_server.h"
#include "rest/json.h"
#include "rest/messages/executor.h"
#include "tests/support/locked.h"

namespace tide::executor::testing {

class FakeAm {
 public:
  struct Options {
    std::string secret = "test-secret";
    int64_t heartbeatIntervalMs = 200;
    int taskSlots = 1;
    // Tasks handed out beyond the free slots in each sync reply (the test marks them queued).
    size_t handAhead = 0;

    static Options handingAhead(size_t tasks) {
      Options options;
      options.handAhead = tasks;
      return options;
    }
  };

  explicit FakeAm(Options options) : options_(std::move(options)) {
    rest::HttpServerOptions serverOptions;
    serverOptions.auth = [this](const httplib::Request& request) -> std::optional<std::string> {
      std::optional<std::string> refusal = authorize_(request);
      if (refusal) {
        std::lock_guard<std::mutex> lock(mutex_);
        ++refusedRequests_;
      }
      return refusal;
    };
    serverOptions.keepAliveTimeout = std::chrono::seconds(1);
    serverOptions.log = [](const std::string&) {};
    server_ = std::make_unique<rest::HttpServer>(serverOptions);
    server_->post(
        "/api/v1/executors/register",
        [this](const httplib::Request& req, httplib::Response& res) { onRegister(req, res); });
    server_->post(
        R"(/api/v1/executors/([^/]+)/sync)",
        [this](const httplib::Request& req, httplib::Response& res) { onSync(req, res); });
    server_->post(R"(/api/v1/executors/([^/]+)/commit)", [this](const httplib::Request& req,
                                                                httplib::Response& res) {
      const rest::CommitRequest request = rest::commitRequestFromJson(rest::parseJson(req.body));
      rest::CommitDecision decision;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        commitRequests.push_back(request.taskId);
        decision.allowed = denyCommits_.count(request.taskId) == 0;
        if (!decision.allowed) decision.reason = "another attempt has committed";
        changed_.notify_all();
      }
      rest::replyJson(res, rest::toJson(decision));
    });
    server_->start();
  }
  ~FakeAm() { stop(); }

  std::string url() const { return server_->baseUrl(); }

  void addTasks(const std::vector<rest::TaskLaunch>& launches) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.insert(queue_.end(), launches.begin(), launches.end());
    changed_.notify_all();
  }
  // The AM denies this attempt's commit (another attempt of its task won).
  void denyCommit(int64_t taskId) {
    std::lock_guard<std::mutex> lock(mutex_);
    denyCommits_.insert(taskId);
  }
  void kill(int64_t taskId) {
    std::lock_guard<std::mutex> lock(mutex_);
    kills_.push_back(taskId);
    changed_.notify_all();
  }
  void shutdownExecutors() {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
    changed_.notify_all();
  }
  // Answers syncs with 404 from now on, as an AM that has forgotten the executor.
  void forgetExecutors() {
    std::lock_guard<std::mutex> lock(mutex_);
    forgotten_ = true;
    changed_.notify_all();
  }
  // Ends held syncs and stops serving: the AM is gone.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      changed_.notify_all();
    }
    server_->stop();
  }

  // Waits (bounded) until `condition` holds over the AM's state; the lock is held meanwhile.
  bool waitFor(const std::function<bool()>& condition,
               std::chrono::milliseconds bound = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, bound, condition);
  }

  // State, read under waitFor's lock or after stop() (which joins the handlers' threads).
  std::map<int64_t, std::vector<rest::TaskStatusUpdate>> updatesByTask;
  std::vector<rest::ExecutorRegistration> registrations;
  std::vector<int64_t> commitRequests;  // task ids, in the order they asked
  size_t updateCount = 0;
  int syncs = 0;
  int syncsWithUpdates = 0;
  int badSyncs = 0;
  // Syncs that asked to be held (maxWaitMs > 0) while a task handed to the executor had not
  // been reported ended or handed back: its end could then wait out the hold.
  int holdAsksWithTasksOut = 0;
  std::vector<int64_t> lastRunning;
  std::chrono::steady_clock::time_point firstLaunchAt;
  std::chrono::steady_clock::time_point lastUpdateAt;

  int refusedRequests() { return testing_support::lockedCopy(mutex_, refusedRequests_); }

 private:
  void onRegister(const httplib::Request& req, httplib::Response& res) {
    rest::ExecutorRegistration registration =
        rest::executorRegistrationFromJson(rest::parseJson(req.body));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      registrations.push_back(registration);
      changed_.notify_all();
    }
    rest::ExecutorRegistered registered;
    registered.heartbeatIntervalMs = options_.heartbeatIntervalMs;
    registered.taskSlots = options_.taskSlots;
    rest::replyJson(res, rest::toJson(registered));
  }

  void onSync(const httplib::Request& req, httplib::Response& res) {
    rest::ExecutorSync sync;
    try {
      sync = rest::executorSyncFromJson(rest::parseJson(req.body));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++badSyncs;
      throw;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ++syncs;
    if (forgotten_) {
      rest::replyError(res, 404, "unknown executor " + std::string(req.matches[1]));
      return;
    }
    if (!sync.updates.empty()) {
      lastUpdateAt = std::chrono::steady_clock::now();
      ++syncsWithUpdates;
    }
    for (rest::TaskStatusUpdate& update : sync.updates) {
      handedOut_.erase(update.taskId);
      updatesByTask[update.taskId].push_back(std::move(update));
      ++updateCount;
    }
    for (int64_t taskId : sync.returned) handedOut_.erase(taskId);
    if (sync.maxWaitMs > 0 && !handedOut_.empty()) ++holdAsksWithTasksOut;
    lastRunning = sync.running;
    changed_.notify_all();
    const auto hasWork = [&] {
      return stopping_ || shutdown_ || !kills_.empty() ||
             (!queue_.empty() && (sync.freeSlots > 0 || options_.handAhead > 0));
    };
    // A long poll: only a sync that brings nothing may be held.
    if (sync.updates.empty() && sync.maxWaitMs > 0) {
      changed_.wait_for(lock, std::chrono::milliseconds(sync.maxWaitMs), hasWork);
    }
    rest::ExecutorSyncReply reply;
    reply.shutdown = shutdown_;
    reply.kills.swap(kills_);
    const size_t batch =
        std::min(queue_.size(), static_cast<size_t>(sync.freeSlots) + options_.handAhead);
    if (batch > 0 && firstLaunchAt == std::chrono::steady_clock::time_point{}) {
      firstLaunchAt = std::chrono::steady_clock::now();
    }
    for (size_t i = 0; i < batch; ++i) {
      handedOut_.insert(queue_.front().taskId);
      reply.launches.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    rest::replyJson(res, rest::toJson(reply));
  }

  Options options_;
  rest::AuthHook authorize_ = rest::bearerTokenAuth(options_.secret);
  std::unique_ptr<rest::HttpServer> server_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<rest::TaskLaunch> queue_;
  std::set<int64_t> handedOut_;  // launched, no end or hand-back heard yet
  std::vector<int64_t> kills_;
  std::set<int64_t> denyCommits_;
  bool shutdown_ = false;
  bool forgotten_ = false;
  bool stopping_ = false;
  int refusedRequests_ = 0;
};

}  // namespace tide::executor::testing
