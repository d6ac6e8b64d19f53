// FAIR pools: Spark's FairSchedulingAlgorithm order and the two allocation file formats.

#include "am/scheduler/scheduling_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/config.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> order(std::vector<FairShareState> states) {
  std::sort(states.begin(), states.end(), fairSchedulingBefore);
  std::vector<std::string> names;
  for (const auto& state : states) names.push_back(state.name);
  return names;
}

TEST(FairSchedulingTest, APoolBelowItsMinShareGoesFirst) {
  EXPECT_EQ(order({{5, 0, 1, "a"}, {1, 2, 1, "b"}}), (std::vector<std::string>{"b", "a"}));
  // Both needy: the smaller running/minShare first.
  EXPECT_EQ(order({{2, 4, 1, "a"}, {1, 4, 1, "b"}}), (std::vector<std::string>{"b", "a"}));
}

TEST(FairSchedulingTest, OtherwiseFewestRunningTasksPerUnitOfWeight) {
  // 3 running at weight 3 (1 per weight) before 2 at weight 1 (2 per weight).
  EXPECT_EQ(order({{2, 0, 1, "light"}, {3, 0, 3, "heavy"}}),
            (std::vector<std::string>{"heavy", "light"}));
  EXPECT_EQ(order({{1, 0, 1, "light"}, {3, 0, 3, "heavy"}}),
            (std::vector<std::string>{"heavy", "light"}));  // a tie goes by name
  EXPECT_EQ(order({{0, 0, 1, "light"}, {3, 0, 3, "heavy"}}),
            (std::vector<std::string>{"light", "heavy"}));
}

TEST(FairSchedulingTest, WeightsOneAndThreeSettleAtOneToThree) {
  // Hand out 40 slots one by one to whichever pool comes first, as offers do.
  FairShareState light{0, 0, 1, "light"};
  FairShareState heavy{0, 0, 3, "heavy"};
  for (int slot = 0; slot < 40; ++slot) {
    (fairSchedulingBefore(light, heavy) ? light : heavy).runningTasks++;
  }
  EXPECT_EQ(light.runningTasks, 10);
  EXPECT_EQ(heavy.runningTasks, 30);
}

TEST(PoolFileTest, ReadsFairSchedulerXml) {
  const auto pools = parsePoolsXml(R"(<?xml version="1.0"?>
    <allocations>
      <pool name="etl">
        <schedulingMode>FAIR</schedulingMode>
        <weight>3</weight>
        <minShare>2</minShare>
      </pool>
      <pool name="adhoc"><weight>1</weight></pool>
      <pool name="empty"/>
    </allocations>)",
                                   "pools.xml");
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[0].name, "etl");
  EXPECT_EQ(pools[0].mode, SchedulingMode::kFair);
  EXPECT_EQ(pools[0].weight, 3);
  EXPECT_EQ(pools[0].minShare, 2);
  EXPECT_EQ(pools[1].mode, SchedulingMode::kFifo);
  EXPECT_EQ(pools[2].weight, 1);
}

TEST(PoolFileTest, ReadsProperties) {
  const auto pools = parsePoolsProperties(
      "# pools\npool.etl.weight 3\npool.etl.minShare=2\npool.a.b.schedulingMode: FAIR\n", "p");
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].weight, 3);
  EXPECT_EQ(pools[0].minShare, 2);
  EXPECT_EQ(pools[1].name, "a.b");
  EXPECT_EQ(pools[1].mode, SchedulingMode::kFair);
}

TEST(PoolFileTest, ErrorsNameTheFileThePoolAndTheValue) {
  try {
    parsePoolsXml("<allocations><pool name=\"x\"><weight>0</weight></pool></allocations>", "f.xml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("f.xml"));
    EXPECT_THAT(e.what(), HasSubstr("'x'"));
    EXPECT_THAT(e.what(), HasSubstr("'0'"));
  }
  EXPECT_THROW(parsePoolsProperties("pool.x.colour blue\n", "p"), ConfigError);
  EXPECT_THROW(parsePoolsProperties("pool.x.schedulingMode LIFO\n", "p"), ConfigError);
  EXPECT_THROW(loadPoolsFile("/nonexistent/pools.xml"), ConfigError);
}

}  // namespace
}  // namespace tide::am
