#include "am/status/decision_log.h"

#include <algorithm>
#include <cstdio>

namespace tide::am {
namespace {

// "850 ms", "2.1 s", "11 s", "4 min 10 s": a run's span, for people.
std::string spanText(DurationMs ms) {
  char text[48];
  if (ms < 1000) {
    std::snprintf(text, sizeof text, "%lld ms", static_cast<long long>(ms));
  } else if (ms < 10000) {
    std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000.0);
  } else if (ms < 59500) {
    std::snprintf(text, sizeof text, "%lld s", static_cast<long long>((ms + 500) / 1000));
  } else {
    const long long seconds = (ms + 500) / 1000;
    std::snprintf(text, sizeof text, "%lld min %lld s", seconds / 60, seconds % 60);
  }
  return text;
}

}  // namespace

std::string DecisionRecord::summary() const {
  if (repeats <= 1 || !key.empty()) return why;  // a state: its reason says how long it held
  const std::string over = " over " + spanText(lastMs - atMs);
  if (action == "lower_target" || action == "raise_target") {
    return std::string(action == "lower_target" ? "lowered" : "raised") + " target " +
           std::to_string(firstTarget) + " \u2192 " + std::to_string(target) + " in " +
           std::to_string(repeats) + " steps" + over;
  }
  return std::to_string(repeats) + "\u00d7" + over + ", last: " + why;
}

void DecisionLog::add(TimeMs now, std::string source, std::string action, int target,
                      std::string why, const std::string& key, int fromTarget) {
  std::lock_guard<std::mutex> lock(mu_);
  auto moveToNewest = [&](std::deque<DecisionRecord>::iterator it) {
    DecisionRecord repeated = std::move(*it);
    records_.erase(it);
    repeated.lastMs = now;
    ++repeated.repeats;
    repeated.why = std::move(why);
    repeated.target = target;
    records_.push_back(std::move(repeated));
  };
  if (!key.empty()) {
    const size_t window = std::min(records_.size(), kRepeatWindow);
    for (size_t back = 1; back <= window; ++back) {
      auto it = records_.end() - static_cast<std::ptrdiff_t>(back);
      if (it->key != key) continue;
      moveToNewest(it);  // a state holding: it ends no run
      return;
    }
  }
  // A run can be open only in the newest event of a source (states are skipped: they move to
  // the newest place as they hold, and end no run).
  const auto lastEvent = std::find_if(records_.rbegin(), records_.rend(), [&](const auto& r) {
    return r.source == source && r.key.empty();
  });
  if (lastEvent != records_.rend()) {
    if (key.empty() && lastEvent->runOpen && lastEvent->action == action) {
      moveToNewest(std::next(lastEvent).base());
      return;
    }
    lastEvent->runOpen = false;  // a new record of another kind from its source ends its run
  }
  DecisionRecord record;
  record.atMs = now;
  record.lastMs = now;
  record.source = std::move(source);
  record.action = std::move(action);
  record.target = target;
  record.why = why;
  record.key = key;
  record.firstTarget = fromTarget >= 0 ? fromTarget : target;
  record.firstWhy = std::move(why);
  record.runOpen = key.empty();
  records_.push_back(std::move(record));
  while (records_.size() > capacity_) records_.pop_front();
}

std::vector<DecisionRecord> DecisionLog::newest(size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DecisionRecord> out;
  for (auto it = records_.rbegin(); it != records_.rend() && out.size() < limit; ++it) {
    out.push_back(*it);
  }
  return out;
}

size_t DecisionLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

}  // namespace tide::am
