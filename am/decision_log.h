#pragma once

// The newest decisions of the AM with their reasons, actions and non-actions alike: the
// answer to "why is it (not) scaling?". Bounded; a decision repeated tick after tick is kept
// once (with how often and until when it held).

#include <cstdint>
#include <deque>
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
};

class DecisionLog {
 public:
  explicit DecisionLog(size_t capacity = 1000) : capacity_(capacity) {}
  // `key` identifies "the same decision" for repeats: e.g. the action and the executor, so
  // "keeping e3: idle for 61s" and "... 62s" count as one.
  void add(TimeMs now, std::string source, std::string action, int target, std::string why,
           const std::string& key) {
    if (!records_.empty() && lastKey_ == key) {
      DecisionRecord& last = records_.back();
      last.lastMs = now;
      ++last.repeats;
      last.why = std::move(why);
      last.target = target;
      return;
    }
    records_.push_back({now, now, 1, std::move(source), std::move(action), target, std::move(why)});
    lastKey_ = key;
    while (records_.size() > capacity_) records_.pop_front();
  }
  // The newest `limit`, newest first.
  std::vector<DecisionRecord> newest(size_t limit) const {
    std::vector<DecisionRecord> out;
    for (auto it = records_.rbegin(); it != records_.rend() && out.size() < limit; ++it) {
      out.push_back(*it);
    }
    return out;
  }
  size_t size() const { return records_.size(); }

 private:
  size_t capacity_;
  std::deque<DecisionRecord> records_;
  std::string lastKey_;
};

}  // namespace tide::am
