#pragma once

// nm.logRetention: deletes the application log directories of nm.logDir that nobody has
// written to for longer than the retention, at start() and then every `interval`, as
// YARN's NodeManager does with yarn.nodemanager.log.retain-seconds. Applications with a
// running container on this node are never deleted. The sweep is common/app_logs.h's; this is
// only its thread.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/logging.h"

namespace tide::nm {

struct LogRetentionOptions {
  std::string logDir;
  DurationMs retention = 7 * 24 * 3600 * 1000LL;
  DurationMs interval = 3600 * 1000;
  // The applications to keep whatever their age (those with running containers).
  std::function<std::set<std::string>()> activeApplications;
  const Clock* wallClock = nullptr;  // epoch ms; null: the system clock
};

class LogRetention {
 public:
  explicit LogRetention(LogRetentionOptions options);
  ~LogRetention() { stop(); }
  LogRetention(const LogRetention&) = delete;
  LogRetention& operator=(const LogRetention&) = delete;

  // Sweeps on a thread: at once, then every interval. start() does not wait for the first
  // sweep: a log dir that holds much to delete must not hold up the node manager's start.
  void start();
  // Stops the thread; a sweep under way ends after the application it is deleting.
  void stop();
  // One sweep; returns how many application directories it deleted.
  size_t sweep();

 private:
  LogRetentionOptions options_;
  SystemClock systemClock_;
  Logger log_{"nm"};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tide::nm
