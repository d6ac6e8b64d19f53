// Pipelining (scheduler.queuedTasksPerExecutor) with real processes: tide-rm, tide-nm, tide-am
// and two one-slot tide-executors on 127.0.0.1. The jobs' first tasks are short, so the AM
// queues tasks on the executors; later tasks wait for a gate file the test creates, so the
// executors hold queued tasks behind running ones for as long as the test needs (no timing).
// Each task appends its attempt to runs/<task> when it ends: every task must have run to its
// end exactly once, whatever happened to the tasks queued behind the blocked ones (an executor
// killed, the AM killed, another executor idle).
//
// The tests named ...AtTheDefault set neither scheduler.queuedTasksPerExecutor nor
// scheduler.queuedTaskWait, so they check the shipped default (32 tasks, 50 ms): there queued
// tasks also go back on their own after 50 ms, so instead of holding them behind a gate these
// tests keep a stream of short tasks flowing (each sync refills the executors' queues) and
// check from the executors' trace lines that tasks were queued at all.

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/faults/am_restart_fixture.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;

class PipeliningTest : public AmRestartTest {
 protected:
  // Tasks whose index is in [blockFrom, blockTo) wait for the gate; every task then appends its
  // attempt to runs/<task>. They write no output blocks: a task's blocks lost with a killed
  // executor would be made again (lineage), which is another matter than the one tested here.
  std::string gatedJob(int tasks, int blockFrom, int blockTo) {
    fs::create_directories(dir.path() / "runs");
    const std::string runs = (dir.path() / "runs").string();
    const std::string gate = (dir.path() / "gate").string();
    return R"({"name": "gated", "stages": [{"id": "s", "tasks": )" + std::to_string(tasks) +
           R"(, "command": ["sh", "-c", "if [ {task} -ge )" + std::to_string(blockFrom) +
           " ] && [ {task} -lt " + std::to_string(blockTo) + " ]; then while [ ! -e " + gate +
           " ]; do sleep 0.02; done; fi; echo {attempt} >> " + runs + R"(/{task}"]}]})";
  }

  // Two one-slot executors; queued tasks never go back on their own within the test (only
  // when the AM asks for them), so what the test sees does not depend on timing.
  Conf pipelinedConf() {
    Conf conf = restartConf();
    conf.insert(conf.end(), {{"executor.cores", "1"},
                             {"scheduler.queuedTasksPerExecutor", "2"},
                             {"scheduler.queuedTaskWait", "10min"}});
    return conf;
  }

  // `tasks` short tasks; each appends its attempt to runs/<task> when it ends. With
  // `failOnGate`, a task fails (exit 3) once the gate exists, so the job fails when one index
  // has failed task.maxFailures times. Task `straggler` (when >= 0) sleeps 60 s in its first
  // attempt only, so a speculative copy of it wins.
  std::string streamJob(int tasks, bool failOnGate = false, int straggler = -1) {
    fs::create_directories(dir.path() / "runs");
    const std::string runs = (dir.path() / "runs").string();
    const std::string gate = (dir.path() / "gate").string();
    std::string script;
    if (failOnGate) script += "if [ -e " + gate + " ]; then exit 3; fi; ";
    if (straggler >= 0) {
      script += "if [ {task} -eq " + std::to_string(straggler) +
                " ] && [ {attempt} -eq 0 ]; then sleep 60; fi; ";
    }
    script += "echo {attempt} >> " + runs + "/{task}";
    return R"({"name": "stream", "stages": [{"id": "s", "tasks": )" + std::to_string(tasks) +
           R"(, "command": ["sh", "-c", ")" + script + R"("]}]})";
  }

  // Two one-slot executors at the default queue settings; the executors log their syncs.
  Conf defaultQueueConf() {
    Conf conf = restartConf();
    conf.insert(conf.end(), {{"executor.cores", "1"}, {"log.level", "trace"}});
    return conf;
  }

  // The most launches any executor got in one sync reply: more than its one slot means the AM
  // queued tasks on it.
  int mostLaunchesInOneSync() {
    int most = 0;
    for (const std::string& log : executorLogs()) {
      for (size_t at = log.find(", got "); at != std::string::npos;
           at = log.find(", got ", at + 1)) {
        most = std::max(most, std::atoi(log.c_str() + at + 6));
      }
    }
    return most;
  }

  // Task processes of this test still alive (their command line names the runs folder).
  std::vector<pid_t> taskProcessesLeft() {
    std::vector<pid_t> left;
    const std::string runs = (dir.path() / "runs").string();
    for (pid_t pid : testing_support::processesUnder(dir.path())) {
      std::string cmdline = testing_support::readFile("/proc/" + std::to_string(pid) + "/cmdline");
      if (cmdline.find(runs) != std::string::npos) left.push_back(pid);
    }
    return left;
  }

  // The whole log of the first AM attempt (amLog() has only its tail).
  std::string firstAmLog() {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir.path() / "cluster", ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->path().filename() == "tasks") it.disable_recursion_pending();
      const std::string path = it->path().string();
      if (it->path().filename() == "stderr" && path.find("_01_000001") != std::string::npos) {
        return testing_support::readFile(path);
      }
    }
    return "";
  }

  int64_t succeeded() { return mapTasksSucceeded("job-1", "s"); }

  void openGate() { std::ofstream(dir.path() / "gate") << "open\n"; }

  int64_t tasksRunning() { return status()["tasks"]["running"].GetInt64(); }

  // Every task ran to its end exactly once.
  void expectEveryTaskRanOnce(int tasks) {
    const std::map<int, int> runs = runsIn(dir.path() / "runs");
    EXPECT_EQ(runs.size(), static_cast<size_t>(tasks));
    for (const auto& [task, count] : runs) {
      EXPECT_EQ(count, 1) << "task " << task << " ran to its end " << count << " times";
    }
  }

  // What each executor logged (its container's stderr; the AMs' containers are *_000001).
  std::vector<std::string> executorLogs() {
    std::vector<std::string> logs;
    // Task folders come and go while the walk runs: it does not go into them, and walks again
    // when a folder vanished under it anyway.
    for (int walk = 0; walk < 5; ++walk) {
      logs.clear();
      std::error_code ec;
      fs::recursive_directory_iterator it(dir.path() / "cluster", ec);
      for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
        const std::string path = it->path().string();
        if (it->path().filename() == "tasks") it.disable_recursion_pending();
        if (it->path().filename() == "stderr" && path.find("_000001") == std::string::npos &&
            path.find("/tasks/") == std::string::npos && path.find("/logs/") != std::string::npos) {
          logs.push_back(testing_support::readFile(path));
        }
      }
      if (!ec) break;
    }
    return logs;
  }

  // Every executor has synced again since the last sync that brought it launches, so it holds
  // them (a reply can wait for the journal's fsync; an AM killed meanwhile never sends it).
  // Reads the executors' trace lines ("sync: reported N, got M launches, ...").
  bool everyExecutorHoldsItsLaunches() {
    const std::vector<std::string> logs = executorLogs();
    if (logs.size() != 2) return false;
    for (const std::string& log : logs) {
      size_t lastWithLaunches = std::string::npos;
      size_t lastSync = std::string::npos;
      for (size_t at = log.find("sync: reported"); at != std::string::npos;
           at = log.find("sync: reported", at + 1)) {
        lastSync = at;
        if (log.compare(log.find(", got ", at) + 6, 2, "0 ") != 0) lastWithLaunches = at;
      }
      if (lastSync == std::string::npos || lastSync == lastWithLaunches) return false;
    }
    return true;
  }

  // Two executors, `tasks` tasks of which those from the 9th on block: both executors end up
  // in a blocked task, each with two tasks queued behind it and holding its launches.
  void startWithQueuedBlockedTasks(int tasks) {
    startCluster(2, 5);
    Conf conf = pipelinedConf();
    conf.emplace_back("log.level", "trace");  // the executors' sync lines
    submit(gatedJob(tasks, 8, tasks), conf, /*session=*/false);
    ASSERT_TRUE(eventually([&] { return tasksRunning() == 6; }, 60s))
        << "running (and queued) tasks: " << tasksRunning();
    ASSERT_TRUE(eventually([&] { return everyExecutorHoldsItsLaunches(); }, 30s));
  }

  // Lets the blocked tasks finish; the application then succeeds with every one of its `tasks`
  // tasks run to its end once, and nothing of the run is left.
  void openGateAndExpectEveryTaskRanOnce(int tasks) {
    openGate();
    const rest::ApplicationReport report = waitForEnd(120s);
    ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
    expectEveryTaskRanOnce(tasks);
    expectNothingLeft();
  }

  static int count(const std::string& text, const std::string& what) {
    int found = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++found;
    }
    return found;
  }
};

