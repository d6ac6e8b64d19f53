#pragma once

// The fakes' thread-safe reads: what their server threads record, copied under their mutex
// for the test thread.

#include <mutex>

namespace tide::testing_support {

// A copy of `value`, taken while holding `mutex`.
template <typename T>
T lockedCopy(std::mutex& mutex, const T& value) {
  std::lock_guard<std::mutex> lock(mutex);
  return value;
}

}  // namespace tide::testing_support
