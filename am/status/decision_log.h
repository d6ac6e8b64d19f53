#pragma once

// The newest decisions of the AM with their reasons, actions and non-actions alike: the
// answer to "why is it (not) scaling?". Bounded; a decision repeated tick after tick is kept
// once (with how often and until when it held), even when other states repeat in between
// ("not adding: at maxExecutors" and "waiting: containers requested" alternate every tick).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"

namespace tide::am {

struct DecisionRecord {
  TimeMs atMs = 0;    // AM uptime when first made
  TimeMs lastMs = 0;  // when it was last repeated
  int64_t repeats = 1;
  std::string source;  // "allocation" (the policy) or "containers" (the allocator)
  std::string action;  // e.g. "raise_target", "remove", "request", "lost"
  int target = 0;
  std::string why;
  std::string key;  // see DecisionLog::add
};

class DecisionLog {
 public:
  explicit DecisionLog(size_t capacity = 1000) : capacity_(capacity) {}
  // `key` identifies "the same decision" for repeats: e.g. the action and the executor, so
  // "keeping e3: idle for 61s" and "... 62s" count as one. A repeat of one of the last
  // kRepeatWindow records updates it and moves it to the newest place; an empty key is never
  // merged (an event such as a raised target is its own record each time).
  void add(TimeMs now, std::string source, std::string action, int target, std::string why,
           const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!key.empty()) {
      const size_t window = std::min(records_.size(), kRepeatWindow);
      for (size_t back = 1; back <= window; ++back) {
        auto it = records_.end() - static_cast<std::ptrdiff_t>(back);
        if (it->key != key) continue;
        DecisionRecord repeated = std::move(*it);
        records_.erase(it);
        repeated.lastMs = now;
        ++repeated.repeats;
        repeated.why = std::move(why);
        repeated.target = target;
        records_.push_back(std::move(repeated));
        return;
      }
    }
    records_.push_back(
        {now, now, 1, std::move(source), std::move(action), target, std::move(why), key});
    while (records_.size() > capacity_) records_.pop_front();
  }
  static constexpr size_t kRepeatWindow = 8;
  // The newest `limit`, newest first.
  std::vector<DecisionRecord> newest(size_t limit) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<DecisionRecord> out;
    for (auto it = records_.rbegin(); it != records_.rend() && out.size() < limit; ++it) {
      out.push_back(*it);
    }
    return out;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return records_.size();
  }

 private:
  size_t capacity_;
  // Its own lock: the status API reads it without the AM's.
  mutable std::mutex mu_;
  std::deque<DecisionRecord> records_;
};

}  // namespace tide::am
