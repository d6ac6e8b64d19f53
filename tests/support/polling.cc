#include "tests/support/polling.h"

#include <algorithm>
#include <thread>

namespace tide::testing_support {

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds bound,
                std::chrono::milliseconds every) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    if (condition()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(every, deadline - now));
  }
}

}  // namespace tide::testing_support
