// Graceful decommissioning's bookkeeping: which peer takes which task output, what a failed
// migration does (another peer, then lineage), a peer or the leaving executor dying, and the
// forceKillTimeout bound. Time only moves when a test moves it.

#include "am/scheduler/decommissioner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/config.h"
#include "tests/support/properties.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

OutputToMigrate shuffleOutput(int64_t index, int partitions = 1) {
  OutputToMigrate output;
  output.stageId = "job-1/map";
  output.index = index;
  for (int p = 0; p < partitions; ++p) {
    output.blocks.push_back("job-1/map/" + std::to_string(index) + "/part-" + std::to_string(p));
  }
  return output;
}

// What takeFinished answers when e3's decommissioning, and only it, is over: `finished` when
// every output it was to hand over was, and a why that `why` matches.
::testing::Matcher<std::vector<FinishedDecommission>> onlyE3Over(
    bool finished, ::testing::Matcher<const std::string&> why = ::testing::_) {
  using ::testing::Field;
  return ::testing::ElementsAre(
      ::testing::AllOf(Field("executorId", &FinishedDecommission::executorId, "e3"),
                       Field("finished", &FinishedDecommission::finished, finished),
                       Field("why", &FinishedDecommission::why, why)));
}

class DecommissionerTest : public ::testing::Test {
 protected:
  DecommissionerTest() {
    config.storageEnabled = true;
    config.forceKillTimeout = 60000;
  }
  Decommissioner& decommissioner() {
    if (!decommissioner_) decommissioner_ = std::make_unique<Decommissioner>(config, clock);
    return *decommissioner_;
  }
  // The assignments of whichever of e1 and e2 the round robin gave work first, and which it is.
  std::pair<std::string, std::vector<MigrationAssignment>> takeFromEitherPeer() {
    std::vector<MigrationAssignment> first = decommissioner().takeFor("e1");
    if (!first.empty()) return {"e1", first};
    return {"e2", decommissioner().takeFor("e2")};
  }
  rest::BlockMigrationResult ok(int64_t id) { return {id, true, ""}; }
  rest::BlockMigrationResult failed(int64_t id) { return {id, false, "HTTP 404"}; }

  DecommissionConfig config;
  ManualClock clock{0};

 private:
  std::unique_ptr<Decommissioner> decommissioner_;
};

TEST_F(DecommissionerTest, MigratesEveryOutputToAPeerAndFinishes) {
  const std::string why =
      decommissioner().start("e3", {shuffleOutput(0, 6), shuffleOutput(1, 6)}, {"e1"});
  EXPECT_EQ(why, "e3 decommissioning: migrating 12 shuffle blocks to e1");
  EXPECT_TRUE(decommissioner().isDecommissioning("e3"));
  EXPECT_TRUE(decommissioner().hasWorkFor("e1"));
  const auto assignments = decommissioner().takeFor("e1");
  ASSERT_THAT(assignments, SizeIs(2));
  EXPECT_EQ(assignments[0].fromExecutor, "e3");
  EXPECT_FALSE(decommissioner().hasWorkFor("e1")) << "in flight, not handed out twice";
  EXPECT_THAT(decommissioner().takeFor("e1"), IsEmpty());

  const auto first = decommissioner().onResult("e1", ok(assignments[0].id), {"e1"});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->output.index, 0);
  EXPECT_THAT(decommissioner().takeFinished(), IsEmpty()) << "one output still in flight";
  EXPECT_EQ(decommissioner().progressOf("e3")->blocksMigrated, 6);
  ASSERT_TRUE(decommissioner().onResult("e1", ok(assignments[1].id), {"e1"}));
  EXPECT_THAT(decommissioner().takeFinished(),
              onlyE3Over(true, "e3 decommissioned: 12 shuffle blocks migrated to e1"));
  EXPECT_FALSE(decommissioner().isDecommissioning("e3"));
}

