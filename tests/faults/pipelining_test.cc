// Pipelining (scheduler.queuedTasksPerExecutor) with real processes: tide-rm, tide-nm, tide-am
// and two one-slot tide-executors on 127.0.0.1. The jobs' first tasks are short, so the AM
// queues tasks on the executors; later tasks wait for a gate file the test creates, so the
// executors hold queued tasks behind running ones for as long as the test needs (no timing).
// Each task appends its attempt to runs/<task> when it ends: every task must have run to its
// end exactly once, whatever happened to the tasks queued behind the blocked ones (an executor
// killed, the AM killed, another executor idle).

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
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path() / "cluster", ec)) {
      const std::string path = entry.path().string();
      if (entry.path().filename() == "stderr" && path.find("_000001") == std::string::npos &&
          path.find("/tasks/") == std::string::npos && path.find("/logs/") != std::string::npos) {
        logs.push_back(testing_support::readFile(path));
      }
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

TEST_F(PipeliningTest, TasksQueuedBehindALongTaskRunOnTheIdleExecutorInstead) {
  const int tasks = 40;
  const int slow = 5;  // blocks until the gate opens; every other task is short
  startCluster(2, 5);
  submit(gatedJob(tasks, slow, slow + 1), pipelinedConf(), /*session=*/false);
  // Every other task finishes while the slow one still runs: those queued behind it were
  // taken back for the executor that ran out of work (they never go back on their own here).
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1", "s") == tasks - 1; }, 60s))
      << "succeeded: " << mapTasksSucceeded("job-1", "s") << ", running (and queued) "
      << tasksRunning();
  // (The status is a snapshot of the last allocation tick: it catches up within a tick.)
  EXPECT_TRUE(eventually([&] { return tasksRunning() == 1; }, 10s)) << tasksRunning();
  openGateAndExpectEveryTaskRanOnce(tasks);
}

}  // namespace
}  // namespace tide::deploy
