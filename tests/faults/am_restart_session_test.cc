// Work-preserving AM restarts, continued (issue 12, items 1 and 2): what a session AM was doing
// when it died comes back in its next attempt. Real tide-rm, tide-nm, tide-am and tide-executor
// processes on 127.0.0.1; the AM is killed with SIGKILL.
//   - a job POSTed to a session AM and running when it dies resumes: its committed tasks do not
//     run again, and later POSTs continue the job ids;
//   - bounds changed at runtime (PUT /api/v1/allocation/bounds) are the new attempt's bounds;
//   - persisted stages stay readable by later jobs without running again, unpersisted ones stay
//     gone;
//   - an adopted executor reports the blocks it holds: a committed output whose blocks went
//     missing while no AM ran is made again at once, before anything reads it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/faults/am_restart_fixture.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;

class AmRestartSessionTest : public AmRestartTest {
 protected:
  // Runs of each task of one stage, counted by lines in runs-<tag>/<index>.
  std::map<int, int> runsOf(const std::string& tag) { return runsIn(dir.path() / ("runs-" + tag)); }

  // A stage whose tasks count their runs in runs-<tag>/, sleep, and write "<tag> <index>".
  std::string countedStage(const std::string& id, const std::string& tag, int tasks,
                           const std::string& sleep, const std::string& extra = "") {
    fs::create_directories(dir.path() / ("runs-" + tag));
    const std::string runs = (dir.path() / ("runs-" + tag)).string();
    return R"({"id": ")" + id + R"(", "tasks": )" + std::to_string(tasks) + extra +
           R"(, "command": ["sh", "-c", "echo {attempt} >> )" + runs + R"(/{task}; sleep )" +
           sleep + R"(; echo )" + tag + R"( {task} > \"$TIDE_OUTPUT_DIR/part-0\""]})";
  }

  // A one-task stage that gathers every input of `input` into the job's output.
  static std::string gatherStage(const std::string& input, const std::string& dependsOn) {
    return R"({"id": "gather", "depends_on": [)" + dependsOn +
           R"(], "tasks": 1, "command": ["sh", "-c", "cat \"$TIDE_INPUT_DIR\"/)" + input +
           R"(/part-* | sort > \"$TIDE_OUTPUT_DIR/part-0\""]})";
  }

  static std::string expectedLines(const std::string& tag, int tasks) {
    std::vector<std::string> lines;
    for (int i = 0; i < tasks; ++i) lines.push_back(tag + " " + std::to_string(i) + "\n");
    std::sort(lines.begin(), lines.end());
    std::string text;
    for (const auto& line : lines) text += line;
    return text;
  }

  std::string postJob(const std::string& json) {
    return am->postJson("api/v1/jobs", json)["id"].GetString();
  }

  bool jobEnded(const std::string& jobId, std::chrono::milliseconds timeout) {
    return eventually([&] { return jobState(jobId) != "RUNNING"; }, timeout);
  }

  Conf sessionConf() {
    Conf conf = restartConf();
    conf.push_back({"dynamicAllocation.cachedExecutorIdleTimeout", "infinity"});
    return conf;
  }

  // The executors of the previous attempt have all registered with this one.
  bool allAdoptedRegistered() {
    return eventually(
        [&] {
          const auto s = status();
          return s["containers"]["starting"].GetInt() == 0 && liveExecutors() == 2;
        },
        30s);
  }

  // The executors' logs (their containers' stderr), for failure messages.
  std::string executorLogs() {
    std::string logs;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir.path() / "cluster", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string path = it->path().string();
      if (it->path().filename() == "stderr" && path.find("_000001/") == std::string::npos) {
        const std::string text = testing_support::readFile(path);
        logs += "--- " + path + ":\n" + text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
      }
    }
    return logs;
  }

  // Decisions whose reason contains `text`.
  int decisionsSaying(const std::string& text) {
    int found = 0;
    const rapidjson::Document decisions = am->getJson("api/v1/allocation/decisions?limit=200");
    for (const auto& d : decisions["decisions"].GetArray()) {
      if (std::string(d["why"].GetString()).find(text) != std::string::npos) ++found;
    }
    return found;
  }
};