TEST_F(DecommissionerTest, SpreadsOutputsOverPeersRoundRobin) {
  decommissioner().start("e3", {shuffleOutput(0), shuffleOutput(1), shuffleOutput(2)},
                         {"e1", "e2"});
  EXPECT_EQ(decommissioner().takeFor("e1").size() + decommissioner().takeFor("e2").size(), 3u);
  EXPECT_TRUE(decommissioner().takeFor("e1").empty());
}

TEST_F(DecommissionerTest, NothingToMigrateFinishesAtOnce) {
  EXPECT_EQ(decommissioner().start("e3", {}, {"e1"}), "e3 decommissioning: no blocks to migrate");
  EXPECT_THAT(decommissioner().takeFinished(), onlyE3Over(true));
}

// storage.decommission.enabled=false (Spark's default): the executor leaves at once, finished,
// and its outputs are made again from lineage where still needed.
TEST_F(DecommissionerTest, WithoutStorageDecommissioningNothingIsMigrated) {
  config.storageEnabled = false;
  EXPECT_EQ(decommissioner().start("e3", {shuffleOutput(0, 2)}, {"e1"}),
            "e3 decommissioning: 2 blocks not migrated (storage.decommission.enabled=false), made "
            "again from lineage where still needed");
  EXPECT_FALSE(decommissioner().hasWorkFor("e1"));
  EXPECT_THAT(decommissioner().takeFinished(), onlyE3Over(true));
}

TEST_F(DecommissionerTest, ShuffleBlocksStayWhenOnlyCachedBlocksMigrate) {
  config.shuffleBlocks = false;
  OutputToMigrate cached = shuffleOutput(1);
  cached.cached = true;
  EXPECT_THAT(decommissioner().start("e3", {shuffleOutput(0), cached}, {"e1"}),
              HasSubstr("migrating 1 cached block to e1; 1 block not migrated "
                        "(storage.decommission.shuffleBlocks.enabled=false)"));
  EXPECT_THAT(decommissioner().takeFor("e1"), SizeIs(1));
}

TEST_F(DecommissionerTest, NoPeerLeavesItUnfinishedAtOnce) {
  EXPECT_THAT(decommissioner().start("e3", {shuffleOutput(0)}, {}),
              HasSubstr("1 block not migrated (no other executor to take them)"));
  EXPECT_THAT(decommissioner().takeFinished(), onlyE3Over(false));
}

TEST_F(DecommissionerTest, AFailedMigrationGoesToAnotherPeerThenToLineage) {
  config.maxFailuresPerOutput = 2;
  decommissioner().start("e3", {shuffleOutput(0)}, {"e1", "e2"});
  const auto [firstPeer, first] = takeFromEitherPeer();
  ASSERT_THAT(first, SizeIs(1));
  const std::string otherPeer = firstPeer == "e1" ? "e2" : "e1";
  EXPECT_FALSE(decommissioner().onResult(firstPeer, failed(first[0].id), {"e1", "e2"}));
  const auto second = decommissioner().takeFor(otherPeer);
  ASSERT_THAT(second, SizeIs(1)) << "retried on the peer it has not failed on";
  EXPECT_FALSE(decommissioner().onResult(otherPeer, failed(second[0].id), {"e1", "e2"}));
  EXPECT_THAT(decommissioner().takeFinished(),
              onlyE3Over(false, HasSubstr("1 task output not migrated (peer " + otherPeer +
                                          ": HTTP 404), made again from lineage")));
}

TEST_F(DecommissionerTest, APeerThatDiesFailsItsMigrations) {
  decommissioner().start("e3", {shuffleOutput(0)}, {"e1"});
  ASSERT_THAT(decommissioner().takeFor("e1"), SizeIs(1));
  decommissioner().onExecutorGone("e1", {});
  EXPECT_THAT(decommissioner().takeFinished(), onlyE3Over(false, HasSubstr("peer e1 is gone")));
}

TEST_F(DecommissionerTest, TheLeavingExecutorKilledMidMigrationEndsItUnfinished) {
  decommissioner().start("e3", {shuffleOutput(0)}, {"e1"});
  const auto assignments = decommissioner().takeFor("e1");
  decommissioner().onExecutorGone("e3", {"e1"});
  EXPECT_THAT(decommissioner().takeFinished(), onlyE3Over(false));
  // The peer's late report changes nothing: the output went with e3.
  EXPECT_FALSE(decommissioner().onResult("e1", ok(assignments[0].id), {"e1"}));
}

