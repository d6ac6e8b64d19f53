// Data between stages end to end (issue 6's "must show"): real tide-rm, tide-nm, tide-am and
// tide-executor processes on 127.0.0.1; blocks written by tasks, served and fetched between
// executors, collected into the job's output; cached and shuffle data holding executors;
// lineage after a SIGKILL; locality, FAIR pools and speculation. Every wait is bounded polling.

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "am_cluster_test.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;
namespace fs = std::filesystem;

const std::string kWordcountDir = std::string(TIDE_SOURCE_DIR) + "/examples/wordcount";

// "count word" lines (any padding) as word -> count.
std::map<std::string, int64_t> parseCounts(const std::string& text) {
  std::map<std::string, int64_t> counts;
  std::istringstream lines(text);
  int64_t count = 0;
  std::string word;
  while (lines >> count >> word) counts[word] += count;
  return counts;
}

// What `tr -s ' ' '\n' | sort | uniq -c` says over the example's input.
std::map<std::string, int64_t> referenceCounts(const fs::path& scratch) {
  const std::string command =
      "cat '" + kWordcountDir + "'/input/* | tr -s ' ' '\\n' | sort | uniq -c";
  auto result =
      testing_support::runCommand({"sh", "-c", command}, (scratch / "reference.txt").string(), 30s);
  EXPECT_EQ(result.status, 0);
  return parseCounts(result.output);
}

std::map<std::string, int64_t> collectedCounts(const fs::path& outputDir) {
  std::string all;
  if (!fs::is_directory(outputDir)) return {};
  for (const auto& entry : fs::directory_iterator(outputDir)) {
    if (entry.path().filename().string().rfind("part-", 0) != 0) continue;
    all += testing_support::readFile(entry.path().string());
  }
  return parseCounts(all);
}

// The wordcount job with absolute paths; the reduce tasks sleep `reduceSleep` seconds first.
std::string wordcountJob(const std::string& output, int reduceSleep, bool persist = false) {
  return R"({"name": "wordcount", "output": ")" + output + R"(", "stages": [
      {"id": "words", "tasks": 5, "persist": )" +
         std::string(persist ? "true" : "false") + R"(, "command": ["sh", ")" + kWordcountDir +
         R"(/map.sh", ")" + kWordcountDir + R"(/input", "{task}", "3"]},
      {"id": "counts", "depends_on": ["words"], "tasks": 3,
       "command": ["sh", ")" +
         kWordcountDir + R"(/reduce.sh", "words", ")" + std::to_string(reduceSleep) + R"("]}]})";
}

class DataIntegrationTest : public testing_support::AmClusterTest {
 protected:
  // Starts a cluster and runs the wordcount job, its words stage persisted and its output in
  // `out` below the test's dir, in a session AM of at most 2 executors that lets executors idle
  // `idleTimeout` without cached data and `cachedIdleTimeout` with; the job must succeed.
  void runPersistedWordcount(const std::string& out, const std::string& idleTimeout,
                             const std::string& cachedIdleTimeout) {
    startCluster();
    submit(wordcountJob((dir.path() / out).string(), 0, /*persist=*/true),
           {{"dynamicAllocation.maxExecutors", "2"},
            {"dynamicAllocation.executorIdleTimeout", idleTimeout},
            {"dynamicAllocation.cachedExecutorIdleTimeout", cachedIdleTimeout}},
           /*session=*/true);
    ASSERT_TRUE(jobEnds("job-1", 60s));
    ASSERT_EQ(jobState("job-1"), "SUCCEEDED");
  }
};

