// The ApplicationMaster end to end (issue 4's "must show"): real tide-rm, tide-nm, tide-am
// and tide-executor processes on 127.0.0.1, ephemeral ports, every wait bounded.

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "am_cluster_test.h"
#include "tests/support/jobs.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;

// Two node managers with room for the AM and eight one-core executors.
class AmIntegrationTest : public testing_support::AmClusterTest {
 protected:
  // The targets the policy raised to, oldest first: from the allocation history, which has a
  // point for every change (the decision log keeps a run of raises as one record).
  std::vector<int> raisedTargets() {
    auto doc = am->getJson("api/v1/allocation/history");
    std::vector<int> targets;
    int previous = 0;
    for (const auto& point : doc["points"].GetArray()) {
      const int target = point["target"].GetInt();
      if (target > previous) targets.push_back(target);
      previous = target;
    }
    return targets;
  }
};

const std::string kSleepJob200 = testing_support::sleepJob("ramp", 200, 200);

TEST_F(AmIntegrationTest, RampsUpIdlesDownAndComesBackForASecondJob) {
  startCluster();
  submit(kSleepJob200,
         {{"dynamicAllocation.minExecutors", "0"},
          {"dynamicAllocation.maxExecutors", "8"},
          {"dynamicAllocation.executorIdleTimeout", "2s"}},
         /*session=*/true);

  ASSERT_TRUE(jobEnds("job-1", 60s));
  const auto jobDone = std::chrono::steady_clock::now();
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  auto s = status();
  EXPECT_EQ(s["tasks"]["succeeded"].GetInt64(), 200);
  EXPECT_EQ(s["tasks"]["failed"].GetInt64(), 0);
  EXPECT_EQ(raisedTargets(), (std::vector<int>{1, 3, 7, 8}));
  EXPECT_EQ(s["allocation"]["peak"].GetInt(), 8);

  // Idle timeout 2s: every executor is gone within 2s + 2s of the job's end.
  EXPECT_TRUE(eventually([&] { return status()["allocation"]["live"].GetInt() == 0; }, 4s))
      << "executors still live "
      << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               jobDone)
             .count()
      << "ms after the job";
  EXPECT_TRUE(eventually([&] { return client->application(appId).runningContainers == 1; }, 10s))
      << "only the AM's container should be left";

  // Session mode: a second job brings executors back.
  auto reply = am->postJson("api/v1/jobs", testing_support::sleepJob("again", 20, 200, "more"));
  const std::string second = reply["id"].GetString();
  EXPECT_TRUE(eventually([&] { return status()["allocation"]["live"].GetInt() > 0; }, 30s));
  ASSERT_TRUE(eventually([&] { return jobState(second) != "RUNNING"; }, 60s));
  EXPECT_EQ(jobState(second), "SUCCEEDED");

  client->kill(appId);
  EXPECT_EQ(waitForEnd(30s).state, "KILLED");
}

