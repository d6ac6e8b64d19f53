// Graceful decommissioning end to end (issue 13): real tide-rm, tide-nm, tide-am and
// tide-executor processes on 127.0.0.1. An idle executor holding shuffle output of a running
// job is decommissioned (shuffle tracking off, as Spark allows with shuffle block migration):
// its blocks go to the other executor, the reduce stage reads them there and no map task runs
// again; and without storage decommissioning the map output is made again from lineage and the
// job still succeeds. Every wait is bounded polling.

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "am_cluster_test.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;
namespace fs = std::filesystem;

// Two map tasks (one per executor: each sleeps long enough for both executors to have started)
// write their index; "slow" keeps one executor busy while the other idles with its map output;
// only then does "reduce" read the map output, into the job's output.
std::string decommissionJob(const std::string& output) {
  return R"({"name": "decommission", "output": ")" + output + R"(", "stages": [
      {"id": "map", "tasks": 2,
       "command": ["sh", "-c", "sleep 1.5; echo $TIDE_TASK_INDEX > $TIDE_OUTPUT_DIR/part-0"]},
      {"id": "slow", "depends_on": ["map"], "tasks": 1, "command": ["sh", "-c", "sleep 6"]},
      {"id": "reduce", "depends_on": ["map", "slow"], "tasks": 1,
       "command": ["sh", "-c", "cat $TIDE_INPUT_DIR/map/* | sort > $TIDE_OUTPUT_DIR/part-0"]}]})";
}

class DecommissionIntegrationTest : public testing_support::AmClusterTest {
 protected:
  // Starts the cluster and submits the job `jobWritingTo` makes (writing to `output`) with 2
  // executors that idle out after 1 s, shuffle tracking off and decommissioning on, storage
  // decommissioning as given; then `more` of the test's own.
  void startDecommissioning(std::string (*jobWritingTo)(const std::string&),
                            bool storageDecommission, Conf more = {}) {
    startCluster();
    output = dir.path() / "out";
    Conf conf = {{"dynamicAllocation.maxExecutors", "2"},
                 {"dynamicAllocation.initialExecutors", "2"},
                 {"dynamicAllocation.minExecutors", "0"},
                 {"dynamicAllocation.executorIdleTimeout", "1s"},
                 {"dynamicAllocation.shuffleTracking.enabled", "false"},
                 {"decommission.enabled", "true"},
                 {"storage.decommission.enabled", storageDecommission ? "true" : "false"}};
    conf.insert(conf.end(), more.begin(), more.end());
    submit(jobWritingTo(output.string()), conf, /*session=*/true);
  }

  // Starts the job (see runJob) without waiting for it.
  void startJob(bool storageDecommission) {
    startDecommissioning(decommissionJob, storageDecommission);
  }

  // Runs the job with 2 executors that idle out after 1 s, shuffle tracking off and
  // decommissioning on; storage decommissioning as given. The job must succeed.
  void runJob(bool storageDecommission) {
    startJob(storageDecommission);
    ASSERT_TRUE(jobEnds("job-1", 90s));
    ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << job("job-1")["message"].GetString();
  }

  // Job-1's map stage ran once, `succeeded` tasks without a failed attempt, and no fetch of
  // its output failed: every block was where the reduce looked for it.
  void expectMapRanOnceAndNoFetchFailed(int64_t succeeded) {
    const rapidjson::Document done = job("job-1");
    const rapidjson::Value* map = stage(done, "map");
    ASSERT_NE(map, nullptr);
    EXPECT_EQ((*map)["reruns"].GetInt(), 0) << "the map stage ran once";
    EXPECT_EQ((*map)["failedAttempts"].GetInt64(), 0);
    EXPECT_EQ((*map)["succeeded"].GetInt64(), succeeded);
    EXPECT_EQ((*stage(done, "reduce"))["failedAttempts"].GetInt64(), 0) << "no fetch failed";
  }

