#pragma once

// What the task scheduler's test files share: a fixture that makes the scheduler on first use
// (so a test can change `config` or `seed` before), subscribed by a RecordingListener of the
// kinds the file asserts; task updates; and the scheduler's keys read from a table.

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "am/scheduler/task_scheduler.h"
#include "tests/am/recording_listener.h"
#include "tests/support/properties.h"

namespace tide::am::testing {

class SchedulerFixture : public ::testing::Test {
 protected:
  SchedulerFixture(RecordingListener::Kinds kinds, uint64_t offerSeed)
      : listener{kinds}, seed(offerSeed) {}

  TaskScheduler& scheduler() {
    if (!scheduler_) {
      scheduler_ = std::make_unique<TaskScheduler>(config, clock, seed);
      scheduler_->subscribe(listener);
    }
    return *scheduler_;
  }

  SchedulerConfig config;
  ManualClock clock{1000};
  RecordingListener listener;
  uint64_t seed;  // of the offer shuffle

 private:
  std::unique_ptr<TaskScheduler> scheduler_;
};

// An update of task `taskId` to `state`, with nothing else said.
inline rest::TaskStatusUpdate updateOf(int64_t taskId, rest::TaskState state) {
  rest::TaskStatusUpdate update;
  update.taskId = taskId;
  update.state = state;
  return update;
}

// The scheduler's configuration from properties of these keys and values.
inline SchedulerConfig schedulerConfigOf(
    std::initializer_list<std::pair<std::string_view, std::string>> values) {
  return SchedulerConfig::fromProperties(testing_support::propertiesOf(values));
}

}  // namespace tide::am::testing
