#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace tide {

// Milliseconds on a monotonic time line; only differences mean anything.
using TimeMs = int64_t;
// A duration in milliseconds; kInfiniteMs stands for "never".
using DurationMs = int64_t;
constexpr DurationMs kInfiniteMs = std::numeric_limits<int64_t>::max();

// Adds a duration to a time without overflowing: anything past the end of time is "never".
inline TimeMs addSaturating(TimeMs t, DurationMs d) {
  if (d == kInfiniteMs || t > kInfiniteMs - d) return kInfiniteMs;
  return t + d;
}

// Time is injected everywhere policy runs, so tests and the simulator can drive it.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMs nowMs() const = 0;
};

// A std::chrono clock's now in milliseconds since its epoch.
template <typename ChronoClock>
TimeMs chronoNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             ChronoClock::now().time_since_epoch())
      .count();
}

class SteadyClock final : public Clock {
 public:
  TimeMs nowMs() const override { return chronoNowMs<std::chrono::steady_clock>(); }
};

// Milliseconds since the Unix epoch: for what is compared with files' modification times.
class SystemClock final : public Clock {
 public:
  TimeMs nowMs() const override { return chronoNowMs<std::chrono::system_clock>(); }
};

// A clock that moves only when told to: the simulator's virtual time and the tests' fake.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeMs start = 0) : now_(start) {}
  TimeMs nowMs() const override { return now_.load(); }
  void set(TimeMs t) { now_.store(t); }
  void advance(DurationMs d) { now_.fetch_add(d); }

 private:
  std::atomic<TimeMs> now_;
};

}  // namespace tide