  // The decision log's sentences, newest first.
  std::vector<std::string> decisions() {
    std::vector<std::string> whys;
    const rapidjson::Document doc = am->getJson("api/v1/allocation/decisions?limit=1000");
    for (const auto& d : doc["decisions"].GetArray()) whys.push_back(d["why"].GetString());
    return whys;
  }
  bool decided(const std::string& start, const std::string& part = "") {
    for (const std::string& why : decisions()) {
      if (why.rfind(start, 0) == 0 && why.find(part) != std::string::npos) return true;
    }
    return false;
  }
  // The removed executors' reasons.
  std::vector<std::string> removalReasons() {
    std::vector<std::string> reasons;
    const rapidjson::Document doc = executors();
    for (const auto& e : doc["removed"].GetArray()) reasons.push_back(e["reason"].GetString());
    return reasons;
  }
  // tide_allocation_executors_removed_total{reason=...} in /metrics; -1 when absent.
  double removedTotal(const std::string& reason) {
    const std::string body = am->request("GET", "/metrics").body;
    const std::string series =
        "tide_allocation_executors_removed_total{reason=\"" + reason + "\"} ";
    const size_t at = body.find(series);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + series.size()));
  }

  fs::path output;
};

TEST_F(DecommissionIntegrationTest,
       AnIdleExecutorsShuffleBlocksMoveToItsPeerAndNoMapTaskRunsAgain) {
  runJob(/*storageDecommission=*/true);
  // The reduce read both map outputs, one of them from the executor that took it.
  EXPECT_EQ(testing_support::readFile(output / "part-0"), "0\n1\n");
  expectMapRanOnceAndNoFetchFailed(/*succeeded=*/2);
  // Why, in the decision log: the policy's choice, the migration and its end.
  EXPECT_TRUE(decided("decommissioning e", ": idle for "));
  EXPECT_TRUE(decided("e", " decommissioning: migrating 1 shuffle block to e"));
  EXPECT_TRUE(decided("e", " decommissioned: 1 shuffle block migrated to e"));
  EXPECT_THAT(removalReasons(), ::testing::Contains("decommissioned"));
  // The executor that left during the job (the other may follow once it is over).
  EXPECT_GE(removedTotal("gracefully_decommissioned"), 1);
  EXPECT_EQ(removedTotal("driver_killed"), 0) << "decommissioned, never killed";
  client->kill(appId);
  waitForEnd(30s);
}

TEST_F(DecommissionIntegrationTest, WithoutStorageDecommissioningTheMapOutputIsMadeAgain) {
  runJob(/*storageDecommission=*/false);
  EXPECT_EQ(testing_support::readFile(output / "part-0"), "0\n1\n") << "nothing lost";
  const rapidjson::Document done = job("job-1");
  const rapidjson::Value* map = stage(done, "map");
  ASSERT_NE(map, nullptr);
  // Made again from lineage: once, or more when the executor that re-made it idled out too
  // while "slow" still ran (each time decommissioned without migration, as configured).
  EXPECT_GE((*map)["reruns"].GetInt(), 1) << "the lost map output was made again (lineage)";
  EXPECT_TRUE(decided("e", "not migrated (storage.decommission.enabled=false)"));
  EXPECT_GE(removedTotal("gracefully_decommissioned"), 1) << "it had nothing it was to move";
  client->kill(appId);
  waitForEnd(30s);
}

// The only peer dies (SIGKILL) while it takes the leaving executor's blocks, or just after:
// whatever it and the leaving executor held is made again from lineage, and the job succeeds.
TEST_F(DecommissionIntegrationTest, WhenTheOnlyPeerDiesTheBlocksAreMadeAgainFromLineage) {
  startJob(/*storageDecommission=*/true);
  ASSERT_TRUE(
      eventually([&] { return decided("e", " decommissioning: migrating 1 shuffle block"); }, 30s))
      << "no executor was decommissioned with its map output";
  const std::optional<Executor> peer = waitForBusyExecutor(5s);  // the one running "slow"
  ASSERT_TRUE(peer);
  ASSERT_EQ(::kill(peer->pid, SIGKILL), 0);
  ASSERT_TRUE(jobEnds("job-1", 90s));
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << job("job-1")["message"].GetString();
  EXPECT_EQ(testing_support::readFile(output / "part-0"), "0\n1\n") << "nothing lost";
  const rapidjson::Document done = job("job-1");
  EXPECT_GE((*stage(done, "map"))["reruns"].GetInt(), 1) << "made again from lineage";
  client->kill(appId);
  waitForEnd(30s);
}

