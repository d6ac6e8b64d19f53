#pragma once

// The time series behind the status page's chart (GET /api/v1/allocation/history): target,
// live, busy and pending executors, pending and running tasks and the bounds, one point per
// change, recorded by the allocation loop. Bounded: when full, the older half is thinned to
// every other point, so a long run keeps its whole shape at a coarser grain and the recent
// past stays exact. Has its own mutex: reading it never waits for the AM's.
//
// The AM's takes its memory whole when made (470 KiB at the default capacity) and thins in
// place: while a stage runs a point arrives every tick, and a history that grew as it filled made
// the AM's resident size climb for the ~1,000 s it took to fill (bench/README.md, "Scale"). A
// replayed log's (`tide history` holds one per application it lists) grows with what it read.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <rapidjson/fwd.h>

#include "common/clock.h"

namespace tide::rest {
class JsonWriter;
}

namespace tide::am {

struct AllocationPoint {
  TimeMs atMs = 0;  // AM uptime
  int target = 0;
  int live = 0;
  int busy = 0;
  int pendingExecutors = 0;  // requested or starting
  int64_t pendingTasks = 0;
  int64_t runningTasks = 0;
  int minExecutors = 0;
  int maxExecutors = 0;

  // Everything but the time.
  bool sameState(const AllocationPoint& other) const {
    return target == other.target && live == other.live && busy == other.busy &&
           pendingExecutors == other.pendingExecutors && pendingTasks == other.pendingTasks &&
           runningTasks == other.runningTasks && minExecutors == other.minExecutors &&
           maxExecutors == other.maxExecutors;
  }
};

enum class HistoryMemory {
  kWhole,      // all of the capacity, allocated and touched at construction
  kAsItFills,  // grown (doubling, up to the capacity) as points arrive
};

class AllocationHistory {
 public:
  static constexpr size_t kDefaultCapacity = 10000;
  explicit AllocationHistory(size_t capacity = kDefaultCapacity,
                             HistoryMemory memory = HistoryMemory::kAsItFills);

  // Appends the point when its state differs from the last one; returns whether it did.
  bool record(const AllocationPoint& point);
  // Points recorded after `afterMs` (all with afterMs < 0), oldest first.
  std::vector<AllocationPoint> since(TimeMs afterMs) const;
  size_t size() const;
  size_t capacity() const { return capacity_; }
  // Points dropped by thinning over the history's life.
  uint64_t thinned() const;

 private:
  void thinOlderHalf();
  // points_ exactly `length` long (its allocation too), zero points past size_.
  void growTo(size_t length);

  const size_t capacity_;
  mutable std::mutex mu_;
  // The first size_ are the history; never longer than capacity_ (kWhole: always that long).
  std::vector<AllocationPoint> points_;
  size_t size_ = 0;
  uint64_t thinned_ = 0;
};

// GET /api/v1/allocation/history's document, the same for the AM and `tide history`:
// {"nowMs", "capacity", "thinned", ["note",] "points": [...]}, the points after `sinceMs`.
std::string allocationHistoryDocument(TimeMs nowMs, const AllocationHistory& history,
                                      TimeMs sinceMs, const std::string& note);
// One point as that document and the event log (event_log.h) write it, and back; the reader
// throws rest::JsonFieldError naming the field.
void writeAllocationPoint(rest::JsonWriter& w, const AllocationPoint& point);
AllocationPoint allocationPointFromJson(const rapidjson::Value& json);

}  // namespace tide::am
