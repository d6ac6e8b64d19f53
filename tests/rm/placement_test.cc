// The placement policy alone: Spark's round-robin for AMs and spread-out vs packed executors.

#include "deploy/rm/placement.h"

#include <gtest/gtest.h>

#include <map>

namespace tide::rm {
namespace {

std::map<size_t, int> countPerNode(const std::vector<size_t>& placements) {
  std::map<size_t, int> counts;
  for (size_t node : placements) ++counts[node];
  return counts;
}

TEST(PlacementTest, SpreadOutGivesOneContainerPerNodeInTurn) {
  const std::vector<Resource> free(3, Resource{4096, 4});
  const std::vector<size_t> placed = placeContainers(free, Resource{1024, 1}, 5, true);
  EXPECT_EQ(placed, (std::vector<size_t>{0, 1, 2, 0, 1}));
}

TEST(PlacementTest, PackedFillsANodeBeforeTheNext) {
  const std::vector<Resource> free(3, Resource{4096, 4});
  const std::vector<size_t> placed = placeContainers(free, Resource{1024, 1}, 5, false);
  EXPECT_EQ(placed, (std::vector<size_t>{0, 0, 0, 0, 1}));
}

TEST(PlacementTest, NeverOverCommitsCoresOrMemory) {
  // Node 0 is bound by memory (2 x 1000 MB), node 1 by cores (1), node 2 fits nothing.
  const std::vector<Resource> free{{2500, 16}, {100000, 1}, {500, 8}};
  for (bool spreadOut : {true, false}) {
    const std::vector<size_t> placed = placeContainers(free, Resource{1000, 1}, 100, spreadOut);
    const std::map<size_t, int> counts = countPerNode(placed);
    EXPECT_EQ(counts.at(0), 2);
    EXPECT_EQ(counts.at(1), 1);
    EXPECT_EQ(counts.count(2), 0u);
    EXPECT_EQ(placed.size(), 3u);
  }
}

TEST(PlacementTest, StopsAtTheWantedCount) {
  const std::vector<Resource> free(2, Resource{10000, 10});
  EXPECT_EQ(placeContainers(free, Resource{1, 1}, 3, true).size(), 3u);
  EXPECT_TRUE(placeContainers(free, Resource{1, 1}, 0, true).empty());
}

TEST(PlacementTest, RoundRobinMovesTheCursorPastEveryNodeVisited) {
  std::vector<Resource> free{{1024, 1}, {0, 0}, {1024, 1}, {1024, 1}};
  size_t cursor = 0;
  EXPECT_EQ(placeRoundRobin(free, Resource{512, 1}, cursor), 0u);
  free[0] = Resource{512, 0};
  // Node 1 does not fit: skipped, and the next AM starts after the one that took it.
  EXPECT_EQ(placeRoundRobin(free, Resource{512, 1}, cursor), 2u);
  EXPECT_EQ(placeRoundRobin(free, Resource{512, 1}, cursor), 3u);
  EXPECT_EQ(cursor, 0u);
  // Nothing fits 2 cores: nullopt after one round.
  EXPECT_FALSE(placeRoundRobin(free, Resource{512, 2}, cursor).has_value());
}

TEST(PlacementTest, UsableNodesAreOfferedMostFreeCoresFirstKeepingTiesInOrder) {
  const std::vector<Resource> free{{1, 2}, {1, 8}, {1, 2}, {1, 4}};
  EXPECT_EQ(orderByFreeCoresDescending(free), (std::vector<size_t>{1, 3, 0, 2}));
}

}  // namespace
}  // namespace tide::rm