// The fallback storage (storage.decommission.fallbackStorage.path): one map task and, beside
// it, a "slow" task on the other executor; the reduce reads the map output once "slow" is done.
std::string fallbackJob(const std::string& output) {
  return R"({"name": "fallback", "output": ")" + output + R"(", "stages": [
      {"id": "map", "tasks": 1,
       "command": ["sh", "-c", "sleep 1.5; echo mapped > $TIDE_OUTPUT_DIR/part-0"]},
      {"id": "slow", "tasks": 1, "command": ["sh", "-c", "sleep 4"]},
      {"id": "reduce", "depends_on": ["map", "slow"], "tasks": 1,
       "command": ["sh", "-c", "cat $TIDE_INPUT_DIR/map/* > $TIDE_OUTPUT_DIR/part-0"]}]})";
}

class FallbackStorageIntegrationTest : public DecommissionIntegrationTest {
 protected:
  // Runs fallbackJob with decommissioning and the fallback storage at `fallbackPath`: once the
  // map task is done, the executor running "slow" (the only peer) is frozen (SIGSTOP), so that
  // the idle map executor's migration to it never ends and it is lost after network.timeout;
  // its "slow" task runs again on a new executor.
  void runWithTheOnlyPeerGone(const fs::path& fallbackPath) {
    startDecommissioning(fallbackJob, /*storageDecommission=*/true,
                         {{"network.timeout", "3s"},
                          {"storage.decommission.fallbackStorage.path", fallbackPath.string()}});
    ASSERT_TRUE(eventually(
        [&] {
          try {
            const rapidjson::Document doc = job("job-1");
            const rapidjson::Value* map = stage(doc, "map");
            return map != nullptr && (*map)["succeeded"].GetInt64() == 1;
          } catch (const rest::HttpError&) {
            return false;  // not submitted yet
          }
        },
        30s))
        << "the map task did not finish";
    // The executor list may lag the job's: wait until it shows the map executor idle too.
    pid_t peer = 0;
    ASSERT_TRUE(eventually(
        [&] {
          const rapidjson::Document listed = executors();
          int idle = 0;
          pid_t busy = 0;
          for (const auto& e : listed["executors"].GetArray()) {
            if (e["pid"].GetInt64() <= 0) return false;
            if (e["runningTasks"].GetInt() > 0) {
              busy = static_cast<pid_t>(e["pid"].GetInt64());
            } else {
              ++idle;
            }
          }
          peer = busy;
          return busy != 0 && idle == 1;
        },
        5s))
        << "no executor runs \"slow\" beside the idle map executor";
    ASSERT_EQ(::kill(peer, SIGSTOP), 0);
    ASSERT_TRUE(jobEnds("job-1", 90s));
    ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << job("job-1")["message"].GetString();
    EXPECT_EQ(testing_support::readFile(output / "part-0"), "mapped\n") << "nothing lost";
  }
};

TEST_F(FallbackStorageIntegrationTest, WithTheOnlyPeerGoneTheReduceReadsTheFallbackStorage) {
  const fs::path fallback = dir.path() / "fallback";
  runWithTheOnlyPeerGone(fallback);
  expectMapRanOnceAndNoFetchFailed(/*succeeded=*/1);
  const rapidjson::Document done = job("job-1");
  EXPECT_GE((*stage(done, "slow"))["failedAttempts"].GetInt64(), 1) << "its executor was lost";
  EXPECT_TRUE(decided("e", " decommissioned: 1 shuffle block migrated to the fallback storage"));
  // Spark's layout: <path>/<application id>/..., here the block path under it.
  EXPECT_EQ(testing_support::readFile(fallback / appId / "job-1/map/0/part-0"), "mapped\n");
  client->kill(appId);
  waitForEnd(30s);
}

