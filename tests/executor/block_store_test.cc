// The executor's blocks: commit, collect, find, drop, and the HTTP server/fetcher between
// executors (real sockets on loopback; retries without sleeping).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <fstream>
#include <sstream>

#include "executor/block_fetcher.h"
#include "executor/block_migrator.h"
#include "executor/block_server.h"
#include "executor/block_store.h"
#include "tests/support/files.h"
#include "tests/support/sockets.h"
#include "tests/support/temp_dir.h"

namespace tide::executor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing_support::readFile;
using testing_support::writeFile;

TEST(BlockStoreTest, CommitKeepsPartFilesAsBlocks) {
  testing_support::TempDir dir;
  BlockStore store(dir.path() / "blocks");
  const fs::path output = dir.path() / "task" / "output";
  writeFile(output / "part-2", "cc");
  writeFile(output / "part-0", "a");
  writeFile(output / "notes.txt", "not a block");
  writeFile(output / "part-x", "not a block either");
  const auto blocks = store.commit("job-1", "map", 3, output);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].partition, 0);
  EXPECT_EQ(blocks[0].size, 1);
  EXPECT_EQ(blocks[1].partition, 2);
  EXPECT_EQ(blocks[1].size, 2);
  ASSERT_TRUE(store.find("job-1/map/3/part-2"));
  EXPECT_EQ(readFile(*store.find("job-1/map/3/part-2")), "cc");
  EXPECT_FALSE(fs::exists(output)) << "moved, not copied";
  // A re-run replaces the earlier attempt's blocks.
  writeFile(output / "part-1", "new");
  const auto again = store.commit("job-1", "map", 3, output);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_FALSE(store.find("job-1/map/3/part-2"));
  EXPECT_TRUE(store.find("job-1/map/3/part-1"));
  // A task that wrote nothing has no blocks.
  EXPECT_TRUE(store.commit("job-1", "map", 4, dir.path() / "missing").empty());
}

TEST(BlockStoreTest, HoldsBlocksOnlyWithAPartFile) {
  testing_support::TempDir dir;
  const std::filesystem::path output = dir.path() / "output";
  EXPECT_FALSE(BlockStore::holdsBlocks(output)) << "no directory";
  std::filesystem::create_directories(output / "part-1");  // a directory is not a block
  std::ofstream(output / "notes.txt") << "x";
  EXPECT_FALSE(BlockStore::holdsBlocks(output));
  std::ofstream(output / "part-0") << "";
  EXPECT_TRUE(BlockStore::holdsBlocks(output)) << "even an empty part file is a block";
}

TEST(BlockStoreTest, FindRefusesPathsOutsideTheStore) {
  testing_support::TempDir dir;
  BlockStore store(dir.path() / "blocks");
  writeFile(dir.path() / "secret", "x");
  EXPECT_FALSE(store.find("../secret"));
  EXPECT_FALSE(store.find("/etc/passwd"));
  EXPECT_FALSE(store.find("a//b"));
  EXPECT_FALSE(store.find("a/./b"));
  EXPECT_FALSE(store.drop("../.."));
  EXPECT_TRUE(BlockStore::isPlainRelativePath("job-1/map/0/part-1"));
  EXPECT_EQ(BlockStore::partitionOf("part-17"), 17);
  EXPECT_EQ(BlockStore::partitionOf("part-"), std::nullopt);
  EXPECT_EQ(BlockStore::partitionOf("part-1a"), std::nullopt);
}

TEST(BlockStoreTest, CollectNamesPartsByTaskAndDropDeletesAStage) {
  testing_support::TempDir dir;
  BlockStore store(dir.path() / "blocks");
  writeFile(dir.path() / "o1" / "part-0", "single");
  const auto single = store.commit("job-1", "reduce", 4, dir.path() / "o1");
  writeFile(dir.path() / "o2" / "part-0", "zero");
  writeFile(dir.path() / "o2" / "part-1", "one");
  const auto many = store.commit("job-1", "reduce", 5, dir.path() / "o2");
  const fs::path out = dir.path() / "out";
  store.collect("job-1", "reduce", 4, single, out);
  store.collect("job-1", "reduce", 5, many, out);
  EXPECT_EQ(readFile(out / "part-4"), "single");
  EXPECT_EQ(readFile(out / "part-5-0"), "zero");
  EXPECT_EQ(readFile(out / "part-5-1"), "one");
  EXPECT_TRUE(store.drop("job-1/reduce"));
  EXPECT_FALSE(store.find("job-1/reduce/4/part-0"));
  EXPECT_EQ(readFile(out / "part-4"), "single") << "collected output stays";
}

class BlockTransferTest : public ::testing::Test {
 protected:
  BlockTransferTest()
      : holderStore_(dir_.path() / "holder"),
        readerStore_(dir_.path() / "reader"),
        server_(holderStore_, "s3cret", "127.0.0.1") {}

  void SetUp() override {
    port_ = server_.start();
    writeFile(dir_.path() / "out" / "part-1", "remote bytes");
    holderStore_.commit("job-1", "map", 0, dir_.path() / "out");
    writeFile(dir_.path() / "out2" / "part-1", "local bytes");
    readerStore_.commit("job-1", "map", 1, dir_.path() / "out2");
  }

  BlockFetcher fetcher(std::string secret = "s3cret") {
    BlockFetcherOptions options;
    options.executorId = "reader";
    options.appSecret = std::move(secret);
    options.maxAttempts = 3;
    options.sleep = [this](std::chrono::milliseconds delay) { sleeps_.push_back(delay.count()); };
    return BlockFetcher(readerStore_, options);
  }