TEST_F(AmRestartSessionTest, ASessionJobRunningWhenTheAmDiesResumesAndLaterJobsContinueTheIds) {
  startCluster(2, 5);
  submit(R"({"name": "first", "stages": [{"id": "s", "tasks": 1, "builtin": "noop"}]})",
         sessionConf(), /*session=*/true);
  ASSERT_TRUE(jobEnded("job-1", 60s));
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED");

  const int tasks = 16;
  const fs::path out = dir.path() / "out-2";
  const std::string second = postJob(R"({"name": "posted", "output": ")" + out.string() +
                                     R"(", "stages": [)" + countedStage("map", "map", tasks, "1") +
                                     ", " + gatherStage("map", R"("map")") + "]}");
  ASSERT_EQ(second, "job-2");
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded(second) >= 5; }, 60s))
      << "the posted job did not get going";
  // Every task started so far: committed, or running on an executor that will be adopted.
  std::set<int> started;
  for (const auto& [task, runs] : runsOf("map")) started.insert(task);

  killAmAndWaitForNextAttempt();
  EXPECT_EQ(status()["recoveredFromAttempt"].GetInt(), 1);
  ASSERT_TRUE(jobEnded(second, 120s));
  ASSERT_EQ(jobState(second), "SUCCEEDED") << job(second)["message"].GetString();
  EXPECT_EQ(testing_support::readFile((out / "part-0").string()), expectedLines("map", tasks));
  const auto runs = runsOf("map");
  ASSERT_EQ(runs.size(), static_cast<size_t>(tasks));
  for (const auto& [task, count] : runs) {
    if (started.count(task) != 0) {
      EXPECT_EQ(count, 1) << "map task " << task << " started before the kill ran again";
    }
  }
  // The first job is there as it ended; the session goes on, with the next job id.
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  const std::string third =
      postJob(R"({"name": "after", "stages": [{"id": "s", "tasks": 2, "builtin": "noop"}]})");
  EXPECT_EQ(third, "job-3");
  ASSERT_TRUE(jobEnded(third, 60s));
  EXPECT_EQ(jobState(third), "SUCCEEDED");
  EXPECT_EQ(deploy::isFinal(client->application(appId)), false) << "a session AM stays up";
  client->kill(appId);
  waitForEnd(30s);
  expectNothingLeft();
}

TEST_F(AmRestartSessionTest, BoundsChangedAtRuntimeAreTheNextAttemptsBounds) {
  startCluster(2, 5);
  Conf conf = sessionConf();
  conf.push_back({"dynamicAllocation.minExecutors", "0"});
  conf.push_back({"dynamicAllocation.initialExecutors", "1"});
  conf.push_back({"dynamicAllocation.maxExecutors", "4"});
  submit(R"({"name": "first", "stages": [{"id": "s", "tasks": 1, "builtin": "noop"}]})", conf,
         /*session=*/true);
  ASSERT_TRUE(jobEnded("job-1", 60s));
  // At most 2 executors from now on, and at least 2.
  const auto applied = am->putJson("api/v1/allocation/bounds", R"({"min": 2, "max": 2})");
  ASSERT_EQ(applied["max"].GetInt(), 2);
  ASSERT_TRUE(eventually([&] { return liveExecutors() == 2; }, 60s));
  // A backlog of 24 tasks (12 two-core executors' worth) that would raise the target to 4 with
  // the configured bounds.
  const std::string posted =
      postJob(R"({"name": "wide", "stages": [)" + countedStage("w", "w", 24, "1") + "]}");
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded(posted, "w") >= 2; }, 60s));

  killAmAndWaitForNextAttempt();
  const auto second = status();
  EXPECT_EQ(second["allocation"]["min"].GetInt(), 2);
  EXPECT_EQ(second["allocation"]["max"].GetInt(), 2);
  EXPECT_TRUE(eventually([&] { return decisionsSaying("recovered from attempt 1") >= 1; }, 10s));
  ASSERT_TRUE(jobEnded(posted, 120s));
  EXPECT_EQ(jobState(posted), "SUCCEEDED");
  // With its backlog the new attempt would have started more executors under the configured
  // max of 4: it started none (e1 and e2 are all the application ever launched), and ran the
  // job on the two it adopted.
  const auto end = status();
  EXPECT_EQ(end["allocation"]["max"].GetInt(), 2);
  EXPECT_EQ(end["allocation"]["launched"].GetInt(), 2);
  EXPECT_EQ(end["allocation"]["peak"].GetInt(), 2);
  EXPECT_EQ(executorContainers().size(), 2u);
  EXPECT_EQ(executorContainers().count("e1") + executorContainers().count("e2"), 2u);
  client->kill(appId);
  waitForEnd(30s);
  expectNothingLeft();
}