TEST_F(DataIntegrationTest, WordcountEqualsUniqCount) {
  startCluster();
  const fs::path output = dir.path() / "out";
  submit(wordcountJob(output.string(), 0),
         {{"dynamicAllocation.maxExecutors", "3"}, {"locality.wait", "500ms"}},
         /*session=*/false);
  const rest::ApplicationReport report = waitForEnd(90s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  const auto expected = referenceCounts(dir.path());
  ASSERT_GT(expected.size(), 50u);
  EXPECT_EQ(collectedCounts(output), expected);
  std::set<std::string> parts;
  for (const auto& entry : fs::directory_iterator(output)) {
    parts.insert(entry.path().filename().string());
  }
  EXPECT_EQ(parts, (std::set<std::string>{"part-0", "part-1", "part-2"}));
}

TEST_F(DataIntegrationTest, TheExampleJobFileRunsWithTideRun) {
  // The example as shipped, copied so that its relative output lands in the scratch dir.
  const fs::path example = dir.path() / "wordcount";
  fs::copy(kWordcountDir, example, fs::copy_options::recursive);
  fs::remove_all(example / "out");
  std::vector<std::string> argv = {std::string(TIDE_BIN_DIR) + "/tide", "run",
                                   (example / "wordcount.json").string()};
  for (const char* conf : {"nm.cores=3", "nm.memory=2g", "executor.memory=256m", "am.memory=256m",
                           "dynamicAllocation.schedulerBacklogTimeout=200ms"}) {
    argv.push_back("--conf");
    argv.push_back(conf);
  }
  auto result = testing_support::runCommand(argv, (dir.path() / "tide-run.log").string(), 120s);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(collectedCounts(example / "out"), referenceCounts(dir.path()));
}

TEST_F(DataIntegrationTest, WordcountSurvivesAnExecutorKilledDuringTheReduceStage) {
  startCluster();
  const fs::path output = dir.path() / "out";
  // Reduce tasks of 10 s: a window the polls below find even when the AM's status threads
  // (nice 19) wait seconds for a core on a loaded machine (with 4 s, a CI run missed it).
  submit(wordcountJob(output.string(), 10),
         {{"dynamicAllocation.maxExecutors", "3"},
          {"dynamicAllocation.initialExecutors", "3"},
          {"dynamicAllocation.executorIdleTimeout", "60s"},
          {"locality.wait", "0"}},
         /*session=*/true);
  // A victim running a reduce task and holding map output that the others still have to read.
  std::string victimId;
  int64_t victimPid = 0;
  ASSERT_TRUE(eventually(
      [&] {
        // The AM serves its status before it submits its job: until then job-1 is a 404.
        rapidjson::Document doc;
        try {
          doc = job("job-1");
        } catch (const rest::HttpError& e) {
          if (e.status() == 404) return false;
          throw;
        }
        const rapidjson::Value* counts = stage(doc, "counts");
        if (counts == nullptr || (*counts)["running"].GetInt64() == 0) return false;
        auto list = executors();
        for (const auto& e : list["executors"].GetArray()) {
          if (e["runningTasks"].GetInt() > 0 && e["shuffleStages"].Size() > 0 &&
              e["pid"].GetInt64() > 0) {
            victimId = e["id"].GetString();
            victimPid = e["pid"].GetInt64();
            return true;
          }
        }
        return false;
      },
      60s))
      << "no executor both ran a reduce task and held map output";
  ASSERT_EQ(::kill(static_cast<pid_t>(victimPid), SIGKILL), 0);

  ASSERT_TRUE(jobEnds("job-1", 90s));
  auto doc = job("job-1");
  ASSERT_EQ(std::string(doc["state"].GetString()), "SUCCEEDED") << doc["message"].GetString();
  // The lost map outputs were made again, and nothing counted as a task failure.
  EXPECT_GE((*stage(doc, "words"))["reruns"].GetInt(), 1) << "victim " << victimId;
  EXPECT_GE((*stage(doc, "counts"))["failedAttempts"].GetInt64(), 1);
  EXPECT_EQ(collectedCounts(output), referenceCounts(dir.path()));
  client->kill(appId);
  waitForEnd(30s);
}

// Every executor that holds cached data, with when it expires.
std::vector<std::pair<std::string, const rapidjson::Value*>> cachedHolders(
    const rapidjson::Document& list) {
  std::vector<std::pair<std::string, const rapidjson::Value*>> holders;
  for (const auto& e : list["executors"].GetArray()) {
    if (e["holdsCachedData"].GetBool()) holders.emplace_back(e["id"].GetString(), &e);
  }
  return holders;
}

TEST_F(DataIntegrationTest, PersistedStageKeepsExecutorsUntilCachedIdleTimeout) {
  ASSERT_NO_FATAL_FAILURE(runPersistedWordcount("out", "1s", "5s"));
  const auto jobEnded = std::chrono::steady_clock::now();

  // The holders are still there well past executorIdleTimeout (idle for over 2s)...
  std::set<std::string> holders;
  ASSERT_TRUE(eventually(
      [&] {
        auto list = executors();
        holders.clear();
        bool allIdleLong = true;
        for (const auto& [id, e] : cachedHolders(list)) {
          holders.insert(id);
          EXPECT_THAT(std::string((*e)["expiry"].GetString()), ::testing::HasSubstr("cached"));
          EXPECT_EQ((*e)["cachedStages"][0].GetString(), std::string("job-1/words"));
          allIdleLong = allIdleLong && (*e)["idleForMs"].GetInt64() > 2000;
        }
        return !holders.empty() && allIdleLong;
      },
      10s))
      << "cached executors did not stay past executorIdleTimeout";
  // ... while executors without data went after executorIdleTimeout.
  EXPECT_TRUE(eventually([&] { return liveExecutors() == static_cast<int>(holders.size()); }, 5s));
  // ... and go after cachedExecutorIdleTimeout.
  ASSERT_TRUE(eventually([&] { return liveExecutors() == 0; }, 15s));
  EXPECT_GE(std::chrono::steady_clock::now() - jobEnded, 4s);
  client->kill(appId);
  waitForEnd(30s);
}

TEST_F(DataIntegrationTest, ALaterJobReadsAPersistedStageAndUnpersistLetsItsExecutorsGo) {
  ASSERT_NO_FATAL_FAILURE(runPersistedWordcount("out1", "2s", "infinity"));

  // A second job counts the persisted words again, without re-running the map stage.
  const fs::path out2 = dir.path() / "out2";
  auto reply = am->postJson("api/v1/jobs", R"({"name": "again", "output": ")" + out2.string() +
                                               R"(", "stages": [
      {"id": "recount", "depends_on": ["job-1/words"], "tasks": 3,
       "command": ["sh", ")" + kWordcountDir + R"(/reduce.sh", "job-1/words"]}]})");
  const std::string second = reply["id"].GetString();
  ASSERT_TRUE(eventually([&] { return jobState(second) != "RUNNING"; }, 60s));
  ASSERT_EQ(jobState(second), "SUCCEEDED") << job(second)["message"].GetString();
  EXPECT_EQ(collectedCounts(out2), referenceCounts(dir.path()));

  // Held past executorIdleTimeout by the cache...
  ASSERT_TRUE(eventually(
      [&] {
        auto list = executors();
        auto holders = cachedHolders(list);
        return !holders.empty() && std::all_of(holders.begin(), holders.end(), [](auto& h) {
          return (*h.second)["idleForMs"].GetInt64() > 3000 && (*h.second)["expiresInMs"].IsNull();
        });
      },
      15s));
  // ... until unpersisted: then they go at once (idle longer than executorIdleTimeout already).
  auto cache = am->getJson("api/v1/cache");
  ASSERT_EQ(cache["stages"].Size(), 1u);
  am->deleteJson("api/v1/cache/job-1/words");
  EXPECT_TRUE(eventually([&] { return liveExecutors() == 0; }, 3s));
  EXPECT_EQ(am->getJson("api/v1/cache")["stages"].Size(), 0u);
  // Refusals carry their code: no longer persisted is a conflict, an unknown stage not found.
  EXPECT_EQ(am->request("DELETE", "api/v1/cache/job-1/words").status, 409);
  EXPECT_EQ(am->request("DELETE", "api/v1/cache/job-9/x").status, 404);
  client->kill(appId);
  waitForEnd(30s);
}

