#include "am/control_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tide::am {
namespace {

TEST(ControlThread, RunsWorkOnItsOwnThreadAndWaitsForIt) {
  ControlThread control;
  std::thread::id ranOn;
  int value = 0;
  control.run([&] {
    ranOn = std::this_thread::get_id();
    value = 42;
  });
  EXPECT_EQ(value, 42);
  EXPECT_NE(ranOn, std::this_thread::get_id());
}

// A refused request (a bad job, bounds out of range) is an exception in the work, which the
// status handler that asked must get with its message.
TEST(ControlThread, TheWorksExceptionIsRethrownToTheCallerWithItsMessage) {
  ControlThread control;
  try {
    control.run([] { throw std::invalid_argument("maxExecutors must be >= minExecutors"); });
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "maxExecutors must be >= minExecutors");
  }
}

// Many status threads at once: each call runs once, and one at a time.
TEST(ControlThread, ConcurrentCallersAreEachServedOnceInTurn) {
  ControlThread control;
  std::atomic<int> inside{0};
  int runs = 0;  // touched only by the control thread, read after every caller is done
  bool overlapped = false;
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&, i] {
      for (int j = 0; j < 50; ++j) {
        try {
          control.run([&] {
            if (++inside > 1) overlapped = true;
            ++runs;
            --inside;
            if ((i + j) % 7 == 0) throw std::runtime_error("refused");
          });
        } catch (const std::runtime_error&) {
        }
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(runs, 400);
  EXPECT_FALSE(overlapped);
}

}  // namespace
}  // namespace tide::am
