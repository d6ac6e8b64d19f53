// The two orderings of active TaskSets, each on its own: FIFO keeps submission order whatever
// the load; FAIR orders pools by FairSchedulingAlgorithm and a pool's sets by its own mode.

#include "am/scheduler/scheduling_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tide::am {
namespace {

using ::testing::ElementsAre;

// The stage ids of `queue.sets` in the order `ordering` offers them slots.
std::vector<std::string> offered(const SchedulingOrder& ordering, const SchedulingQueue& queue) {
  std::vector<std::string> ids;
  for (size_t index : ordering.order(queue)) ids.push_back(queue.sets.at(index).stageId);
  return ids;
}

SchedulingQueue queueOf(std::vector<SchedulableTaskSet> sets) {
  SchedulingQueue queue;
  for (const SchedulableTaskSet& set : sets) queue.runningByPool[set.pool] += set.runningTasks;
  queue.sets = std::move(sets);
  return queue;
}

// Expects `ordering` to name `mode` and to say whether it reads the pools' running tasks.
void expectDescribed(const SchedulingOrder& ordering, SchedulingMode mode, bool readsRunning) {
  EXPECT_EQ(ordering.mode(), mode);
  EXPECT_EQ(ordering.readsRunningTasks(), readsRunning);
}

TEST(FifoSchedulingOrderTest, OffersInSubmissionOrderWhateverTheLoad) {
  const FifoSchedulingOrder fifo;
  const SchedulingQueue queue = queueOf({{"etl", "job-1/a", 50},
                                         {"adhoc", "job-2/a", 0},
                                         {"default", "job-1/b", 7},
                                         {"adhoc", "job-3/a", 1}});
  EXPECT_THAT(offered(fifo, queue), ElementsAre("job-1/a", "job-2/a", "job-1/b", "job-3/a"));
  expectDescribed(fifo, SchedulingMode::kFifo, /*readsRunning=*/false);
  EXPECT_TRUE(fifo.order(SchedulingQueue{}).empty());
}

TEST(FairSchedulingOrderTest, TheLessLoadedPoolGoesFirstAndKeepsItsOwnFifoOrder) {
  const FairSchedulingOrder fair({});
  expectDescribed(fair, SchedulingMode::kFair, /*readsRunning=*/true);
  // "busy" runs 6 tasks, "quiet" 1: quiet's sets come first, each pool's in the order given.
  const SchedulingQueue queue = queueOf({{"busy", "job-1/a", 6},
                                         {"quiet", "job-2/b", 1},
                                         {"busy", "job-1/c", 0},
                                         {"quiet", "job-2/a", 0}});
  EXPECT_THAT(offered(fair, queue), ElementsAre("job-2/b", "job-2/a", "job-1/a", "job-1/c"));
}

TEST(FairSchedulingOrderTest, MinShareAndWeightComeFromThePoolsFile) {
  PoolConfig etl{"etl", SchedulingMode::kFifo, /*weight=*/1, /*minShare=*/4};
  PoolConfig heavy{"heavy", SchedulingMode::kFifo, /*weight=*/4, /*minShare=*/0};
  const FairSchedulingOrder fair({etl, heavy});
  // etl runs 3 < its minShare 4: first although it runs more than "other".
  SchedulingQueue queue = queueOf({{"other", "job-1/a", 2}, {"etl", "job-2/a", 3}});
  EXPECT_THAT(offered(fair, queue), ElementsAre("job-2/a", "job-1/a"));
  // heavy: 4 running at weight 4 (1 per weight) before other's 2 at weight 1.
  queue = queueOf({{"other", "job-1/a", 2}, {"heavy", "job-3/a", 4}});
  EXPECT_THAT(offered(fair, queue), ElementsAre("job-3/a", "job-1/a"));
}

TEST(FairSchedulingOrderTest, AFairPoolOrdersItsSetsByRunningTasksThenStageId) {
  const FairSchedulingOrder fair({PoolConfig{"etl", SchedulingMode::kFair, 1, 0}});
  const SchedulingQueue queue = queueOf(
      {{"etl", "job-1/z", 3}, {"etl", "job-1/y", 1}, {"etl", "job-2/b", 0}, {"etl", "job-2/a", 0}});
  EXPECT_THAT(offered(fair, queue), ElementsAre("job-2/a", "job-2/b", "job-1/y", "job-1/z"));
}

TEST(FairSchedulingOrderTest, RunningTasksOfInactiveStagesCountForTheirPool) {
  const FairSchedulingOrder fair({});
  SchedulingQueue queue = queueOf({{"a", "job-1/s", 0}, {"b", "job-2/s", 0}});
  EXPECT_THAT(offered(fair, queue), ElementsAre("job-1/s", "job-2/s"));  // a tie: by name
  queue.runningByPool["a"] = 5;  // tasks of a finished-launching stage of pool a still run
  EXPECT_THAT(offered(fair, queue), ElementsAre("job-2/s", "job-1/s"));
}

TEST(SchedulingOrderTest, ChosenOnceFromTheMode) {
  EXPECT_EQ(makeSchedulingOrder(SchedulingMode::kFifo, {})->mode(), SchedulingMode::kFifo);
  EXPECT_EQ(makeSchedulingOrder(SchedulingMode::kFair, {})->mode(), SchedulingMode::kFair);
}

}  // namespace
}  // namespace tide::am
