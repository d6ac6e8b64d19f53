#pragma once

// Executors that are gone, with why (Spark's "Dead" executors): an idle timeout, a lost
// heartbeat, a container killed for memory or exited. Bounded to the newest `capacity`, with
// the count of all; the list is rebuilt only when one is added and shared read-only, so the
// status snapshot the loop publishes every tick copies a pointer, not the list.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"

namespace tide::am {

struct RemovedExecutor {
  std::string id;
  std::string host;
  std::string container;
  TimeMs registeredAt = -1;  // clock time
  TimeMs removedAt = 0;      // clock time
  // "idle_timeout", "heartbeat_timeout", or how its container ended (classifyExit's cause:
  // "memory", "exit", "preempted", "node_lost", "killed", "released", "success").
  std::string reason;
  std::string why;  // the sentence the log and the decision log have
};

class RemovedExecutors {
 public:
  explicit RemovedExecutors(size_t capacity = 500) : capacity_(capacity) {}
  void add(RemovedExecutor removed) {
    ++total_;
    records_.push_front(std::move(removed));
    while (records_.size() > capacity_) records_.pop_back();
    view_ = std::make_shared<const std::vector<RemovedExecutor>>(records_.begin(), records_.end());
  }
  // The newest first; never null.
  std::shared_ptr<const std::vector<RemovedExecutor>> newest() const { return view_; }
  int64_t total() const { return total_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  int64_t total_ = 0;
  std::deque<RemovedExecutor> records_;
  std::shared_ptr<const std::vector<RemovedExecutor>> view_ =
      std::make_shared<const std::vector<RemovedExecutor>>();
};

}  // namespace tide::am
