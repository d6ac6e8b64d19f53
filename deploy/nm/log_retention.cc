#include "deploy/nm/log_retention.h"

#include <chrono>

#include "common/app_logs.h"

namespace tide::nm {

LogRetention::LogRetention(LogRetentionOptions options) : options_(std::move(options)) {
  if (options_.wallClock == nullptr) options_.wallClock = &systemClock_;
}

size_t LogRetention::sweep() {
  const std::set<std::string> keep =
      options_.activeApplications ? options_.activeApplications() : std::set<std::string>{};
  const std::vector<std::string> removed = removeExpiredApplicationLogs(
      options_.logDir, options_.retention, options_.wallClock->nowMs(), keep, [this] {
        std::lock_guard<std::mutex> lock(mutex_);
        return stopping_;
      });
  for (const std::string& appId : removed) {
    log_.info() << "deleted the logs of " << appId << ": older than nm.logRetention ("
                << formatDuration(options_.retention) << ")";
  }
  return removed.size();
}

void LogRetention::start() {
  thread_ = std::thread([this] {
    sweep();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (wake_.wait_for(lock, std::chrono::milliseconds(options_.interval),
                         [this] { return stopping_; })) {
        break;
      }
      lock.unlock();
      sweep();
      lock.lock();
    }
  });
}

void LogRetention::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tide::nm
