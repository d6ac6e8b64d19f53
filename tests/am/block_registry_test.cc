// Where task outputs are: registration, loss with an executor, bytes by place.

#include "am/scheduler/block_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tide::am {
namespace {

using ::testing::ElementsAre;

MapOutput output(const std::string& executor, const std::string& node,
                 std::vector<rest::BlockOutput> blocks) {
  return MapOutput{executor, node, std::move(blocks)};
}

TEST(BlockRegistryTest, RegistersOutputsAndReportsWhatIsMissing) {
  BlockRegistry registry;
  registry.registerOutput("job-1/map", 3, 0, output("e1", "n1", {{1, 10}, {0, 5}}));
  registry.registerOutput("job-1/map", 3, 2, output("e2", "n2", {{0, 7}}));
  EXPECT_TRUE(registry.hasStage("job-1/map"));
  EXPECT_EQ(registry.numTasks("job-1/map"), 3);
  EXPECT_THAT(registry.missingOutputs("job-1/map"), ElementsAre(1));
  ASSERT_NE(registry.output("job-1/map", 0), nullptr);
  // Blocks are kept by partition, whatever order they came in.
  EXPECT_EQ(registry.output("job-1/map", 0)->partitionSize(0), 5);
  EXPECT_EQ(registry.output("job-1/map", 0)->partitionSize(1), 10);
  EXPECT_EQ(registry.output("job-1/map", 0)->partitionSize(2), std::nullopt);
  EXPECT_EQ(registry.output("job-1/map", 1), nullptr);
  EXPECT_EQ(registry.output("job-1/other", 0), nullptr);
  // Out-of-range indices are ignored.
  registry.registerOutput("job-1/map", 3, 7, output("e1", "n1", {}));
  EXPECT_EQ(registry.numTasks("job-1/map"), 3);
}

// Graceful decommissioning: a migrated output is read from the peer, and leaving the
// decommissioned executor no longer loses it; a copy of an output that was lost or made again
// elsewhere meanwhile is not used.
TEST(BlockRegistryTest, AMigratedOutputMovesToItsPeerAndSurvivesItsFormerHolder) {
  BlockRegistry registry;
  registry.registerOutput("job-1/map", 3, 0, output("e3", "n2", {{0, 5}}));
  registry.registerOutput("job-1/map", 3, 1, output("e3", "n2", {{0, 6}}));
  registry.registerOutput("job-1/map", 3, 2, output("e1", "n1", {{0, 7}}));
  EXPECT_THAT(registry.outputsOn("e3"),
              ElementsAre(std::pair<std::string, int64_t>{"job-1/map", 0},
                          std::pair<std::string, int64_t>{"job-1/map", 1}));
  EXPECT_TRUE(registry.moveOutput("job-1/map", 0, "e3", "e1", "n1"));
  EXPECT_EQ(registry.output("job-1/map", 0)->executorId, "e1");
  EXPECT_EQ(registry.output("job-1/map", 0)->node, "n1");
  EXPECT_EQ(registry.output("job-1/map", 0)->partitionSize(0), 5) << "the sizes go with it";
  EXPECT_FALSE(registry.moveOutput("job-1/map", 2, "e3", "e1", "n1")) << "not on e3";
  EXPECT_FALSE(registry.moveOutput("job-1/other", 0, "e3", "e1", "n1"));
  // e3 leaves with what it still holds: only the output not migrated is lost.
  EXPECT_THAT(registry.removeExecutor("e3")["job-1/map"], ElementsAre(1));
  EXPECT_THAT(registry.missingOutputs("job-1/map"), ElementsAre(1));
  EXPECT_FALSE(registry.moveOutput("job-1/map", 1, "e3", "e1", "n1")) << "lost meanwhile";
}

TEST(BlockRegistryTest, ALostExecutorTakesItsOutputsOfEveryStage) {
  BlockRegistry registry;
  registry.registerOutput("job-1/a", 2, 0, output("e1", "n1", {{0, 1}}));
  registry.registerOutput("job-1/a", 2, 1, output("e2", "n1", {{0, 1}}));
  registry.registerOutput("job-1/b", 1, 0, output("e1", "n1", {{0, 1}}));
  EXPECT_THAT(registry.stagesOn("e1"), ElementsAre("job-1/a", "job-1/b"));
  const auto lost = registry.removeExecutor("e1");
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_THAT(lost.at("job-1/a"), ElementsAre(0));
  EXPECT_THAT(lost.at("job-1/b"), ElementsAre(0));
  EXPECT_THAT(registry.missingOutputs("job-1/a"), ElementsAre(0));
  EXPECT_TRUE(registry.stagesOn("e1").empty());
  // A re-run replaces the lost output.
  registry.registerOutput("job-1/a", 2, 0, output("e3", "n2", {{0, 1}}));
  EXPECT_TRUE(registry.missingOutputs("job-1/a").empty());
}

TEST(BlockRegistryTest, BytesOfAPartitionByExecutorAndNode) {
  BlockRegistry registry;
  registry.registerOutput("s", 3, 0, output("e1", "n1", {{0, 100}, {1, 1}}));
  registry.registerOutput("s", 3, 1, output("e2", "n1", {{0, 50}}));
  registry.registerOutput("s", 3, 2, output("e3", "n2", {{1, 9}}));
  EXPECT_EQ(registry.partitionBytesByExecutor("s", 0),
            (std::map<std::string, int64_t>{{"e1", 100}, {"e2", 50}}));
  EXPECT_EQ(registry.partitionBytesByNode("s", 0), (std::map<std::string, int64_t>{{"n1", 150}}));
  EXPECT_EQ(registry.partitionBytesByNode("s", 1),
            (std::map<std::string, int64_t>{{"n1", 1}, {"n2", 9}}));
}

TEST(BlockRegistryTest, DroppingAStageNamesItsHolders) {
  BlockRegistry registry;
  registry.registerOutput("s", 2, 0, output("e1", "n1", {{0, 1}}));
  registry.registerOutput("s", 2, 1, output("e2", "n1", {{0, 1}}));
  EXPECT_EQ(registry.dropStage("s"), (std::set<std::string>{"e1", "e2"}));
  EXPECT_FALSE(registry.hasStage("s"));
  EXPECT_TRUE(registry.dropStage("s").empty());
}

TEST(BlockRegistryTest, AnOutputWithoutBlocksIsNotLostWithItsExecutor) {
  BlockRegistry registry;
  registry.registerOutput("s", 1, 0, MapOutput{"e1", "n1", {}});
  EXPECT_TRUE(registry.removeExecutor("e1").empty());
  EXPECT_TRUE(registry.missingOutputs("s").empty());
}

// Outputs without blocks are bits, not records: a reader visits only the outputs holding blocks
// and the missing ones, in index order, and the stage still names the executors that wrote it.
TEST(BlockRegistryTest, OutputsWithoutBlocksAreSkippedByReadersButKeepTheirExecutors) {
  BlockRegistry registry;
  const int64_t tasks = 300000;
  for (int64_t i = 0; i < tasks; ++i) {
    if (i == 70000 || i == 250001) continue;  // not run yet
    if (i % 100000 == 5) {
      registry.registerOutput("s", tasks, i, output("e2", "n2", {{0, 8}}));
    } else {
      registry.registerOutput("s", tasks, i, output("e1", "n1", {}));
    }
  }
  std::vector<std::pair<int64_t, bool>> visited;
  registry.forEachInput("s", [&](int64_t index, const MapOutput* out) {
    visited.emplace_back(index, out != nullptr);
  });
  EXPECT_EQ(visited,
            (std::vector<std::pair<int64_t, bool>>{
                {5, true}, {70000, false}, {100005, true}, {200005, true}, {250001, false}}));
  EXPECT_EQ(registry.missingCount("s"), 2);
  EXPECT_THAT(registry.missingOutputs("s"), ElementsAre(70000, 250001));
  ASSERT_NE(registry.output("s", 6), nullptr);
  EXPECT_TRUE(registry.output("s", 6)->blocks.empty());
  EXPECT_EQ(registry.output("s", 70000), nullptr);
  EXPECT_EQ(registry.stageBytes("s"), 24);
  EXPECT_THAT(registry.stageExecutors("s"), ElementsAre("e1", "e2"));
  EXPECT_THAT(registry.stagesOn("e1"), ElementsAre("s"));
  // e1 held no blocks: losing it loses nothing; losing e2 loses exactly its three outputs.
  EXPECT_TRUE(registry.removeExecutor("e1").empty());
  const auto lost = registry.removeExecutor("e2");
  EXPECT_THAT(lost.at("s"), ElementsAre(5, 100005, 200005));
  EXPECT_THAT(registry.missingOutputs("s"), ElementsAre(5, 70000, 100005, 200005, 250001));
}

}  // namespace
}  // namespace tide::am
