#include "allocation/allocation_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config.h"

namespace tide::allocation {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Properties fromFile(std::initializer_list<std::pair<const char*, const char*>> entries) {
  Properties props;
  int line = 1;
  for (const auto& [key, value] : entries) props.set(key, value, Origin{"conf/tide.conf", line++});
  return props;
}

std::string errorOf(const Properties& props) {
  try {
    AllocationConfig::fromProperties(props, nullptr);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(AllocationConfigTest, DefaultsAreSparks) {
  std::vector<std::string> warnings;
  AllocationConfig config = AllocationConfig::fromProperties(Properties(), &warnings);
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.bounds.minExecutors, 0);
  EXPECT_EQ(config.bounds.initialExecutors, 0);
  EXPECT_EQ(config.bounds.maxExecutors, INT_MAX);
  EXPECT_EQ(config.schedulerBacklogTimeout, 1000);
  EXPECT_EQ(config.sustainedSchedulerBacklogTimeout, 1000);
  EXPECT_EQ(config.executorIdleTimeout, 60000);
  EXPECT_EQ(config.cachedExecutorIdleTimeout, kInfiniteMs);
  EXPECT_EQ(config.shuffleTrackingTimeout, kInfiniteMs);
  EXPECT_EQ(config.interval, 100);
  EXPECT_EQ(config.tasksPerExecutor(), 1);
  EXPECT_TRUE(warnings.empty());
}

TEST(AllocationConfigTest, BareNumbersTakeSparksUnits) {
  AllocationConfig config =
      AllocationConfig::fromProperties(fromFile({{"dynamicAllocation.executorIdleTimeout", "30"},
                                                 {"dynamicAllocation.schedulerBacklogTimeout", "2"},
                                                 {"dynamicAllocation.interval", "250"}}),
                                       nullptr);
  EXPECT_EQ(config.executorIdleTimeout, 30000) << "seconds";
  EXPECT_EQ(config.schedulerBacklogTimeout, 2000);
  EXPECT_EQ(config.sustainedSchedulerBacklogTimeout, 2000) << "falls back to the backlog timeout";
  EXPECT_EQ(config.interval, 250) << "milliseconds";
}

TEST(AllocationConfigTest, MinAboveMaxNamesBothKeys) {
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.minExecutors", "5"},
                                {"dynamicAllocation.maxExecutors", "2"}})),
              AllOf(HasSubstr("dynamicAllocation.minExecutors"), HasSubstr("5"),
                    HasSubstr("dynamicAllocation.maxExecutors"), HasSubstr("2"),
                    HasSubstr("conf/tide.conf:1"), HasSubstr("conf/tide.conf:2")));
}

// The initial executors of a config whose initial count was adjusted, and the one warning
// saying so (a test failure when there is not exactly one).
struct Adjusted {
  int executors = 0;
  std::string warning;
};
Adjusted adjustedInitial(const Properties& props) {
  std::vector<std::string> warnings;
  const AllocationConfig config = AllocationConfig::fromProperties(props, &warnings);
  EXPECT_EQ(warnings.size(), 1u);
  return {config.bounds.initialExecutors, warnings.empty() ? "" : warnings[0]};
}

// Spark accepts initialExecutors > maxExecutors; tide clips it to max and warns.
TEST(AllocationConfigTest, InitialAboveMaxIsClippedToMaxWithAWarning) {
  const Adjusted initial = adjustedInitial(fromFile(
      {{"dynamicAllocation.initialExecutors", "9"}, {"dynamicAllocation.maxExecutors", "4"}}));
  EXPECT_EQ(initial.executors, 4);
  EXPECT_THAT(initial.warning, AllOf(HasSubstr("dynamicAllocation.initialExecutors"),
                                     HasSubstr("dynamicAllocation.maxExecutors")));
  const Adjusted instances = adjustedInitial(
      fromFile({{"executor.instances", "9"}, {"dynamicAllocation.maxExecutors", "4"}}));
  EXPECT_EQ(instances.executors, 4);
  EXPECT_THAT(instances.warning, HasSubstr("executor.instances"));
}

// Spark: with dynamic allocation off and no executor.instances, 2 executors.
TEST(AllocationConfigTest, StaticAllocationDefaultsToTwoExecutors) {
  AllocationConfig config =
      AllocationConfig::fromProperties(fromFile({{"dynamicAllocation.enabled", "false"}}), nullptr);
  EXPECT_EQ(config.executorInstances, 2);
  config = AllocationConfig::fromProperties(
      fromFile({{"dynamicAllocation.enabled", "false"}, {"executor.instances", "5"}}), nullptr);
  EXPECT_EQ(config.executorInstances, 5);
  config = AllocationConfig::fromProperties(fromFile({}), nullptr);
  EXPECT_EQ(config.bounds.initialExecutors, 0) << "dynamic: unset instances do not raise it";
}