// The fallback storage cannot be written (its path is a file): the output is made again from
// lineage, and the job still succeeds.
TEST_F(FallbackStorageIntegrationTest, AFailedCopyToTheFallbackStorageFallsBackToLineage) {
  const fs::path notADirectory = dir.writeFile("not-a-directory", "x");
  runWithTheOnlyPeerGone(notADirectory);
  const rapidjson::Document done = job("job-1");
  EXPECT_GE((*stage(done, "map"))["reruns"].GetInt(), 1) << "made again from lineage";
  EXPECT_TRUE(decided("e", "not migrated (the fallback storage: cannot create"))
      << ::testing::PrintToString(decisions());
  client->kill(appId);
  waitForEnd(30s);
}

// An executor asked to leave (SIGPWR, as Spark's executors take it) while it holds queued tasks
// (pipelining, scheduler.queuedTasksPerExecutor): it starts none of them, hands them back and
// they run on the other executor; the task it was running finishes there first. Every task
// runs exactly once: each appends its index to one file.
TEST_F(DecommissionIntegrationTest, ADecommissioningExecutorHandsBackItsQueuedTasks) {
  startCluster();
  const fs::path ran = dir.path() / "ran.txt";
  submit(R"({"name": "queued", "stages": [{"id": "work", "tasks": 10, "command": ["sh", "-c",
         "echo $TIDE_TASK_INDEX >> )" +
             ran.string() + R"(; sleep 3"]}]})",
         {{"dynamicAllocation.maxExecutors", "2"},
          {"dynamicAllocation.initialExecutors", "2"},
          {"dynamicAllocation.minExecutors", "0"},
          {"dynamicAllocation.executorIdleTimeout", "60s"},
          {"scheduler.queuedTasksPerExecutor", "4"},
          {"scheduler.queuedTaskWait", "60s"},  // 3 s tasks are short enough to queue
          {"decommission.enabled", "true"}},
         /*session=*/true);
  // Queued tasks count as running in the status (the executors list counts started ones): more
  // running than the two slots means both executors hold queued tasks (each sync refills them).
  ASSERT_TRUE(eventually(
      [&] {
        const rapidjson::Document status = am->getJson("api/v1/status");
        return status["tasks"]["running"].GetInt64() > 2;
      },
      30s))
      << "no executor got queued tasks";
  const std::optional<Executor> busy = waitForBusyExecutor(5s);
  ASSERT_TRUE(busy);
  const std::string leaving = busy->id;
  const pid_t pid = busy->pid;
  ASSERT_EQ(::kill(pid, SIGPWR), 0);
  ASSERT_TRUE(jobEnds("job-1", 90s));
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << job("job-1")["message"].GetString();
  EXPECT_TRUE(decided("decommissioning " + leaving, ": asked to leave (SIGPWR)"));
  EXPECT_TRUE(decided(leaving + " decommissioning: asking back ", " not started"))
      << ::testing::PrintToString(decisions());
  EXPECT_TRUE(decided(leaving + " handed back ", " unstarted (decommissioning)"))
      << ::testing::PrintToString(decisions());
  // Exactly once each: none lost, none run on both executors.
  std::vector<std::string> lines;
  std::istringstream in(testing_support::readFile(ran));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  const rapidjson::Document done = job("job-1");
  EXPECT_EQ((*stage(done, "work"))["failedAttempts"].GetInt64(), 0) << "nothing killed";
  EXPECT_TRUE(eventually(
      [&] {
        const std::vector<std::string> reasons = removalReasons();
        return std::find(reasons.begin(), reasons.end(), "decommissioned") != reasons.end();
      },
      10s))
      << "it left once its running task was done";
  client->kill(appId);
  waitForEnd(30s);
}

}  // namespace
}  // namespace tide::deploy