TEST_F(AmRestartSessionTest, PersistedStagesStayReadableAndUnpersistedOnesStayGone) {
  startCluster(2, 5);
  const int tasks = 4;
  submit(R"({"name": "kept", "stages": [)" +
             countedStage("map", "map", tasks, "0", R"(, "persist": true)") + "]}",
         sessionConf(), /*session=*/true);
  ASSERT_TRUE(jobEnded("job-1", 60s));
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED");
  const std::string dropped =
      postJob(R"({"name": "dropped", "stages": [)" +
              countedStage("other", "other", 2, "0", R"(, "persist": true)") + "]}");
  ASSERT_TRUE(jobEnded(dropped, 60s));
  ASSERT_EQ(jobState(dropped), "SUCCEEDED");
  am->deleteJson("api/v1/cache/" + dropped + "/other");
  ASSERT_EQ(am->getJson("api/v1/cache")["stages"].Size(), 1u);

  killAmAndWaitForNextAttempt();
  ASSERT_TRUE(allAdoptedRegistered());
  const auto cache = am->getJson("api/v1/cache");
  ASSERT_EQ(cache["stages"].Size(), 1u);
  EXPECT_EQ(std::string(cache["stages"][0]["id"].GetString()), "job-1/map");
  EXPECT_EQ(cache["stages"][0]["missing"].GetInt64(), 0);

  // A later job reads the persisted stage where it is: the map tasks do not run again.
  const fs::path out = dir.path() / "out-3";
  const std::string reader =
      postJob(R"({"name": "reader", "output": ")" + out.string() + R"(", "stages": [)" +
              gatherStage("job-1/map", R"("job-1/map")") + "]}");
  ASSERT_TRUE(jobEnded(reader, 60s));
  ASSERT_EQ(jobState(reader), "SUCCEEDED") << job(reader)["message"].GetString();
  EXPECT_EQ(testing_support::readFile((out / "part-0").string()), expectedLines("map", tasks));
  for (const auto& [task, count] : runsOf("map")) {
    EXPECT_EQ(count, 1) << "persisted map task " << task << " ran again";
  }
  EXPECT_EQ(runsOf("map").size(), static_cast<size_t>(tasks));
  // The unpersisted stage stays gone: a job naming it is refused, naming what is persisted.
  const rest::HttpResponse refused =
      am->request("POST", "api/v1/jobs",
                  R"({"name": "late", "stages": [)" +
                      gatherStage(dropped + "/other", "\"" + dropped + "/other\"") + "]}",
                  {{"Content-Type", "application/json"}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("is not a persisted stage"));
  EXPECT_THAT(refused.body, HasSubstr("persisted: job-1/map"));
  client->kill(appId);
  waitForEnd(30s);
  expectNothingLeft();
}

// Item 2 of the issue: executors register again "with the blocks they hold". Map outputs are
// committed, and a gate task keeps the reading stage from starting while the AM is killed and
// one executor loses the blocks of one map task (its block directory removed). The new attempt
// learns it from that executor's registration and runs that map task again before anything
// reads it; every other map output is read where it is.
TEST_F(AmRestartSessionTest, AnAdoptedExecutorReportsItsBlocksAndOnlyAMissingOutputIsMadeAgain) {
  startCluster(2, 5);
  const int tasks = 4;
  const fs::path gate = dir.path() / "gate";
  const fs::path out = dir.path() / "out";
  const std::string wait = R"({"id": "wait", "tasks": 1, "command": ["sh", "-c", "while [ ! -e )" +
                           gate.string() + R"( ]; do sleep 0.1; done"]})";
  submit(R"({"name": "gated", "output": ")" + out.string() + R"(", "stages": [)" +
             countedStage("map", "map", tasks, "0") + ", " + wait + ", " +
             gatherStage("map", R"("map", "wait")") + "]}",
         sessionConf(), /*session=*/true);
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1") == tasks; }, 60s));
  ASSERT_EQ(jobState("job-1"), "RUNNING");

  // Where map task 1's blocks are: <container>/blocks/job-1/map/1.
  fs::path lostBlocks;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir.path() / "cluster", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename() == "1" && p.parent_path().filename() == "map" &&
        p.parent_path().parent_path().filename() == "job-1" &&
        p.parent_path().parent_path().parent_path().filename() == "blocks") {
      lostBlocks = p;
    }
  }
  ASSERT_FALSE(lostBlocks.empty()) << "map task 1's blocks not found under the cluster";

  const auto first = status();
  ASSERT_EQ(::kill(static_cast<pid_t>(first["pid"].GetInt64()), SIGKILL), 0);
  // While no AM runs, the executor loses them.
  fs::remove_all(lostBlocks);
  ASSERT_TRUE(waitForNextAttempt(first["attemptId"].GetString(), 60s));
  // Made again as soon as its executor registered, with the gate still closed.
  ASSERT_TRUE(eventually([&] { return runsOf("map")[1] == 2; }, 60s))
      << "map task 1 was not run again after its executor registered without its blocks\n"
      << executorLogs();
  // (The decision log is served from the status snapshot, published a moment later.)
  EXPECT_TRUE(eventually(
      [&] { return decisionsSaying("without the blocks of 1 committed task outputs") >= 1; }, 10s));
  std::ofstream(gate.string()) << "open\n";
  ASSERT_TRUE(jobEnded("job-1", 60s));
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED") << job("job-1")["message"].GetString();
  EXPECT_EQ(testing_support::readFile((out / "part-0").string()), expectedLines("map", tasks));
  // The other map outputs were read where they were; no reading task failed to fetch.
  const auto runs = runsOf("map");
  for (const auto& [task, count] : runs) {
    EXPECT_EQ(count, task == 1 ? 2 : 1) << "map task " << task;
  }
  const auto doc = job("job-1");
  EXPECT_EQ((*stage(doc, "gather"))["failedAttempts"].GetInt64(), 0);
  client->kill(appId);
  waitForEnd(30s);
  expectNothingLeft();
}

