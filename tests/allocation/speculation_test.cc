// Spark's checkSpeculatableTasks thresholds.

#include "allocation/speculation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tide::allocation {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SpeculationTest, NothingUntilTheQuantileHasSucceeded) {
  const SpeculationConfig config{0.75, 1.5, 100};
  // 10 tasks: floor(7.5) = 7 must have succeeded.
  EXPECT_EQ(speculationThreshold(10, {1000, 1000, 1000, 1000, 1000, 1000}, config), -1);
  EXPECT_EQ(speculationThreshold(10, {1000, 1000, 1000, 1000, 1000, 1000, 1000}, config), 1500);
  // At least one success, even for a single-task stage.
  EXPECT_EQ(speculationThreshold(1, {}, config), -1);
}

TEST(SpeculationTest, ThresholdIsMultiplierTimesTheMedianButAtLeastTheMinimum) {
  const SpeculationConfig config{0.5, 2.0, 100};
  EXPECT_EQ(speculationThreshold(4, {300, 100, 200}, config), 400);  // median 200
  EXPECT_EQ(speculationThreshold(4, {10, 20}, config), 100);         // 2 x 20 < 100
}

TEST(SpeculationTest, TasksRunningLongerThanTheThresholdAreSpeculatable) {
  const SpeculationConfig config{0.5, 1.5, 100};
  const std::vector<DurationMs> done = {1000, 1000};
  const std::vector<RunningCopy> running = {{3, 0}, {2, 600}, {1, 5000}};
  // At 1600: task 3 has run 1600 > 1500; task 2 1000; task 1 not yet started as far as we know.
  EXPECT_THAT(speculatableTasks(4, done, running, 1600, config), ElementsAre(3));
  EXPECT_THAT(speculatableTasks(4, done, running, 2200, config), ElementsAre(2, 3));
  EXPECT_THAT(speculatableTasks(8, done, running, 9000, config), IsEmpty());  // too few done
}

// Spark's speculation.task.duration.threshold: before the quantile is reached, a stage that fits
// on one executor speculates tasks running longer than the threshold.
TEST(SpeculationTest, TaskDurationThresholdAppliesToStagesThatFitOneExecutor) {
  SpeculationConfig config{0.9, 3.0, 100, 5000, 4};
  EXPECT_EQ(speculationThreshold(4, {}, config), 5000);
  EXPECT_EQ(speculationThreshold(5, {}, config), -1) << "more tasks than one executor's slots";
  EXPECT_EQ(speculationThreshold(4, {100, 100, 100, 100}, config), 300) << "quantile reached";
  config.taskDurationThresholdMs = -1;
  EXPECT_EQ(speculationThreshold(4, {}, config), -1);
}

// The median a stage of a million successes speculates from, kept as counts per duration.
TEST(SpeculationTest, TheMedianOfAMillionSuccessesIsExact) {
  DurationCounts durations;
  for (int64_t i = 0; i < 1000000; ++i) durations.add(i % 4 == 0 ? 900 : (i % 4 == 1 ? 10 : 20));
  EXPECT_EQ(durations.size(), 1000000);
  EXPECT_EQ(durations.atRank(0), 10);
  EXPECT_EQ(durations.atRank(499999), 20);
  EXPECT_EQ(durations.atRank(500000), 20);
  EXPECT_EQ(durations.atRank(750000), 900);
  const SpeculationConfig config{0.5, 2.0, 10};
  EXPECT_EQ(speculationThreshold(1000000, durations, config), 40);  // 2 x the median 20
}

}  // namespace
}  // namespace tide::allocation