TEST_F(AmIntegrationTest, TheAdaptivePolicyAsksForAllAtOnceAndReleasesWhenTheWorkIsDone) {
  startCluster();
  // Idle timeout 60s: executors that go within seconds of the job's end go by the adaptive
  // rule (no work pending or expected), not by the timeout.
  submit(kSleepJob200,
         {{"dynamicAllocation.policy", "adaptive"},
          {"dynamicAllocation.maxExecutors", "8"},
          {"dynamicAllocation.executorIdleTimeout", "60s"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  EXPECT_EQ(status()["tasks"]["succeeded"].GetInt64(), 200);
  const std::vector<int> raised = raisedTargets();
  ASSERT_FALSE(raised.empty());
  EXPECT_EQ(raised.front(), 8);  // 200 tasks of 500 ms assumed: 100 s of work / 5 s, max 8
  EXPECT_TRUE(eventually([&] { return status()["allocation"]["live"].GetInt() == 0; }, 30s));
  bool initial = false, raise = false, removal = false;
  auto doc = am->getJson("api/v1/allocation/decisions?limit=1000");
  for (const auto& d : doc["decisions"].GetArray()) {
    const std::string why = d["why"].GetString();
    const std::string first = d["firstWhy"].GetString();  // a run's first
    initial = initial || why == "initial target 0 (policy adaptive)";
    raise = raise ||
            first.find("backlog 100.0s of work / target 5.0s → 8 executors (maxExecutors)") == 0;
    removal = removal ||
              (why.find("removing ") == 0 &&
               why.find("with no task pending; the work needs 0 executors") != std::string::npos);
  }
  EXPECT_TRUE(initial);
  EXPECT_TRUE(raise);
  EXPECT_TRUE(removal);
  client->kill(appId);
  EXPECT_EQ(waitForEnd(30s).state, "KILLED");
}

TEST_F(AmIntegrationTest, AKilledExecutorsTasksRunElsewhereAndItIsReplaced) {
  startCluster();
  submit(
      testing_support::sleepJob("survive", 80, 250),
      {{"dynamicAllocation.maxExecutors", "4"}, {"dynamicAllocation.executorIdleTimeout", "30s"}},
      /*session=*/false);
  const std::optional<Executor> victim = waitForBusyExecutor(30s);
  ASSERT_TRUE(victim.has_value());
  const int launchedBefore = status()["allocation"]["launched"].GetInt();
  ASSERT_EQ(::kill(victim->pid, SIGKILL), 0);

  // The loss is noticed and a replacement is started while the job runs.
  EXPECT_TRUE(eventually(
      [&] {
        try {
          return status()["allocation"]["launched"].GetInt() > launchedBefore;
        } catch (const std::exception&) {
          return true;  // the AM finished meanwhile; the report below tells
        }
      },
      30s));
  const rest::ApplicationReport report = waitForEnd(60s);
  EXPECT_EQ(report.state, "FINISHED");
  EXPECT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
}

// Exclusion on failure (issue 13): a job whose one task fails every time on the first executor
// it ran on (that executor's id is written to `mark`) and succeeds anywhere else, then a stage
// that sleeps `afterMs`. With exclusion on, failures on an executor exclude it for the
// application at once.
class ExclusionIntegrationTest : public AmIntegrationTest {
 protected:
  // `busy`: the stage has a second task, which sleeps on the same executor (of two cores)
  // while the first fails there, so that no executor is idle when the first can run nowhere.
  void submitPickyJob(Conf conf, int afterMs, bool busy = true) {
    const std::string picky =
        std::string(busy ? "if [ {task} = 1 ]; then sleep 3; exit 0; fi; " : "") + "if [ -e " +
        mark + " ] && [ \\\"$(cat " + mark +
        ")\\\" != \\\"$TIDE_EXECUTOR_ID\\\" ]; then exit 0; fi; " + "echo $TIDE_EXECUTOR_ID > " +
        mark + "; exit 1";
    conf.insert(conf.begin(), {{"excludeOnFailure.enabled", "true"},
                               {"excludeOnFailure.application.maxFailedTasksPerExecutor", "1"},
                               {"task.maxFailures", "3"},
                               {"executor.cores", busy ? "2" : "1"},
                               {"dynamicAllocation.maxExecutors", "2"},
                               {"dynamicAllocation.executorIdleTimeout", "30s"}});
    submit(R"({"name": "picky", "stages": [
        {"id": "picky", "tasks": )" +
               std::string(busy ? "2" : "1") + R"(, "command": ["sh", "-c", ")" + picky + R"("]},
        {"id": "after", "depends_on": ["picky"], "tasks": 1, "builtin": "sleep", "sleep_ms": )" +
               std::to_string(afterMs) + "}]}",
           conf, /*session=*/true);
  }
  // The executor the task failed on.
  std::string failedOn() {
    std::string id = testing_support::readFile(mark);
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
  }
  bool decided(const std::string& text) {
    auto doc = am->getJson("api/v1/allocation/decisions?limit=1000");
    for (const auto& d : doc["decisions"].GetArray()) {
      if (std::string(d["why"].GetString()).find(text) != std::string::npos) return true;
    }
    return false;
  }

  const std::string mark = (dir.path() / "failed-on").string();
};

// The stage becomes unschedulable on the first executor (busy with the stage's other task), the
// policy asks for a second one (SPARK-31418), the task succeeds there, and the first executor is
// excluded for the rest of the application.
TEST_F(ExclusionIntegrationTest, ATaskThatAlwaysFailsOnOneExecutorRunsOnAnother) {
  startCluster();
  submitPickyJob({}, 3000);
  // While "after" runs, the executor "picky" failed on shows as excluded.
  std::string excluded;
  EXPECT_TRUE(eventually(
      [&] {
        const rapidjson::Document listed = executors();
        for (const auto& e : listed["executors"].GetArray()) {
          if (e["excluded"].GetBool()) excluded = e["id"].GetString();
        }
        return !excluded.empty();
      },
      60s));
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  EXPECT_EQ(excluded, failedOn());
  EXPECT_TRUE(decided("unschedulable: every executor is excluded for stage job-1/picky"));
}

// excludeOnFailure.killExcludedExecutors: the excluded executor is released, and says why.
TEST_F(ExclusionIntegrationTest, KillExcludedExecutorsReleasesTheExcludedExecutor) {
  startCluster();
  submitPickyJob({{"excludeOnFailure.killExcludedExecutors", "true"}}, 1000);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  const std::string victim = failedOn();
  ASSERT_FALSE(victim.empty());
  EXPECT_TRUE(eventually(
      [&] {
        const rapidjson::Document listed = executors();
        for (const auto& e : listed["executors"].GetArray()) {
          if (victim == e["id"].GetString()) return false;
        }
        return true;
      },
      10s));  // well before its 30 s idle timeout
  EXPECT_TRUE(decided("executor " + victim + " excluded for task failures"));
}

// With the first executor idle, it is killed to make room (Spark's killExcludedIdleExecutor),
// and the executor that takes its place runs the task.
TEST_F(ExclusionIntegrationTest, AnIdleExecutorTheTaskCannotRunOnIsKilledForANewOne) {
  startCluster();
  submitPickyJob({}, 500, /*busy=*/false);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  const std::string victim = failedOn();
  ASSERT_FALSE(victim.empty());
  EXPECT_TRUE(decided("executor " + victim + " killed while idle"));
  EXPECT_FALSE(decided("unschedulable: every executor is excluded"));
  const rapidjson::Document listed = executors();
  for (const auto& e : listed["executors"].GetArray()) {
    EXPECT_NE(victim, e["id"].GetString()) << "the killed executor is gone";
  }
}

TEST_F(AmIntegrationTest, ASilentExecutorIsDeclaredLostAfterTheNetworkTimeout) {
  startCluster();
  // Session mode keeps the AM (and its decision log) up after the job, whatever the timing.
  submit(testing_support::sleepJob("silence", 60, 250),
         {{"dynamicAllocation.maxExecutors", "3"}, {"network.timeout", "3s"}},
         /*session=*/true);
  const std::optional<Executor> victim = waitForBusyExecutor(30s);
  ASSERT_TRUE(victim.has_value());
  // Frozen, not dead: its container stays up, only its heartbeats stop.
  ASSERT_EQ(::kill(victim->pid, SIGSTOP), 0);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  ::kill(victim->pid, SIGKILL);
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  bool declaredLost = false;
  auto doc = am->getJson("api/v1/allocation/decisions?limit=1000");
  for (const auto& d : doc["decisions"].GetArray()) {
    const std::string why = d["why"].GetString();
    if (why.find("executor " + victim->id + " lost: no heartbeat") != std::string::npos) {
      declaredLost = true;
    }
  }
  EXPECT_TRUE(declaredLost) << "the frozen executor " << victim->id << " was never declared lost";
  client->kill(appId);
}

TEST_F(AmIntegrationTest, SigtermEndsTheApplicationAsKilledAndReleasesEverything) {
  startCluster();
  submit(testing_support::sleepJob("endless", 1000, 1000),
         {{"dynamicAllocation.maxExecutors", "2"}},
         /*session=*/false);
  ASSERT_TRUE(eventually([&] { return status()["allocation"]["live"].GetInt() > 0; }, 30s));
  const pid_t amPid = testing_support::findProcess("tide-am", "TIDE_APPLICATION_ID", appId);
  ASSERT_GT(amPid, 0);
  ASSERT_EQ(::kill(amPid, SIGTERM), 0);
  const rest::ApplicationReport report = waitForEnd(30s);
  EXPECT_EQ(report.state, "FINISHED");
  EXPECT_EQ(report.finalStatus, "KILLED");
  EXPECT_TRUE(eventually([&] { return client->metrics().containersAllocated == 0; }, 15s))
      << "every container goes with the application";
}

class TideRunTest : public ::testing::Test {
 protected:
  testing_support::CommandResult tideRun(std::vector<std::string> args) {
    args.insert(args.begin(), {std::string(TIDE_BIN_DIR) + "/tide", "run"});
    return testing_support::runCommand(
        withConf(args, {{"nm.cores", "2"},
                        {"nm.memory", "2g"},
                        {"executor.memory", "256m"},
                        {"am.memory", "256m"},
                        {"dynamicAllocation.schedulerBacklogTimeout", "200ms"}}),
        (dir.path() / "tide-run.log").string(), 120s);
  }
  testing_support::TempDir dir;
};

TEST_F(TideRunTest, RunsAJobAndWritesTheReport) {
  const std::string job = dir.writeFile("job.json", R"({"name": "hello", "stages": [
      {"id": "write", "tasks": 6, "command": ["sh", "-c", "echo task {task} of {stage} > out-$TIDE_TASK_INDEX.txt"]},
      {"id": "after", "depends_on": ["write"], "tasks": 2, "builtin": "noop"}]})");
  const std::string reportPath = (dir.path() / "report.json").string();
  auto result = tideRun({job, "--report", reportPath});
  ASSERT_EQ(result.status, 0) << result.output;
  auto report = rest::parseJson(testing_support::readFile(reportPath));
  EXPECT_EQ(std::string(report["status"].GetString()), "SUCCEEDED");
  EXPECT_EQ(report["tasks"]["succeeded"].GetInt64(), 8);
  EXPECT_GE(report["executors"]["launched"].GetInt(), 1);
  EXPECT_EQ(report["stages"].Size(), 2u);
}

TEST_F(TideRunTest, ATaskThatAlwaysFailsFailsTheJobWithItsStderr) {
  const std::string job = dir.writeFile("job.json", R"({"name": "doomed", "stages": [
      {"id": "bad", "tasks": 1, "command": ["sh", "-c", "echo boom-on-stderr >&2; exit 3"]}]})");
  auto result = tideRun({job});
  EXPECT_NE(result.status, 0);
  EXPECT_THAT(result.output, HasSubstr("failed 4 times"));
  EXPECT_THAT(result.output, HasSubstr("boom-on-stderr"));
  EXPECT_THAT(result.output, HasSubstr("bad[0]"));
}

TEST_F(TideRunTest, MinAboveMaxIsRejectedBeforeAnythingStarts) {
  const std::string job = dir.writeFile("job.json", R"({"stages": [
      {"id": "s", "tasks": 1, "builtin": "noop"}]})");
  const std::string conf = dir.writeFile("bad.conf",
                                         "dynamicAllocation.minExecutors 5\n"
                                         "dynamicAllocation.maxExecutors 2\n");
  auto result = tideRun({job, "--properties-file", conf});
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("dynamicAllocation.minExecutors"));
  EXPECT_THAT(result.output, HasSubstr("dynamicAllocation.maxExecutors"));
  EXPECT_THAT(result.output, HasSubstr("bad.conf"));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("starting an embedded cluster")));
}

TEST_F(TideRunTest, AMalformedJobIsRejectedNamingTheField) {
  const std::string job =
      dir.writeFile("job.json", R"({"stages": [{"id": "s", "tasks": -3, "builtin": "noop"}]})");
  auto result = tideRun({job});
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("stages[0].tasks"));
}

}  // namespace
}  // namespace tide::deploy
