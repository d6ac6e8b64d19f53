#pragma once

// The newest decisions of the AM with their reasons, actions and non-actions alike: the
// answer to "why is it (not) scaling?". Bounded, and kept readable when the AM repeats itself:
//  - a state that holds tick after tick (a keyed decision: "not adding: at maxExecutors",
//    "keeping e3") is one record with how often and until when it held, even when other
//    states repeat in between (such states alternate every tick);
//  - a run of events of one kind (an unkeyed decision: the target lowered every tick while a
//    backlog drains) is one record with the run's first and last target, reason and time and
//    its count: "lowered target 137 → 27 in 110 steps over 11 s". A new record of another
//    kind from the same source ends the run. Sources are separate streams: the allocator's
//    request that follows each lowered target is a run of its own and does not split the
//    policy's.

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
  std::string source;    // "allocation" (the policy), "containers" (the allocator), "operator"
  std::string action;    // e.g. "raise_target", "remove", "request", "lost"
  int target = 0;        // the last one's
  std::string why;       // the last one's
  std::string key;       // see DecisionLog::add
  int firstTarget = 0;   // a run's first target (the one before its first change: its from)
  std::string firstWhy;  // a run's first reason
  bool runOpen = false;  // an event whose run later events of its kind may still join

  // One line for the record: its reason, or for a run what the run did, e.g. "lowered target
  // 137 → 27 in 110 steps over 11 s" or "22× over 2.1 s, last: removing e9: idle for 60s".
  std::string summary() const;
};

class DecisionLog {
 public:
  explicit DecisionLog(size_t capacity = 1000) : capacity_(capacity) {}
  // `key` identifies "the same decision" for repeats: e.g. the action and the executor, so
  // "keeping e3: idle for 61s" and "... 62s" count as one. A repeat of one of the last
  // kRepeatWindow records updates it and moves it to the newest place. An empty key makes it
  // an event: it joins the open run of its source's events of the same action, if any (see
  // above), else starts one. `fromTarget`: the target before an event changed it (the run's
  // first value; -1: `target`).
  void add(TimeMs now, std::string source, std::string action, int target, std::string why,
           const std::string& key, int fromTarget = -1);
  static constexpr size_t kRepeatWindow = 8;
  // The newest `limit`, newest first.
  std::vector<DecisionRecord> newest(size_t limit) const;
  size_t size() const;

 private:
  size_t capacity_;
  // Its own lock: the status API reads it without the AM's.
  mutable std::mutex mu_;
  std::deque<DecisionRecord> records_;
};

}  // namespace tide::am
