#pragma once

// Shared pieces of the rest tests: a quiet log and a gate that holds a handler until released.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rest/http_client.h"
#include "tests/support/locked.h"
#include "tests/support/polling.h"

namespace tide::rest::testing {

// Collects log lines instead of printing them, so tests can also look at them.
class LogCapture {
 public:
  LogFunction function() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> lines() { return testing_support::lockedCopy(mutex_, lines_); }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// Blocks handler threads until the test opens it; the bound keeps a broken test from hanging.
class Gate {
 public:
  // Returns whether the gate was opened (false when the bound ran out).
  bool waitOpen(std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    return changed_.wait_for(lock, bound, [this] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  int waiting() { return testing_support::lockedCopy(mutex_, waiting_); }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int waiting_ = 0;
};

using testing_support::eventually;

}  // namespace tide::rest::testing
