#pragma once

// Paces the requests of the status port: at most `perSecond` start per second (after a
// small burst); a request over the rate waits its turn, it is never refused. A status
// reader needs a few requests a second; thousands a second buy nothing and take CPU from the
// job (bench/status_load measures it).

#include <chrono>
#include <mutex>
#include <thread>

namespace tide::am {

class RequestPacer {
 public:
  // perSecond <= 0: no limit.
  explicit RequestPacer(int perSecond, int burst = 50)
      : interval_(perSecond > 0 ? std::chrono::nanoseconds(1000000000LL / perSecond)
                                : std::chrono::nanoseconds(0)),
        burst_(burst) {}

  // Blocks until this request's turn.
  void wait() {
    if (interval_.count() == 0) return;
    const auto now = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point turn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Unused turns of a quiet spell are kept only up to the burst.
      const auto earliest = now - interval_ * burst_;
      if (next_ < earliest) next_ = earliest;
      turn = next_;
      next_ += interval_;
    }
    if (turn > now) std::this_thread::sleep_until(turn);
  }

 private:
  const std::chrono::nanoseconds interval_;
  const int burst_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace tide::am
