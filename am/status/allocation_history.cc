#include "am/status/allocation_history.h"

#include <algorithm>

#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::am {

AllocationHistory::AllocationHistory(size_t capacity, HistoryMemory memory)
    : capacity_(std::max<size_t>(capacity, 4)) {
  if (memory == HistoryMemory::kWhole) growTo(capacity_);
}

void AllocationHistory::growTo(size_t length) {
  // reserve() first: resize() alone may take twice the length, past the capacity.
  points_.reserve(length);
  points_.resize(length);
}

bool AllocationHistory::record(const AllocationPoint& point) {
  std::lock_guard<std::mutex> lock(mu_);
  if (size_ > 0 && points_[size_ - 1].sameState(point)) return false;
  if (size_ >= capacity_) thinOlderHalf();
  if (size_ == points_.size()) growTo(std::min(capacity_, std::max<size_t>(16, 2 * size_)));
  points_[size_++] = point;
  return true;
}

void AllocationHistory::thinOlderHalf() {
  // Keeps the first point (where the series starts) and every other one after it in the
  // older half; the newer half is untouched. Frees a quarter of the capacity, so the cost is
  // amortised over that many records. In place: a point only ever moves to a lower index.
  const size_t half = size_ / 2;
  size_t kept = 0;
  for (size_t i = 0; i < half; i += 2) points_[kept++] = points_[i];
  thinned_ += half - kept;
  for (size_t i = half; i < size_; ++i) points_[kept++] = points_[i];
  size_ = kept;
}

std::vector<AllocationPoint> AllocationHistory::since(TimeMs afterMs) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto end = points_.begin() + static_cast<std::ptrdiff_t>(size_);
  auto first =
      std::upper_bound(points_.begin(), end, afterMs,
                       [](TimeMs t, const AllocationPoint& point) { return t < point.atMs; });
  return std::vector<AllocationPoint>(first, end);
}

size_t AllocationHistory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return size_;
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
