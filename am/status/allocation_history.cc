#include "am/status/allocation_history.h"

#include <algorithm>

#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::am {

AllocationHistory::AllocationHistory(size_t capacity) : capacity_(std::max<size_t>(capacity, 4)) {}

bool AllocationHistory::record(const AllocationPoint& point) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!points_.empty() && points_.back().sameState(point)) return false;
  if (points_.size() >= capacity_) thinOlderHalf();
  points_.push_back(point);
  return true;
}

void AllocationHistory::thinOlderHalf() {
  // Keeps the first point (where the series starts) and every other one after it in the
  // older half; the newer half is untouched. Frees a quarter of the capacity, so the cost is
  // amortised over that many records.
  const size_t half = points_.size() / 2;
  std::deque<AllocationPoint> kept;
  for (size_t i = 0; i < half; i += 2) kept.push_back(points_[i]);
  thinned_ += half - kept.size();
  for (size_t i = half; i < points_.size(); ++i) kept.push_back(points_[i]);
  points_.swap(kept);
}

std::vector<AllocationPoint> AllocationHistory::since(TimeMs afterMs) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto first =
      std::upper_bound(points_.begin(), points_.end(), afterMs,
                       [](TimeMs t, const AllocationPoint& point) { return t < point.atMs; });
  return std::vector<AllocationPoint>(first, points_.end());
}

size_t AllocationHistory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_.size();
}

uint64_t AllocationHistory::thinned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return thinned_;
}

namespace {

// One table drives the point's writer and its reader (the history a replayed event log shows).
const rest::JsonFields<AllocationPoint>& allocationPointFields() {
  using P = AllocationPoint;
  static const rest::JsonFields<P> fields = rest::JsonFields<P>()
                                                .required("atMs", &P::atMs)
                                                .required("target", &P::target)
                                                .required("live", &P::live)
                                                .required("busy", &P::busy)
                                                .required("pendingExecutors", &P::pendingExecutors)
                                                .required("pendingTasks", &P::pendingTasks)
                                                .required("runningTasks", &P::runningTasks)
                                                .required("min", &P::minExecutors)
                                                .required("max", &P::maxExecutors);
  return fields;
}

}  // namespace

void writeAllocationPoint(rest::JsonWriter& w, const AllocationPoint& p) {
  allocationPointFields().write(w, p);
}

AllocationPoint allocationPointFromJson(const rapidjson::Value& json) {
  return allocationPointFields().read(rest::JsonObjectReader(json));
}

std::string allocationHistoryDocument(TimeMs nowMs, const AllocationHistory& history,
                                      TimeMs sinceMs, const std::string& note) {
  const std::vector<AllocationPoint> points = history.since(sinceMs);
  rest::JsonWriter w;
  w.startObject()
      .field("nowMs", nowMs)
      .field("capacity", history.capacity())
      .field("thinned", history.thinned());
  if (!note.empty()) w.field("note", note);
  w.key("points").startArray();
  for (const auto& point : points) writeAllocationPoint(w, point);
  w.endArray().endObject();
  return w.str();
}

}  // namespace tide::am