  rest::BlockInput input(const std::string& executor, int64_t map, std::string url = "") {
    rest::BlockInput in;
    in.stageId = "map";
    in.mapIndex = map;
    in.executorId = executor;
    in.url = url.empty() ? "http://127.0.0.1:" + std::to_string(port_) : url;
    in.path = "job-1/map/" + std::to_string(map) + "/part-1";
    return in;
  }

  testing_support::TempDir dir_;
  BlockStore holderStore_;
  BlockStore readerStore_;
  BlockServer server_;
  int port_ = 0;
  std::vector<int64_t> sleeps_;
};

TEST_F(BlockTransferTest, RemoteBlocksAreFetchedAndLocalOnesHardLinked) {
  const fs::path inputDir = dir_.path() / "task" / "input";
  auto failure = fetcher().fetchAll({input("holder", 0), input("reader", 1)}, inputDir);
  ASSERT_FALSE(failure) << failure->reason;
  EXPECT_EQ(readFile(inputDir / "map" / "part-0"), "remote bytes");
  EXPECT_EQ(readFile(inputDir / "map" / "part-1"), "local bytes");
  struct stat linked {};
  ASSERT_EQ(::stat((inputDir / "map" / "part-1").c_str(), &linked), 0);
  EXPECT_EQ(linked.st_nlink, 2u) << "a local block is linked, not copied";
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(BlockTransferTest, AMissingBlockFailsAtOnceAndAnUnreachableHolderAfterRetries) {
  const fs::path inputDir = dir_.path() / "task" / "input";
  auto missing = fetcher().fetchAll({input("holder", 7)}, inputDir);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->input.mapIndex, 7);
  EXPECT_THAT(missing->reason, HasSubstr("404"));
  EXPECT_TRUE(sleeps_.empty()) << "a 404 is not retried";

  server_.stop();
  auto unreachable = fetcher().fetchAll({input("holder", 0)}, inputDir);
  ASSERT_TRUE(unreachable);
  EXPECT_THAT(unreachable->reason, HasSubstr("after 3 attempts"));
  EXPECT_EQ(sleeps_, (std::vector<int64_t>{200, 400})) << "backoff doubles";

  auto gone = fetcher().fetchAll({input("lost", 0, "")}, inputDir);
  ASSERT_TRUE(gone);
}

TEST_F(BlockTransferTest, TheServerWantsTheApplicationSecret) {
  auto refused = fetcher("wrong").fetchAll({input("holder", 0)}, dir_.path() / "in");
  ASSERT_TRUE(refused);
  EXPECT_THAT(refused->reason, HasSubstr("401"));
}

// Another loopback address reaches every socket bound to 0.0.0.0 but not one bound to
// 127.0.0.1: the block server listens only on the host it is given.
TEST_F(BlockTransferTest, TheServerListensOnlyOnItsConfiguredHost) {
  const int connected = testing_support::connectTcp("127.0.0.2", port_);
  const int error = errno;
  if (connected >= 0) ::close(connected);
  EXPECT_EQ(connected, -1);
  EXPECT_EQ(error, ECONNREFUSED);
  auto fetched = fetcher().fetchAll({input("holder", 0)}, dir_.path() / "in");
  EXPECT_FALSE(fetched) << "still served on 127.0.0.1";
}

// Graceful decommissioning: a peer takes a leaving executor's task output, which it then holds
// under the same block path (and serves and reports as its own); a migration that cannot fetch
// every block keeps none of them.
TEST_F(BlockTransferTest, AMigrationKeepsTheLeavingExecutorsBlocksUnderTheirPaths) {
  const BlockFetcher reader = fetcher();
  BlockMigrator migrator(readerStore_, reader);
  rest::BlockMigration migration;
  migration.id = 7;
  migration.fromExecutor = "holder";
  migration.url = "http://127.0.0.1:" + std::to_string(port_);
  migration.blocks = {"job-1/map/0/part-1"};
  const rest::BlockMigrationResult done = migrator.migrate(migration);
  EXPECT_EQ(done.id, 7);
  EXPECT_TRUE(done.ok) << done.reason;
  ASSERT_TRUE(readerStore_.find("job-1/map/0/part-1"));
  EXPECT_EQ(readFile(*readerStore_.find("job-1/map/0/part-1")), "remote bytes");
  EXPECT_THAT(readerStore_.heldBlocks(), ::testing::Contains("job-1/map/0/part-1"));

  migration.id = 8;
  migration.blocks = {"job-1/map/0/part-1", "job-1/map/5/part-0"};
  const rest::BlockMigrationResult failed = migrator.migrate(migration);
  EXPECT_FALSE(failed.ok);
  EXPECT_THAT(failed.reason, HasSubstr("404"));
  EXPECT_FALSE(readerStore_.find("job-1/map/5/part-0"));
  for (const auto& entry : fs::directory_iterator(readerStore_.root())) {
    EXPECT_EQ(entry.path().filename().string().rfind(".migrating", 0), std::string::npos)
        << "scratch left behind: " << entry.path();
  }
  EXPECT_THROW(readerStore_.adopt("../escape/part-0", dir_.path() / "x"), std::invalid_argument);
}

TEST_F(BlockTransferTest, AHolderWithoutAnAddressIsAFailure) {
  rest::BlockInput orphan = input("e9", 0);
  orphan.url = "";
  auto failure = fetcher().fetchAll({orphan}, dir_.path() / "in");
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->reason, HasSubstr("gone"));
}

}  // namespace
}  // namespace tide::executor
