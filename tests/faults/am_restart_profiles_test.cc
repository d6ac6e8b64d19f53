// Work-preserving AM restarts with stage-level executor shapes (Spark's ResourceProfile; issue
// 13): real tide-rm, tide-nm, tide-am and tide-executor processes on 127.0.0.1. The AM is
// killed with SIGKILL while executors of a non-default profile run a stage's tasks; the next
// attempt adopts them with their profile, gives that stage's tasks to them only (never to the
// idle default executors beside them), and runs no task again that had started before the
// kill. The event log both attempts wrote replays the profile of the stage and the executors.

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "am/status/event_log_replay.h"
#include "common/strings.h"
#include "tests/faults/am_restart_fixture.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;

class AmRestartProfilesTest : public AmRestartTest {
 protected:
  // executor id -> its resource profile, as the AM shows them.
  std::map<std::string, int> executorProfiles() {
    std::map<std::string, int> found;
    const rapidjson::Document listed = executors();
    for (const auto& e : listed["executors"].GetArray()) {
      found[e["id"].GetString()] = e["resourceProfileId"].GetInt();
    }
    return found;
  }
};

TEST_F(AmRestartProfilesTest, AdoptedExecutorsKeepTheirProfileAndRunOnlyTheirStagesTasks) {
  const int tasks = 12;
  startCluster(/*nodes=*/2, /*coresPerNode=*/5);
  fs::create_directories(dir.path() / "runs");
  fs::create_directories(dir.path() / "ran");
  const std::string runs = (dir.path() / "runs").string();
  const std::string ran = (dir.path() / "ran").string();
  // One stage on executors of its own shape (1 core, 384 MB: profile 1) beside the default
  // executors (executor.cores=2, 256 MB), which sit idle with free slots. Each task counts its
  // starts in runs/<task> and notes the executor it ran on in ran/<task>.
  const std::string jobJson =
      R"({"name": "shaped", "stages": [{"id": "wide", "tasks": )" + std::to_string(tasks) +
      R"(, "executor": {"cores": 1, "memory": "384m"}, "command": ["sh", "-c", "echo {attempt} >> )" +
      runs + R"(/{task}; echo $TIDE_EXECUTOR_ID >> )" + ran + R"(/{task}; sleep 2"]}]})";
  submit(jobJson, restartConf(), /*session=*/true);
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1", "wide") >= 3; }, 60s))
      << "the stage did not get going\n"
      << amLog();

  // Two executors of each profile (min and max executors apply to each).
  const std::map<std::string, int> before = executorProfiles();
  std::set<std::string> shaped;
  for (const auto& [id, profile] : before) {
    if (profile == 1) shaped.insert(id);
  }
  ASSERT_EQ(before.size(), 4u);
  ASSERT_EQ(shaped.size(), 2u);
  std::set<int> started;  // what has started must never start again
  for (const auto& [task, count] : runsByTask()) started.insert(task);

  ASSERT_NO_FATAL_FAILURE(killAmAndWaitForNextAttempt());
  EXPECT_EQ(status()["recoveredFromAttempt"].GetInt(), 1);
  // The new attempt adopts the same executors, each with the profile it was started for.
  std::map<std::string, int> after;
  ASSERT_TRUE(eventually(
      [&] {
        after = executorProfiles();
        return after == before && status()["containers"]["starting"].GetInt() == 0;
      },
      60s))
      << "executors before the kill and after differ, or are not all registered again";
  const rapidjson::Document listed = executors();
  for (const auto& e : listed["executors"].GetArray()) {
    if (e["resourceProfileId"].GetInt() != 1) continue;
    EXPECT_EQ(e["cores"].GetInt(), 1) << e["id"].GetString();
    EXPECT_EQ(e["memoryMb"].GetInt64(), 384) << e["id"].GetString();
  }

  ASSERT_TRUE(jobEnds("job-1", 120s)) << amLog();
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << amLog();
  // Every task ran on an executor of profile 1, before the kill and after it.
  const std::map<int, int> counts = runsByTask();
  ASSERT_EQ(counts.size(), static_cast<size_t>(tasks));
  for (int task = 0; task < tasks; ++task) {
    std::ifstream in(fs::path(ran) / std::to_string(task));
    for (std::string executor; std::getline(in, executor);) {
      EXPECT_EQ(shaped.count(std::string(trim(executor))), 1u)
          << "task " << task << " ran on " << executor << ", not an executor of profile 1";
    }
    if (started.count(task) != 0) {
      EXPECT_EQ(counts.at(task), 1) << "task " << task << " started before the kill ran again";
    }
  }

  // The event log both attempts wrote: the stage's profile and each executor's.
  const am::ReplayedApplication history =
      am::replayEventLog(am::eventLogPath((dir.path() / "history").string(), appId));
  bool stageLogged = false;
  for (const am::StageSubmission& stage : history.stages) {
    if (stage.stageId != "job-1/wide") continue;
    stageLogged = true;
    EXPECT_EQ(stage.resourceProfileId, 1);
    EXPECT_EQ(stage.executorCores, 1);
  }
  EXPECT_TRUE(stageLogged) << "no stageSubmitted record for job-1/wide";
  std::map<std::string, int> logged;
  for (const am::ExecutorLifetime& e : history.executors) logged[e.id] = e.resourceProfileId;
  EXPECT_EQ(logged, before);

  client->kill(appId);
  EXPECT_EQ(waitForEnd(30s).state, "KILLED");
  expectNothingLeft();
}

}  // namespace
}  // namespace tide::deploy
