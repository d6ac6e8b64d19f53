// The compact set of task indices: membership like a bitmap, memory by how scattered it is.

#include "am/scheduler/index_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

namespace tide::am {
namespace {

using ::testing::ElementsAre;
using Runs = std::vector<std::pair<int64_t, int64_t>>;

Runs runsOf(const IndexSet& set, bool present) {
  Runs runs;
  const auto add = [&](int64_t first, int64_t last) {
    runs.emplace_back(first, last);
    return true;
  };
  if (present) {
    set.forEachRun(add);
  } else {
    set.forEachAbsentRun(add);
  }
  return runs;
}

TEST(IndexSetTest, InsertEraseAndContainsLikeABitmap) {
  IndexSet set(10);
  EXPECT_EQ(set.size(), 10);
  EXPECT_TRUE(set.empty());
  EXPECT_TRUE(set.insert(3));
  EXPECT_FALSE(set.insert(3)) << "already in";
  EXPECT_TRUE(set.insert(9));
  EXPECT_FALSE(set.insert(10)) << "outside [0, size)";
  EXPECT_FALSE(set.insert(-1));
  EXPECT_TRUE(set.contains(3));
  EXPECT_FALSE(set.contains(4));
  EXPECT_FALSE(set.contains(10));
  EXPECT_EQ(set.count(), 2);
  EXPECT_TRUE(set.erase(3));
  EXPECT_FALSE(set.erase(3));
  EXPECT_EQ(set.count(), 1);
  EXPECT_THAT(set.absent(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(set.absent(2), ElementsAre(0, 1));
}

TEST(IndexSetTest, RunsMergeAcrossChunkBoundaries) {
  const int64_t chunk = IndexSet::kChunkBits;
  IndexSet set(3 * chunk + 5);
  for (int64_t i = chunk - 2; i < 2 * chunk + 3; ++i) set.insert(i);
  EXPECT_EQ(runsOf(set, true), (Runs{{chunk - 2, 2 * chunk + 2}}));
  EXPECT_EQ(runsOf(set, false), (Runs{{0, chunk - 3}, {2 * chunk + 3, 3 * chunk + 4}}));
  set.fill();
  EXPECT_TRUE(set.full());
  EXPECT_EQ(runsOf(set, true), (Runs{{0, 3 * chunk + 4}}));
  EXPECT_TRUE(runsOf(set, false).empty());
  // Taking one index out of a full chunk keeps the rest of it.
  EXPECT_TRUE(set.erase(chunk + 7));
  EXPECT_EQ(runsOf(set, false), (Runs{{chunk + 7, chunk + 7}}));
  EXPECT_EQ(set.count(), 3 * chunk + 4);
  set.clear();
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(runsOf(set, false), (Runs{{0, 3 * chunk + 4}}));
}

TEST(IndexSetTest, AgreesWithAStdSetUnderRandomOperations) {
  const int64_t size = 3 * IndexSet::kChunkBits + 17;
  IndexSet set(size);
  std::set<int64_t> reference;
  std::mt19937_64 random(7);
  for (int step = 0; step < 200000; ++step) {
    // Clustered indices, so that chunks fill up and empty again.
    const int64_t index = static_cast<int64_t>(random() % 2000) + (step / 1000) * 997 % size;
    if (random() % 3 == 0) {
      EXPECT_EQ(set.erase(index), reference.erase(index) == 1);
    } else {
      EXPECT_EQ(set.insert(index), index < size && reference.insert(index).second);
    }
  }
  EXPECT_EQ(set.count(), static_cast<int64_t>(reference.size()));
  Runs expected;
  for (int64_t i : reference) {
    if (!expected.empty() && expected.back().second == i - 1) {
      expected.back().second = i;
    } else {
      expected.emplace_back(i, i);
    }
  }
  EXPECT_EQ(runsOf(set, true), expected);
  const IndexSet copy = set;
  EXPECT_EQ(runsOf(copy, true), expected);
}

TEST(IndexSetTest, MemoryFollowsTheFrontNotTheSize) {
  // A billion indices done in order: full chunks are counters, only the front has a bitmap.
  const int64_t size = 1000000000;
  IndexSet set(size);
  const size_t empty = set.heapBytes();
  EXPECT_LT(empty, 256u * 1024) << "a counter and a pointer per chunk";
  for (int64_t i = 0; i < 10 * IndexSet::kChunkBits + 100; ++i) set.insert(i);
  EXPECT_LE(set.heapBytes(), empty + IndexSet::kChunkBits / 8);
  set.fill();
  EXPECT_EQ(set.heapBytes(), empty);
  EXPECT_TRUE(set.contains(size - 1));
}

}  // namespace
}  // namespace tide::am