TEST_F(DataIntegrationTest, ShuffleDataHoldsAnExecutorUntilItsJobEnds) {
  startCluster();
  submit(R"({"name": "hold", "stages": [
      {"id": "map", "tasks": 2, "command": ["sh", "-c", "sleep 1.5; echo $TIDE_TASK_INDEX > $TIDE_OUTPUT_DIR/part-0"]},
      {"id": "reduce", "depends_on": ["map"], "tasks": 1,
       "command": ["sh", "-c", "sleep 5; cat $TIDE_INPUT_DIR/map/* > $TIDE_OUTPUT_DIR/part-0"]}]})",
         {{"dynamicAllocation.maxExecutors", "2"},
          {"dynamicAllocation.initialExecutors", "2"},
          {"dynamicAllocation.minExecutors", "0"},
          {"dynamicAllocation.executorIdleTimeout", "1s"}},
         /*session=*/true);
  // During the reduce: an idle executor holding map output stays, far past its idle timeout.
  std::string holder;
  ASSERT_TRUE(eventually(
      [&] {
        if (jobState("job-1") != "RUNNING") return false;
        auto list = executors();
        for (const auto& e : list["executors"].GetArray()) {
          if (e["runningTasks"].GetInt() == 0 && e["shuffleStages"].Size() > 0 &&
              e["idleForMs"].GetInt64() > 2500) {
            EXPECT_TRUE(e["expiresInMs"].IsNull());
            holder = e["id"].GetString();
            return true;
          }
        }
        return false;
      },
      30s))
      << "no idle executor held shuffle data for long";
  ASSERT_TRUE(jobEnds("job-1", 30s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  // Once the job is over the shuffle data no longer counts: it idles out.
  EXPECT_TRUE(eventually([&] { return liveExecutors() == 0; }, 5s));
  client->kill(appId);
  waitForEnd(30s);
}

// One task writes all four partitions, so all the input of "use" is on its executor and node;
// it first sleeps `srcSleep` seconds.
std::string localJob(int srcSleep) {
  return R"({"name": "local", "stages": [
    {"id": "src", "tasks": 1, "command": ["sh", "-c", "sleep )" +
         std::to_string(srcSleep) +
         R"(; for p in 0 1 2 3; do seq 1000 > $TIDE_OUTPUT_DIR/part-$p; done"]},
    {"id": "use", "depends_on": ["src"], "tasks": 4,
     "command": ["sh", "-c", "sleep 1; wc -l $TIDE_INPUT_DIR/src/part-0 > $TIDE_OUTPUT_DIR/part-0"]}]})";
}

