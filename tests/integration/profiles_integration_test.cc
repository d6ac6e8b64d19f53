// Stage-level executor shapes (Spark's ResourceProfile) end to end: real tide-rm, tide-nm,
// tide-am and tide-executor processes on 127.0.0.1. A job of two stages with different shapes
// gets executors of both shapes, and each stage's tasks run only on executors of its own.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "am_cluster_test.h"
#include "common/strings.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;

class ProfilesIntegrationTest : public testing_support::AmClusterTest {};

// Each task writes the id of the executor it ran on into `dir`/<stage>-<task>.
std::string stageJson(const std::string& id, const std::string& dir, const std::string& extra) {
  return R"({"id": ")" + id +
         R"(", "tasks": 4, "command": ["sh", "-c", "echo $TIDE_EXECUTOR_ID > )" + dir + "/" + id +
         R"(-{task}; sleep 0.3"])" + extra + "}";
}

TEST_F(ProfilesIntegrationTest, EachStageRunsOnlyOnExecutorsOfItsOwnShape) {
  startCluster(/*nodes=*/2, /*coresPerNode=*/5);
  const std::filesystem::path ran = dir.path() / "ran";
  std::filesystem::create_directories(ran);
  // "narrow" on the default executors (executor.cores=1, executor.memory=256m), then "wide" on
  // executors of 2 cores and 384 MB, 2 tasks per executor.
  const std::string jobJson =
      R"({"name": "shapes", "stages": [)" + stageJson("narrow", ran.string(), "") + ", " +
      stageJson("wide", ran.string(),
                R"(, "depends_on": ["narrow"], "executor": {"cores": 2, "memory": "384m"})") +
      "]}";
  submit(jobJson,
         {{"dynamicAllocation.minExecutors", "0"},
          {"dynamicAllocation.maxExecutors", "4"},
          {"dynamicAllocation.executorIdleTimeout", "60s"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 90s)) << amLog();
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << amLog();

  // Every executor, with the profile and shape it was started for.
  struct Shape {
    int profile = -1;
    int cores = 0;
    int64_t memoryMb = 0;
  };
  std::map<std::string, Shape> shapeOf;
  const rapidjson::Document listed = executors();
  for (const auto& e : listed["executors"].GetArray()) {
    shapeOf[e["id"].GetString()] = {e["resourceProfileId"].GetInt(), e["cores"].GetInt(),
                                    e["memoryMb"].GetInt64()};
  }
  std::set<std::string> narrowExecutors, wideExecutors;
  for (int task = 0; task < 4; ++task) {
    const std::string narrow =
        std::string(trim(testing_support::readFile(ran / ("narrow-" + std::to_string(task)))));
    const std::string wide =
        std::string(trim(testing_support::readFile(ran / ("wide-" + std::to_string(task)))));
    narrowExecutors.insert(narrow);
    wideExecutors.insert(wide);
    ASSERT_EQ(shapeOf.count(narrow), 1u) << "narrow task " << task << " ran on " << narrow;
    ASSERT_EQ(shapeOf.count(wide), 1u) << "wide task " << task << " ran on " << wide;
    EXPECT_EQ(shapeOf[narrow].profile, 0) << narrow;
    EXPECT_EQ(shapeOf[narrow].cores, 1) << narrow;
    EXPECT_EQ(shapeOf[narrow].memoryMb, 256) << narrow;
    EXPECT_EQ(shapeOf[wide].profile, 1) << wide;
    EXPECT_EQ(shapeOf[wide].cores, 2) << wide;
    EXPECT_EQ(shapeOf[wide].memoryMb, 384) << wide;
  }
  for (const std::string& id : wideExecutors) EXPECT_EQ(narrowExecutors.count(id), 0u) << id;

  // The policy keeps a target per profile; the RM granted containers of the second shape.
  const rapidjson::Document s = status();
  const auto& profiles = s["allocation"]["profiles"];
  ASSERT_EQ(profiles.Size(), 2u);
  EXPECT_EQ(profiles[1]["id"].GetInt(), 1);
  EXPECT_EQ(profiles[1]["cores"].GetInt(), 2);
  EXPECT_EQ(profiles[1]["memoryMb"].GetInt64(), 384);
  EXPECT_GE(profiles[1]["live"].GetInt(), 1);

  // A stage asking for more cores than any node has is refused at once, with the numbers.
  try {
    am->postJson("api/v1/jobs", std::string(R"({"name": "huge", "stages": [{"id": "big", )"
                                            R"("tasks": 1, "builtin": "noop", )"
                                            R"("executor": {"cores": 64}}]})"));
    ADD_FAILURE() << "a stage asking for 64-core executors was accepted";
  } catch (const rest::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_THAT(e.what(), HasSubstr("stages[0].executor.cores"));
    EXPECT_THAT(e.what(), HasSubstr("64 vCores, above the largest node's 5 vCores"));
  }

  client->kill(appId);
  EXPECT_EQ(waitForEnd(30s).state, "KILLED");
}

// The adaptive policy sizes one set of executors (docs/configuration.md, differences): a job with
// a stage of its own shape is refused at submission, naming the stage and the key, and the
// session goes on.
TEST_F(ProfilesIntegrationTest, TheAdaptivePolicyRefusesAStageWithItsOwnShapeNamingIt) {
  startCluster(/*nodes=*/1, /*coresPerNode=*/4);
  submit(R"({"name": "plain", "stages": [{"id": "s", "tasks": 1, "builtin": "noop"}]})",
         {{"dynamicAllocation.policy", "adaptive"}, {"dynamicAllocation.maxExecutors", "1"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 60s)) << amLog();
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << amLog();
  try {
    am->postJson("api/v1/jobs", std::string(R"({"name": "shaped", "stages": [)"
                                            R"({"id": "a", "tasks": 1, "builtin": "noop"},)"
                                            R"({"id": "fit", "tasks": 1, "builtin": "noop", )"
                                            R"("executor": {"cores": 2}}]})"));
    ADD_FAILURE() << "the adaptive policy accepted a stage with its own executor shape";
  } catch (const rest::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_THAT(e.what(), HasSubstr("stages[1].executor: stage 'fit' asks for its own executor "
                                    "shape, which needs dynamicAllocation.policy=spark"));
  }
  // Nothing of the refused job was kept: the next job is job-2 and runs.
  const rapidjson::Document next = am->postJson(
      "api/v1/jobs", std::string(R"({"name": "again", "stages": [{"id": "s", "tasks": 1, )"
                                 R"("builtin": "noop"}]})"));
  EXPECT_EQ(std::string(next["id"].GetString()), "job-2");
  ASSERT_TRUE(jobEnds("job-2", 60s)) << amLog();
  EXPECT_EQ(jobState("job-2"), "SUCCEEDED");
  client->kill(appId);
  EXPECT_EQ(waitForEnd(30s).state, "KILLED");
}

}  // namespace
}  // namespace tide::deploy