TEST_F(PipeliningTest, TasksQueuedOnAKilledExecutorRunElsewhereExactlyOnce) {
  const int tasks = 24;
  ASSERT_NO_FATAL_FAILURE(startWithQueuedBlockedTasks(tasks));
  const std::optional<Executor> victim = waitForBusyExecutor(10s);
  ASSERT_TRUE(victim.has_value());
  ASSERT_EQ(::kill(victim->pid, SIGKILL), 0);
  // Its running task and its queued ones go back; a new executor replaces it.
  ASSERT_TRUE(eventually(
      [&] {
        const auto listed = executors();
        for (const auto& e : listed["executors"].GetArray()) {
          if (victim->id == e["id"].GetString()) return false;
        }
        return listed["executors"].Size() == 2;
      },
      60s));
  openGateAndExpectEveryTaskRanOnce(tasks);
}

TEST_F(PipeliningTest, TasksQueuedWhenTheAmDiesRunOnceUnderItsNextAttempt) {
  const int tasks = 24;
  ASSERT_NO_FATAL_FAILURE(startWithQueuedBlockedTasks(tasks));
  ASSERT_NO_FATAL_FAILURE(killAmAndWaitForNextAttempt());
  // Each adopted executor drops its two queued tasks when it registers with the new attempt
  // (which runs them again) and keeps its running one.
  ASSERT_TRUE(eventually(
      [&] {
        int dropped = 0;
        for (const std::string& log : executorLogs()) {
          dropped += count(log, "dropping 2 queued tasks that had not started");
        }
        return dropped == 2;
      },
      60s));
  openGateAndExpectEveryTaskRanOnce(tasks);
}