TEST_F(DataIntegrationTest, TasksRunWhereTheirInputIs) {
  startCluster(2);
  // Four executors for the whole run (no scaling, so none is cancelled when "src" needs only
  // one), spread over both nodes before anything prefers a place.
  submit(localJob(3),
         {{"dynamicAllocation.enabled", "false"},
          {"executor.instances", "4"},
          {"locality.wait", "15s"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  auto doc = job("job-1");
  ASSERT_EQ(std::string(doc["state"].GetString()), "SUCCEEDED") << doc["message"].GetString();
  const rapidjson::Value& locality = (*stage(doc, "use"))["locality"];
  EXPECT_EQ(locality["PROCESS_LOCAL"].GetInt64() + locality["NODE_LOCAL"].GetInt64(), 4)
      << rest::toJsonString(locality);
  EXPECT_EQ(locality["ANY"].GetInt64(), 0);
  // Executors ran on both nodes, so the other node was there to be used and was not.
  std::set<std::string> nodes;
  const rapidjson::Document listed = executors();  // outlives the loop
  for (const auto& e : listed["executors"].GetArray()) nodes.insert(e["node"].GetString());
  EXPECT_EQ(nodes.size(), 2u) << "the test needs executors on both nodes";
  client->kill(appId);
  waitForEnd(30s);
}

TEST_F(DataIntegrationTest, ContainerAsksFollowTheData) {
  startCluster(2);
  // One executor runs "src"; the executors added for "use" are asked for on its node (spreadOut
  // would otherwise put every other one on the second node).
  submit(localJob(0),
         {{"dynamicAllocation.maxExecutors", "4"},
          {"dynamicAllocation.initialExecutors", "1"},
          {"dynamicAllocation.executorIdleTimeout", "60s"},
          {"locality.wait", "15s"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  std::set<std::string> nodes;
  int live = 0;
  const rapidjson::Document listed = executors();  // outlives the loop
  for (const auto& e : listed["executors"].GetArray()) {
    nodes.insert(e["node"].GetString());
    ++live;
  }
  EXPECT_GE(live, 2) << "the reduce backlog should have added executors";
  EXPECT_EQ(nodes.size(), 1u) << "every executor on the node holding the data";
  client->kill(appId);
  waitForEnd(30s);
}

TEST_F(DataIntegrationTest, FairPoolsShareExecutorsByWeight) {
  startCluster();
  const std::string pools = dir.writeFile("pools.xml", R"(<allocations>
    <pool name="light"><weight>1</weight></pool>
    <pool name="heavy"><weight>3</weight></pool>
  </allocations>)");
  const std::string tasks = R"(, "tasks": 200, "builtin": "sleep", "sleep_ms": 200}]})";
  submit(R"({"name": "light", "pool": "light", "stages": [{"id": "s")" + tasks,
         {{"dynamicAllocation.enabled", "false"},
          {"executor.instances", "4"},
          {"scheduler.mode", "FAIR"},
          {"scheduler.allocation.file", pools}},
         /*session=*/true);
  am->postJson("api/v1/jobs",
               R"({"name": "heavy", "pool": "heavy", "stages": [{"id": "s")" + tasks);
  // Sample the running tasks of each while both still have work waiting.
  int64_t light = 0, heavy = 0;
  int samples = 0;
  eventually(
      [&] {
        auto all = am->getJson("api/v1/jobs");
        const auto& jobs = all["jobs"];
        if (jobs.Size() < 2) return false;
        // By name: the AM may take the posted job before the one it started with.
        const bool lightFirst = std::string(jobs[0]["name"].GetString()) == "light";
        const auto& lightJob = jobs[lightFirst ? 0 : 1];
        const auto& heavyJob = jobs[lightFirst ? 1 : 0];
        if (lightJob["pending"].GetInt64() == 0 || heavyJob["pending"].GetInt64() == 0) {
          return samples > 0;
        }
        const int64_t running = lightJob["running"].GetInt64() + heavyJob["running"].GetInt64();
        if (running == 4) {
          light += lightJob["running"].GetInt64();
          heavy += heavyJob["running"].GetInt64();
          ++samples;
        }
        return samples >= 40;
      },
      60s);
  ASSERT_GE(samples, 10);
  const double ratio =
      static_cast<double>(heavy) / static_cast<double>(std::max<int64_t>(light, 1));
  EXPECT_GT(ratio, 2.0) << "heavy " << heavy << " light " << light;
  EXPECT_LT(ratio, 4.5) << "heavy " << heavy << " light " << light;
  client->kill(appId);
  waitForEnd(30s);
}

TEST_F(DataIntegrationTest, AStragglerGetsASpeculativeCopyThatWins) {
  startCluster();
  const auto started = std::chrono::steady_clock::now();
  submit(R"({"name": "straggler", "stages": [{"id": "s", "tasks": 6, "command": ["sh", "-c",
      "if [ $TIDE_TASK_INDEX = 0 ] && [ $TIDE_ATTEMPT = 0 ]; then sleep 30; else sleep 0.5; fi"]}]})",
         {{"dynamicAllocation.enabled", "false"},
          {"executor.instances", "3"},
          {"speculation", "true"},
          {"speculation.quantile", "0.5"},
          {"speculation.multiplier", "1.5"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 25s)) << "the straggler was not overtaken";
  auto doc = job("job-1");
  EXPECT_EQ(std::string(doc["state"].GetString()), "SUCCEEDED") << doc["message"].GetString();
  EXPECT_GE((*stage(doc, "s"))["speculativeLaunches"].GetInt64(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 25s);
  client->kill(appId);
  waitForEnd(30s);
}

}  // namespace
}  // namespace tide::deploy