// The journal is the only memory of what the dead attempt did: a next attempt that cannot read
// it (here: written by a newer tide) fails with the reason instead of starting over.
TEST_F(AmRestartSessionTest, AJournalOfANewerVersionFailsTheNextAttemptWithTheReason) {
  ASSERT_NO_FATAL_FAILURE(runUntilMapsDone(2, 5, 8, "2", 1));
  const fs::path journal = dir.path() / "staging" / appId / "am-journal";
  ASSERT_TRUE(fs::exists(journal)) << journal;
  const auto first = status();
  const pid_t amPid = static_cast<pid_t>(first["pid"].GetInt64());
  // Stopped, the AM writes nothing more; the file is replaced, then the AM dies.
  ASSERT_EQ(::kill(amPid, SIGSTOP), 0);
  const std::string text = testing_support::readFile(journal.string());
  ASSERT_EQ(text.rfind("tide-am-journal 2\n", 0), 0u);
  {
    std::ofstream out(journal.string() + ".new");
    out << "tide-am-journal 3\n" << text.substr(text.find('\n') + 1);
  }
  fs::rename(journal.string() + ".new", journal);
  ASSERT_EQ(::kill(amPid, SIGKILL), 0);
  const rest::ApplicationReport report = waitForEnd(60s);
  EXPECT_EQ(report.finalStatus, "FAILED");
  EXPECT_THAT(report.diagnostics, HasSubstr(journal.string()));
  EXPECT_THAT(report.diagnostics,
              HasSubstr("journal version 3 was written by a newer tide; this tide-am reads "
                        "version 2"));
  // Left for the operator to look at, not replaced by a fresh start.
  EXPECT_EQ(testing_support::readFile(journal.string()).rfind("tide-am-journal 3\n", 0), 0u);
  expectNothingLeft();
}

}  // namespace
}  // namespace tide::deploy