// Once with queued tasks that only go back when the AM asks (queuedTaskWait of 10 min), once at
// the default settings (they also go back on their own after 50 ms).
class PipeliningStragglerTest : public PipeliningTest, public testing::WithParamInterface<bool> {};

TEST_P(PipeliningStragglerTest, TasksQueuedBehindALongTaskRunOnTheIdleExecutorInstead) {
  const bool atTheDefault = GetParam();
  const int tasks = 40;
  const int slow = 5;  // blocks until the gate opens; every other task is short
  startCluster(2, 5);
  submit(gatedJob(tasks, slow, slow + 1), atTheDefault ? defaultQueueConf() : pipelinedConf(),
         /*session=*/false);
  // Every other task finishes while the slow one still runs: those queued behind it were
  // taken back for the executor that ran out of work.
  ASSERT_TRUE(eventually([&] { return succeeded() == tasks - 1; }, 60s))
      << "succeeded: " << succeeded() << ", running (and queued) " << tasksRunning();
  // (The status is a snapshot of the last allocation tick: it catches up within a tick.)
  EXPECT_TRUE(eventually([&] { return tasksRunning() == 1; }, 10s)) << tasksRunning();
  if (atTheDefault) {
    EXPECT_GE(mostLaunchesInOneSync(), 2) << "no task was queued";
  }
  openGateAndExpectEveryTaskRanOnce(tasks);
}

INSTANTIATE_TEST_SUITE_P(QueueSettings, PipeliningStragglerTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("AtTheDefault")
                                             : std::string("TakenBackOnlyWhenAsked");
                         });

// A stream of short tasks keeps both executors' queues filled; the AM is killed -9 in the
// middle. What the executors hold queued goes back (after queuedTaskWait, in the sync the next
// attempt gets) or is dropped when they register with it; it runs every index once.
TEST_F(PipeliningTest, TasksQueuedWhenTheAmDiesRunOnceUnderItsNextAttemptAtTheDefault) {
  const int tasks = 1500;
  startCluster(2, 5);
  submit(streamJob(tasks), defaultQueueConf(), /*session=*/false);
  // Queued tasks count as running: more than the two slots means some are queued right now.
  ASSERT_TRUE(eventually([&] { return succeeded() >= 200 && tasksRunning() > 2; }, 60s))
      << "succeeded " << succeeded() << ", running (and queued) " << tasksRunning();
  ASSERT_NO_FATAL_FAILURE(killAmAndWaitForNextAttempt());
  const rest::ApplicationReport report = waitForEnd(120s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  EXPECT_GE(mostLaunchesInOneSync(), 2) << "no task was queued";
  expectEveryTaskRanOnce(tasks);
  expectNothingLeft();
}

// A job fails (every task fails once the gate is there) while the executors hold queued tasks
// of it: nothing of it runs on, and the executors are idle afterwards (the session AM stays).
TEST_F(PipeliningTest, AJobThatFailsLeavesNothingQueuedOrRunningAtTheDefault) {
  startCluster(2, 5);
  submit(streamJob(100000, /*failOnGate=*/true), defaultQueueConf(), /*session=*/true);
  ASSERT_TRUE(eventually([&] { return succeeded() >= 200 && tasksRunning() > 2; }, 60s))
      << "succeeded " << succeeded() << ", running (and queued) " << tasksRunning();
  EXPECT_GE(mostLaunchesInOneSync(), 2) << "no task was queued";
  openGate();
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "FAILED");
  // The executors run and hold nothing, and no task process of the job is left.
  EXPECT_TRUE(eventually(
      [&] {
        const rapidjson::Document listed = executors();
        int busy = 0;
        for (const auto& e : listed["executors"].GetArray()) busy += e["runningTasks"].GetInt();
        return busy == 0 && listed["executors"].Size() == 2 && tasksRunning() == 0 &&
               taskProcessesLeft().empty();
      },
      30s))
      << "running (and queued) " << tasksRunning() << ", task processes left "
      << taskProcessesLeft().size();
  // Nothing ran to its end after the job failed: the count of runs no longer grows.
  const std::map<int, int> afterFailure = runsIn(dir.path() / "runs");
  EXPECT_TRUE(taskProcessesLeft().empty());
  EXPECT_EQ(runsIn(dir.path() / "runs"), afterFailure);
  for (const auto& [task, count] : afterFailure) {
    EXPECT_EQ(count, 1) << "task " << task << " ran to its end " << count << " times";
  }
  expectNothingLeft();
}