// Spark refuses dynamic allocation with neither shuffle tracking nor a shuffle service; tide
// has no shuffle service, so turning shuffle tracking off with dynamic allocation on is an error.
TEST(AllocationConfigTest, DynamicAllocationWithoutShuffleTrackingIsRefused) {
  EXPECT_THAT(
      errorOf(fromFile({{"dynamicAllocation.shuffleTracking.enabled", "false"}})),
      AllOf(HasSubstr("dynamicAllocation.shuffleTracking.enabled"), HasSubstr("shuffle service")));
  EXPECT_NO_THROW(AllocationConfig::fromProperties(
      fromFile({{"dynamicAllocation.enabled", "false"},
                {"dynamicAllocation.shuffleTracking.enabled", "false"}}),
      nullptr));
}

// Spark's third way (ExecutorAllocationManager.validateSettings): decommissioning with shuffle
// block migration keeps shuffle data without tracking; without the migration it is refused.
TEST(AllocationConfigTest, DecommissioningWithShuffleBlockMigrationStandsInForShuffleTracking) {
  const AllocationConfig config = AllocationConfig::fromProperties(
      fromFile({{"dynamicAllocation.shuffleTracking.enabled", "false"},
                {"decommission.enabled", "true"}}),
      nullptr);
  EXPECT_TRUE(config.decommissionEnabled);
  EXPECT_FALSE(config.shuffleTrackingEnabled);
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.shuffleTracking.enabled", "false"},
                                {"decommission.enabled", "true"},
                                {"storage.decommission.shuffleBlocks.enabled", "false"}})),
              HasSubstr("decommission.enabled=true"));
  EXPECT_FALSE(AllocationConfig::fromProperties(fromFile({}), nullptr).decommissionEnabled)
      << "off by default, as in Spark";
}

TEST(AllocationConfigTest, InitialBelowMinWarnsAndUsesMin) {
  const Adjusted initial = adjustedInitial(fromFile(
      {{"dynamicAllocation.minExecutors", "3"}, {"dynamicAllocation.initialExecutors", "1"}}));
  EXPECT_EQ(initial.executors, 3);
  EXPECT_THAT(initial.warning, HasSubstr("dynamicAllocation.initialExecutors"));
}

TEST(AllocationConfigTest, InitialIsTheLargestOfMinInitialAndInstances) {
  AllocationConfig config = AllocationConfig::fromProperties(
      fromFile({{"dynamicAllocation.minExecutors", "1"}, {"executor.instances", "4"}}), nullptr);
  EXPECT_EQ(config.bounds.initialExecutors, 4);
}

TEST(AllocationConfigTest, OutOfRangeValuesAreErrors) {
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.executorAllocationRatio", "1.5"}})),
              HasSubstr("dynamicAllocation.executorAllocationRatio"));
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.executorAllocationRatio", "0"}})),
              HasSubstr("dynamicAllocation.executorAllocationRatio"));
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.executorIdleTimeout", "-5s"}})),
              HasSubstr("dynamicAllocation.executorIdleTimeout"));
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.minExecutors", "-1"}})),
              HasSubstr("dynamicAllocation.minExecutors"));
  EXPECT_THAT(errorOf(fromFile({{"dynamicAllocation.maxExecutors", "lots"}})),
              AllOf(HasSubstr("dynamicAllocation.maxExecutors"), HasSubstr("lots")));
  EXPECT_THAT(errorOf(fromFile({{"task.cpus", "4"}, {"executor.cores", "2"}})),
              AllOf(HasSubstr("task.cpus"), HasSubstr("executor.cores")));
}

TEST(AllocationConfigTest, SparkPrefixedKeysAreAliases) {
  Properties props;
  props.set("spark.dynamicAllocation.maxExecutors", "7");
  EXPECT_EQ(AllocationConfig::fromProperties(props, nullptr).bounds.maxExecutors, 7);
}

TEST(ChangedBoundsTest, AnInitialNotGivenFollowsTheNewBounds) {
  const Bounds current{0, 6, 10};
  Bounds lowered = changedBounds(current, std::nullopt, std::nullopt, 4);
  EXPECT_EQ(lowered.initialExecutors, 4);
  EXPECT_EQ(validateBounds(lowered, nullptr), "");
  Bounds explicitInitial = changedBounds(current, std::nullopt, 6, 4);
  std::string warning;
  EXPECT_EQ(validateBounds(explicitInitial, &warning), "");
  EXPECT_EQ(warning, "initial=6 is greater than max=4; using max");
  EXPECT_EQ(explicitInitial.initialExecutors, 4);
  Bounds raisedMin = changedBounds(current, 8, std::nullopt, std::nullopt);
  EXPECT_EQ(raisedMin.initialExecutors, 8);
}

}  // namespace
}  // namespace tide::allocation