TEST_F(DecommissionerTest, ForceKillTimeoutEndsAMigrationThatHangs) {
  decommissioner().start("e3", {shuffleOutput(0)}, {"e1"});
  ASSERT_THAT(decommissioner().takeFor("e1"), SizeIs(1));
  clock.set(59999);
  EXPECT_THAT(decommissioner().takeFinished(), IsEmpty());
  clock.set(60000);
  EXPECT_THAT(
      decommissioner().takeFinished(),
      onlyE3Over(false, HasSubstr("forced out after 1min (executor.decommission.forceKillTimeout) "
                                  "with 1 task output still migrating")));
}

// storage.decommission.fallbackStorage.path (Spark's FallbackStorage): with no peer at all, the
// leaving executor copies its shuffle output there itself; cached blocks never go there.
TEST_F(DecommissionerTest, WithNoPeerShuffleOutputGoesToTheFallbackStorage) {
  config.fallbackPath = "/shared/fallback";
  OutputToMigrate cached = shuffleOutput(1);
  cached.cached = true;
  EXPECT_EQ(decommissioner().start("e3", {shuffleOutput(0, 2), cached}, {}),
            "e3 decommissioning: migrating 2 shuffle blocks to the fallback storage (no other "
            "executor to take them); 1 block not migrated (no other executor to take them), made "
            "again from lineage where still needed");
  EXPECT_TRUE(decommissioner().hasWorkFor("e3")) << "the leaving executor does the copy";
  const auto copies = decommissioner().takeFor("e3");
  ASSERT_THAT(copies, SizeIs(1));
  EXPECT_TRUE(copies[0].toFallback);
  EXPECT_EQ(copies[0].fromExecutor, "e3");
  EXPECT_EQ(copies[0].output.index, 0) << "the shuffle output, not the cached one";
  EXPECT_THAT(decommissioner().takeFinished(), IsEmpty()) << "the copy is in flight";
  const auto done = decommissioner().onResult("e3", ok(copies[0].id), {});
  ASSERT_TRUE(done);
  EXPECT_TRUE(done->toFallback);
  EXPECT_THAT(
      decommissioner().takeFinished(),
      onlyE3Over(false,
                 HasSubstr("e3 decommissioned: 2 shuffle blocks migrated to the fallback storage")))
      << "the cached output was not migrated";
}

// As Spark's ShuffleMigrationRunnable: a migration to a peer that fails goes to the fallback
// storage at once, not to another peer.
TEST_F(DecommissionerTest, AFailedPeerMigrationGoesToTheFallbackStorage) {
  config.fallbackPath = "/shared/fallback";
  decommissioner().start("e3", {shuffleOutput(0)}, {"e1", "e2"});
  const auto [firstPeer, first] = takeFromEitherPeer();
  ASSERT_THAT(first, SizeIs(1));
  EXPECT_FALSE(first[0].toFallback);
  EXPECT_FALSE(decommissioner().onResult(firstPeer, failed(first[0].id), {"e1", "e2"}));
  EXPECT_FALSE(decommissioner().hasWorkFor("e1"));
  EXPECT_FALSE(decommissioner().hasWorkFor("e2"));
  const auto copies = decommissioner().takeFor("e3");
  ASSERT_THAT(copies, SizeIs(1));
  EXPECT_TRUE(copies[0].toFallback);
  ASSERT_TRUE(decommissioner().onResult("e3", ok(copies[0].id), {"e1", "e2"}));
  EXPECT_THAT(
      decommissioner().takeFinished(),
      onlyE3Over(true, "e3 decommissioned: 1 shuffle block migrated to the fallback storage"));
}