// Decommissioning at the default: an executor asked to leave (SIGPWR) during a stream of short
// queued tasks starts none of those it holds queued, hands them back, and they run elsewhere;
// every index runs to its end once.
TEST_F(PipeliningTest, ADecommissioningExecutorHandsBackItsQueuedTasksAtTheDefault) {
  const int tasks = 1500;
  startCluster(2, 5);
  Conf conf = defaultQueueConf();
  conf.emplace_back("decommission.enabled", "true");
  submit(streamJob(tasks), conf, /*session=*/false);
  ASSERT_TRUE(eventually([&] { return succeeded() >= 200 && tasksRunning() > 2; }, 60s))
      << "succeeded " << succeeded() << ", running (and queued) " << tasksRunning();
  const std::optional<Executor> leaving = waitForBusyExecutor(10s);
  ASSERT_TRUE(leaving.has_value());
  ASSERT_EQ(::kill(leaving->pid, SIGPWR), 0);
  const rest::ApplicationReport report = waitForEnd(120s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  EXPECT_GE(mostLaunchesInOneSync(), 2) << "no task was queued";
  const std::string log = firstAmLog();
  EXPECT_NE(log.find("decommissioning " + leaving->id + ": asked to leave"), std::string::npos);
  // Whether it held queued tasks at the very moment it asked to leave is timing at these
  // settings (most runs: "asking back N queued tasks"); DecommissionIntegrationTest's
  // ADecommissioningExecutorHandsBackItsQueuedTasks holds them for as long as it needs.
  expectEveryTaskRanOnce(tasks);
  expectNothingLeft();
}

// Speculation at the default: task 150's first attempt is a straggler (60 s) among short tasks
// that are queued. Its copy goes to the other executor's free slot (a copy is never queued, and
// the straggler's executor has its only slot taken), wins, and the stage ends long before the
// straggler would; every index runs to its end once (the straggler is killed).
TEST_F(PipeliningTest, AStragglersCopyRunsOnTheOtherExecutorAndWinsAtTheDefault) {
  const int tasks = 400;
  startCluster(2, 5);
  Conf conf = defaultQueueConf();
  conf.insert(conf.end(), {{"speculation", "true"},
                           {"speculation.quantile", "0.5"},
                           {"speculation.multiplier", "1.5"}});
  const auto started = std::chrono::steady_clock::now();
  submit(streamJob(tasks, /*failOnGate=*/false, /*straggler=*/150), conf, /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 40s))
      << "the straggler was not overtaken: succeeded " << succeeded();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 40s);
  const auto doc = job("job-1");
  EXPECT_EQ(std::string(doc["state"].GetString()), "SUCCEEDED");
  EXPECT_GE((*stage(doc, "s"))["speculativeLaunches"].GetInt64(), 1);
  EXPECT_GE(mostLaunchesInOneSync(), 2) << "no task was queued";
  EXPECT_TRUE(eventually([&] { return taskProcessesLeft().empty(); }, 30s))
      << "the straggler still runs";
  expectEveryTaskRanOnce(tasks);
  expectNothingLeft();
}

}  // namespace
}  // namespace tide::deploy