// The only peer dies while its migration is in flight: the output goes to the fallback storage.
TEST_F(DecommissionerTest, APeerThatDiesSendsItsMigrationsToTheFallbackStorage) {
  config.fallbackPath = "/shared/fallback";
  decommissioner().start("e3", {shuffleOutput(0)}, {"e1"});
  ASSERT_THAT(decommissioner().takeFor("e1"), SizeIs(1));
  decommissioner().onExecutorGone("e1", {});
  const auto copies = decommissioner().takeFor("e3");
  ASSERT_THAT(copies, SizeIs(1));
  EXPECT_TRUE(copies[0].toFallback);
  EXPECT_THAT(decommissioner().takeFinished(), IsEmpty());
}

// A copy to the fallback storage that fails leaves the output to lineage: never retried there.
TEST_F(DecommissionerTest, AFailedFallbackCopyLeavesTheOutputToLineage) {
  config.fallbackPath = "/shared/fallback";
  config.maxFailuresPerOutput = 3;
  decommissioner().start("e3", {shuffleOutput(0)}, {});
  const auto copies = decommissioner().takeFor("e3");
  ASSERT_THAT(copies, SizeIs(1));
  const rest::BlockMigrationResult refused{copies[0].id, false,
                                           "cannot create /shared/fallback/app: Not a directory"};
  EXPECT_FALSE(decommissioner().onResult("e3", refused, {}));
  EXPECT_THAT(decommissioner().takeFor("e3"), IsEmpty());
  EXPECT_THAT(
      decommissioner().takeFinished(),
      onlyE3Over(false,
                 HasSubstr("1 task output not migrated (the fallback storage: cannot create "
                           "/shared/fallback/app: Not a directory), made again from lineage")));
}

// The leaving executor dies while it copies: what it held is gone, as without a fallback.
TEST_F(DecommissionerTest, TheLeavingExecutorKilledMidCopyEndsItUnfinished) {
  config.fallbackPath = "/shared/fallback";
  decommissioner().start("e3", {shuffleOutput(0)}, {});
  const auto copies = decommissioner().takeFor("e3");
  ASSERT_THAT(copies, SizeIs(1));
  decommissioner().onExecutorGone("e3", {});
  EXPECT_THAT(decommissioner().takeFinished(), onlyE3Over(false));
  EXPECT_FALSE(decommissioner().onResult("e3", ok(copies[0].id), {}));
}

TEST_F(DecommissionerTest, ReadsTheFallbackStorageKeys) {
  const DecommissionConfig read = DecommissionConfig::fromProperties(testing_support::propertiesOf(
      {{"storage.decommission.fallbackStorage.path", "/shared/fallback/"},
       {"storage.decommission.fallbackStorage.cleanUp", "true"}}));
  EXPECT_EQ(read.fallbackPath, "/shared/fallback") << "Spark's trailing '/' is optional";
  EXPECT_TRUE(read.fallbackCleanUp);
  EXPECT_EQ(DecommissionConfig::fromProperties(testing_support::propertiesOf({})).fallbackPath, "")
      << "none by default, as in Spark";
  try {
    DecommissionConfig::fromProperties(
        testing_support::propertiesOf({{"storage.decommission.fallbackStorage.path", "rel/dir"}}));
    FAIL() << "a relative path was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("storage.decommission.fallbackStorage.path"));
    EXPECT_THAT(e.what(), HasSubstr("must be an absolute path"));
  }
}

TEST_F(DecommissionerTest, ReadsItsKeys) {
  const DecommissionConfig read = DecommissionConfig::fromProperties(
      testing_support::propertiesOf({{"storage.decommission.enabled", "true"},
                                     {"storage.decommission.rddBlocks.enabled", "false"},
                                     {"executor.decommission.forceKillTimeout", "30s"}}));
  EXPECT_TRUE(read.storageEnabled);
  EXPECT_TRUE(read.shuffleBlocks);
  EXPECT_FALSE(read.cachedBlocks);
  EXPECT_EQ(read.maxFailuresPerOutput, 3);
  EXPECT_EQ(read.forceKillTimeout, 30000);
  EXPECT_THROW(DecommissionConfig::fromProperties(testing_support::propertiesOf(
                   {{"storage.decommission.maxReplicationFailuresPerBlock", "0"}})),
               ConfigError);
}

}  // namespace
}  // namespace tide::am
