// The TaskRunner on its own: real processes in a temp work dir, no AM.

#include "executor/task_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide::executor {
namespace {

using rest::TaskLaunch;
using rest::TaskStatusUpdate;
using std::chrono::steady_clock;
using testing_support::eventually;
using testing_support::processGone;
using testing_support::readFile;

constexpr std::chrono::milliseconds kBound{10000};

TaskLaunch commandTask(int64_t taskId, std::string script) {
  TaskLaunch launch;
  launch.taskId = taskId;
  launch.jobId = "j1";
  launch.stageId = "s1";
  launch.index = taskId;
  launch.kind = "command";
  launch.argv = {"/bin/sh", "-c", std::move(script)};
  return launch;
}

TaskLaunch builtinTask(int64_t taskId, const std::string& kind, int64_t sleepMs = 0) {
  TaskLaunch launch;
  launch.taskId = taskId;
  launch.stageId = "s1";
  launch.kind = kind;
  launch.sleepMs = sleepMs;
  return launch;
}

// Block `path` of upstream stage "map", task `mapIndex`, held by `executorId`.
rest::BlockInput mapInput(int64_t mapIndex, const std::string& executorId,
                          const std::string& path) {
  rest::BlockInput input;
  input.stageId = "map";
  input.mapIndex = mapIndex;
  input.executorId = executorId;
  input.path = path;
  return input;
}

class TaskRunnerTest : public ::testing::Test {
 protected:
  TaskRunnerOptions options(int slots = 4) {
    TaskRunnerOptions options;
    options.workDir = workDir_.path();
    options.slots = slots;
    options.environment = {"PATH=/usr/bin:/bin", "FOO=bar", "TIDE_APP_SECRET=s3cret"};
    options.killGracePeriod = 300;
    return options;
  }

  // Collects updates until `count` have arrived (or the bound passes).
  std::vector<TaskStatusUpdate> waitForUpdates(TaskRunner& runner, size_t count) {
    std::vector<TaskStatusUpdate> updates;
    const auto deadline = steady_clock::now() + kBound;
    while (updates.size() < count && steady_clock::now() < deadline) {
      runner.waitForUpdates(deadline);
      RunnerReport report;
      runner.collect(report);
      for (TaskStatusUpdate& update : report.updates) updates.push_back(std::move(update));
    }
    EXPECT_EQ(updates.size(), count);
    return updates;
  }

  TaskStatusUpdate runOne(TaskRunner& runner, const TaskLaunch& launch) {
    runner.launch(launch);
    std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 1);
    return updates.empty() ? TaskStatusUpdate{} : updates.front();
  }

  // Runs `script` as task `taskId` on a runner of its own; expects it to end in `state` with
  // `exitCode`.
  TaskStatusUpdate runScript(int64_t taskId, std::string script, rest::TaskState state,
                             int exitCode) {
    TaskRunner runner(options());
    TaskStatusUpdate update = runOne(runner, commandTask(taskId, std::move(script)));
    EXPECT_EQ(update.state, state);
    EXPECT_EQ(update.exitCode, exitCode);
    return update;
  }

  testing_support::TempDir workDir_;
};

TEST_F(TaskRunnerTest, NoopFinishesInsideLaunch) {
  TaskRunner runner(options());
  runner.launch(builtinTask(1, "noop"));
  RunnerReport report;
  runner.collect(report);
  ASSERT_EQ(report.updates.size(), 1u);
  EXPECT_EQ(report.updates[0].taskId, 1);
  EXPECT_EQ(report.updates[0].state, rest::TaskState::kFinished);
  EXPECT_TRUE(report.running.empty());
  EXPECT_EQ(report.freeSlots, 4);
}

TEST_F(TaskRunnerTest, SleepFinishesWhenTheClockSaysSo) {
  ManualClock clock(1000);
  TaskRunnerOptions runnerOptions = options(2);
  runnerOptions.clock = &clock;
  TaskRunner runner(runnerOptions);
  runner.launch(builtinTask(5, "sleep", 5000));
  RunnerReport report;
  runner.collect(report);
  EXPECT_TRUE(report.updates.empty());
  EXPECT_EQ(report.running, std::vector<int64_t>{5});
  EXPECT_EQ(report.freeSlots, 1);

  clock.advance(4999);
  runner.wake();
  EXPECT_FALSE(runner.hasUpdates());
  clock.advance(1);
  runner.wake();
  std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 1);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kFinished);
  EXPECT_EQ(updates[0].durationMs, 5000);
  EXPECT_EQ(runner.freeSlots(), 2);
}

TEST_F(TaskRunnerTest, SleepTimesOut) {
  ManualClock clock;
  TaskRunnerOptions runnerOptions = options();
  runnerOptions.clock = &clock;
  TaskRunner runner(runnerOptions);
  TaskLaunch launch = builtinTask(1, "sleep", 60'000);
  launch.timeoutMs = 2000;
  runner.launch(launch);
  clock.advance(2000);
  runner.wake();
  std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 1);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kFailed);
  EXPECT_EQ(updates[0].reason, "timed out after 2s");
}

TEST_F(TaskRunnerTest, KilledSleepIsKilledAtOnce) {
  TaskRunner runner(options());
  runner.launch(builtinTask(1, "sleep", 60'000));
  runner.kill(1);
  runner.kill(99);  // unknown: ignored
  RunnerReport report;
  runner.collect(report);
  ASSERT_EQ(report.updates.size(), 1u);
  EXPECT_EQ(report.updates[0].state, rest::TaskState::kKilled);
  EXPECT_TRUE(report.running.empty());
}

TEST_F(TaskRunnerTest, ARelaunchOfARunningTaskIsIgnored) {
  TaskRunner runner(options());
  runner.launch(builtinTask(1, "sleep", 60'000));
  runner.launch(builtinTask(1, "sleep", 60'000));
  EXPECT_EQ(runner.runningCount(), 1);
  EXPECT_EQ(runner.freeSlots(), 3);
}

TEST_F(TaskRunnerTest, CommandOutputGoesToItsTaskDirectory) {
  const TaskStatusUpdate update =
      runScript(3, "echo out; echo err >&2", rest::TaskState::kFinished, 0);
  EXPECT_EQ(update.stderrTail, "");
  const std::filesystem::path taskDir = workDir_.path() / "tasks" / "s1-3-0";
  EXPECT_EQ(readFile(taskDir / "stdout"), "out\n");
  EXPECT_EQ(readFile(taskDir / "stderr"), "err\n");
}

TEST_F(TaskRunnerTest, ANonZeroExitFailsWithItsCodeAndStderr) {
  const TaskStatusUpdate update =
      runScript(1, "echo 'it broke' >&2; exit 3", rest::TaskState::kFailed, 3);
  EXPECT_EQ(update.reason, "exited with code 3");
  EXPECT_EQ(update.stderrTail, "it broke\n");
}

TEST_F(TaskRunnerTest, ASignalledProcessReports128PlusTheSignal) {
  const TaskStatusUpdate update =
      runScript(1, "kill -9 $$", rest::TaskState::kFailed, 128 + SIGKILL);
  EXPECT_EQ(update.reason, "killed by signal 9");
}

TEST_F(TaskRunnerTest, StderrTailIsBounded) {
  TaskRunnerOptions runnerOptions = options();
  runnerOptions.stderrTailBytes = 4096;
  TaskRunner runner(runnerOptions);
  TaskStatusUpdate update = runOne(
      runner, commandTask(1,
                          "i=0; while [ $i -lt 400 ]; do echo 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' "
                          ">&2; i=$((i+1)); done; echo LAST >&2; exit 1"));
  EXPECT_EQ(update.state, rest::TaskState::kFailed);
  EXPECT_LE(update.stderrTail.size(), 4096u);
  EXPECT_GE(update.stderrTail.size(), 4000u);
  EXPECT_EQ(update.stderrTail.substr(update.stderrTail.size() - 5), "LAST\n");
}

TEST_F(TaskRunnerTest, TasksGetTheirVariablesButNotTheSecret) {
  TaskRunner runner(options());
  TaskLaunch launch = commandTask(12, "env");
  launch.jobId = "job-9";
  launch.stageId = "stage-4";
  launch.index = 7;
  launch.attempt = 2;
  launch.env = {{"EXTRA", "x y"}, {"FOO", "overridden"}, {"TIDE_APP_SECRET", "leak"}};
  TaskStatusUpdate update = runOne(runner, launch);
  ASSERT_EQ(update.state, rest::TaskState::kFinished) << update.reason;
  const std::string env = readFile(workDir_.path() / "tasks" / "stage-4-7-2" / "stdout");
  for (const char* expected :
       {"TIDE_TASK_INDEX=7\n", "TIDE_STAGE_ID=stage-4\n", "TIDE_ATTEMPT=2\n", "TIDE_JOB_ID=job-9\n",
        "TIDE_TASK_ID=12\n", "EXTRA=x y\n", "FOO=overridden\n", "PATH=/usr/bin:/bin\n"}) {
    EXPECT_NE(env.find(expected), std::string::npos) << expected << " missing from:\n" << env;
  }
  EXPECT_EQ(env.find("TIDE_APP_SECRET"), std::string::npos) << env;
}

TEST_F(TaskRunnerTest, WorkingDirectoryIsTheTaskDirOrTheLaunchCwd) {
  TaskRunner runner(options());
  TaskStatusUpdate update = runOne(runner, commandTask(1, "pwd"));
  ASSERT_EQ(update.state, rest::TaskState::kFinished);
  const std::filesystem::path taskDir = workDir_.path() / "tasks" / "s1-1-0";
  EXPECT_EQ(readFile(taskDir / "stdout"), taskDir.string() + "\n");

  std::filesystem::create_directories(workDir_.path() / "elsewhere");
  TaskLaunch launch = commandTask(2, "pwd");
  launch.cwd = (workDir_.path() / "elsewhere").string();
  update = runOne(runner, launch);
  ASSERT_EQ(update.state, rest::TaskState::kFinished);
  EXPECT_EQ(readFile(workDir_.path() / "tasks" / "s1-2-0" / "stdout"),
            (workDir_.path() / "elsewhere").string() + "\n");

  launch = commandTask(3, "pwd");
  launch.cwd = "no/such/dir";
  update = runOne(runner, launch);
  EXPECT_EQ(update.state, rest::TaskState::kFailed);
  EXPECT_NE(update.reason.find("no/such/dir"), std::string::npos) << update.reason;
}

TEST_F(TaskRunnerTest, AMissingProgramFailsWith127AndNamesIt) {
  TaskRunner runner(options());
  TaskLaunch launch = commandTask(1, "");
  launch.argv = {"tide-no-such-program", "arg"};
  TaskStatusUpdate update = runOne(runner, launch);
  EXPECT_EQ(update.state, rest::TaskState::kFailed);
  EXPECT_EQ(update.exitCode, 127);
  EXPECT_NE(update.reason.find("tide-no-such-program"), std::string::npos) << update.reason;
  EXPECT_NE(update.reason.find("No such file or directory"), std::string::npos) << update.reason;
}

TEST_F(TaskRunnerTest, TimeoutKillsTheWholeProcessGroup) {
  TaskRunner runner(options());
  // The shell and its background sleep both ignore SIGTERM, so only the SIGKILL that follows
  // after the grace period ends them: the whole group must get it.
  TaskLaunch launch =
      commandTask(1, "trap '' TERM; sleep 60 & echo $! > grandchild.pid; wait; wait");
  launch.timeoutMs = 500;
  runner.launch(launch);
  const std::filesystem::path pidFile = workDir_.path() / "tasks" / "s1-1-0" / "grandchild.pid";
  ASSERT_TRUE(
      eventually([&] { return readFile(pidFile).find('\n') != std::string::npos; }, kBound));
  const pid_t grandchild = std::stoi(readFile(pidFile));

  std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 1);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kFailed);
  EXPECT_EQ(updates[0].reason, "timed out after 500ms");
  EXPECT_EQ(updates[0].exitCode, 128 + SIGKILL);
  EXPECT_GE(updates[0].durationMs, 500);
  EXPECT_TRUE(eventually([&] { return processGone(grandchild); }, kBound))
      << "grandchild " << grandchild << " survived the timeout";
}

TEST_F(TaskRunnerTest, KillStopsACommandAsKilled) {
  TaskRunner runner(options());
  runner.launch(commandTask(1, "exec sleep 60"));
  runner.launch(builtinTask(2, "noop"));
  EXPECT_EQ(runner.runningCount(), 1);
  runner.kill(1);
  std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 2);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[1].taskId, 1);
  EXPECT_EQ(updates[1].state, rest::TaskState::kKilled);
  EXPECT_EQ(updates[1].exitCode, 128 + SIGTERM);
  EXPECT_EQ(runner.runningCount(), 0);
}

TEST_F(TaskRunnerTest, LeftoverProcessesGoWhenTheTaskEnds) {
  TaskRunner runner(options());
  TaskStatusUpdate update =
      runOne(runner, commandTask(1, "sleep 60 & echo $! > leftover.pid; exit 0"));
  EXPECT_EQ(update.state, rest::TaskState::kFinished);
  const pid_t leftover = std::stoi(readFile(workDir_.path() / "tasks" / "s1-1-0" / "leftover.pid"));
  EXPECT_TRUE(eventually([&] { return processGone(leftover); }, kBound));
}

TEST_F(TaskRunnerTest, DestroyingTheRunnerKillsItsTasks) {
  const std::filesystem::path pidFile = workDir_.path() / "tasks" / "s1-1-0" / "task.pid";
  {
    TaskRunner runner(options());
    runner.launch(commandTask(1, "echo $$ > task.pid; exec sleep 60"));
    ASSERT_TRUE(
        eventually([&] { return readFile(pidFile).find('\n') != std::string::npos; }, kBound));
  }
  EXPECT_TRUE(processGone(std::stoi(readFile(pidFile))));
}

TEST_F(TaskRunnerTest, FreeSlotsCountRunningTasks) {
  TaskRunner runner(options(2));
  runner.launch(builtinTask(1, "sleep", 60'000));
  runner.launch(builtinTask(2, "sleep", 60'000));
  runner.launch(builtinTask(3, "sleep", 60'000));  // over the slots: still runs
  RunnerReport report;
  runner.collect(report);
  EXPECT_EQ(report.running, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(report.freeSlots, 0);
  runner.killAll();
  runner.collect(report);
  EXPECT_EQ(report.updates.size(), 3u);
  EXPECT_EQ(report.freeSlots, 2);
}

TaskLaunch queuedSleep(int64_t taskId, int64_t sleepMs) {
  TaskLaunch launch = builtinTask(taskId, "sleep", sleepMs);
  launch.queued = true;
  return launch;
}

TEST_F(TaskRunnerTest, QueuedTasksWaitForAFreeSlotAndStartInOrder) {
  ManualClock clock(1000);
  TaskRunnerOptions runnerOptions = options(1);
  runnerOptions.clock = &clock;
  TaskRunner runner(runnerOptions);
  runner.launch(queuedSleep(1, 100));  // a free slot: starts at once
  runner.launch(queuedSleep(2, 100));
  runner.launch(queuedSleep(3, 100));
  runner.launch(queuedSleep(3, 100));  // a relaunch of a queued task is ignored
  RunnerReport report;
  runner.collect(report);
  EXPECT_EQ(report.running, std::vector<int64_t>{1});
  EXPECT_EQ(report.freeSlots, 0);
  EXPECT_EQ(runner.queuedCount(), 2u);
  EXPECT_EQ(runner.oldestQueuedAtMs(), 1000);
  runner.startQueued();  // no slot free: nothing starts
  EXPECT_EQ(runner.runningCount(), 1);

  // The next queued task starts on a freed slot, by this call or by the runner's supervisor,
  // which may be starting it at this moment (then it shows running once it has started).
  const auto runningOnly = [&](int64_t taskId) {
    return eventually(
        [&] {
          runner.startQueued();
          runner.collect(report);
          return report.running == std::vector<int64_t>{taskId};
        },
        kBound);
  };
  clock.advance(100);
  runner.wake();
  ASSERT_EQ(waitForUpdates(runner, 1).size(), 1u);  // task 1 done
  EXPECT_TRUE(runningOnly(2)) << "running: " << report.running.size() << " tasks";
  EXPECT_EQ(runner.queuedCount(), 1u);
  clock.advance(100);
  runner.wake();
  ASSERT_EQ(waitForUpdates(runner, 1).size(), 1u);
  EXPECT_TRUE(runningOnly(3)) << "running: " << report.running.size() << " tasks";
  EXPECT_EQ(runner.queuedCount(), 0u);
  EXPECT_EQ(runner.oldestQueuedAtMs(), std::nullopt);
}

TEST_F(TaskRunnerTest, QueuedTasksAreHandedBackUnstartedWhenAskedOrWhenStale) {
  ManualClock clock(1000);
  TaskRunnerOptions runnerOptions = options(1);
  runnerOptions.clock = &clock;
  TaskRunner runner(runnerOptions);
  runner.launch(queuedSleep(1, 60'000));
  runner.launch(queuedSleep(2, 100));
  clock.advance(10);
  runner.launch(queuedSleep(3, 100));
  runner.launch(queuedSleep(4, 100));
  EXPECT_EQ(runner.takeBackQueued({1, 4, 99}), std::vector<int64_t>{4})
      << "only queued ones: 1 runs, 99 is unknown";
  EXPECT_EQ(runner.takeBackQueuedSince(1000), std::vector<int64_t>{2}) << "queued at 1000";
  EXPECT_EQ(runner.dropQueued(), std::vector<int64_t>{3});
  RunnerReport report;
  runner.collect(report);
  EXPECT_TRUE(report.updates.empty()) << "a task handed back never ran: no update";
  EXPECT_EQ(report.running, std::vector<int64_t>{1});
}

TEST_F(TaskRunnerTest, AKilledQueuedTaskIsReportedKilledWithoutRunning) {
  TaskRunner runner(options(1));
  runner.launch(queuedSleep(1, 60'000));
  runner.launch(queuedSleep(2, 60'000));
  runner.launch(queuedSleep(3, 60'000));
  runner.kill(2);
  RunnerReport report;
  runner.collect(report);
  ASSERT_EQ(report.updates.size(), 1u);
  EXPECT_EQ(report.updates[0].taskId, 2);
  EXPECT_EQ(report.updates[0].state, rest::TaskState::kKilled);
  EXPECT_EQ(runner.queuedCount(), 1u);
  runner.killAll();  // the executor leaves: the running one and the queued one
  runner.collect(report);
  EXPECT_EQ(report.updates.size(), 3u);
  EXPECT_EQ(runner.queuedCount(), 0u);
}

TEST_F(TaskRunnerTest, AQueuedCommandsDirectoriesAreMadeWhileTheRunningTaskRuns) {
  TaskRunnerOptions runnerOptions = options(1);
  runnerOptions.logDir = workDir_.path() / "logs";
  TaskRunner runner(runnerOptions);
  const std::filesystem::path release = workDir_.path() / "release";
  TaskLaunch first = commandTask(1, "while [ ! -e " + release.string() + " ]; do sleep 0.01; done");
  first.queued = true;
  TaskLaunch second = commandTask(2, "echo out; echo err >&2; echo part > \"$TIDE_OUTPUT_DIR/p\"");
  second.queued = true;
  runner.launch(first);
  runner.launch(second);
  const std::filesystem::path secondDir = workDir_.path() / "tasks" / "s1-2-0";
  const std::filesystem::path secondLogs = workDir_.path() / "logs" / "tasks" / "s1-2-0";
  const auto ready = [&] {
    return std::filesystem::is_directory(secondDir / "output") &&
           std::filesystem::exists(secondLogs / "stdout") &&
           std::filesystem::exists(secondLogs / "stderr");
  };
  const auto gone = [&] {
    return !std::filesystem::exists(secondDir) && !std::filesystem::exists(secondLogs);
  };
  EXPECT_TRUE(eventually(ready, kBound)) << "made while task 1 runs";
  EXPECT_EQ(runner.runningCount(), 1) << "task 2 waits for the slot";
  // Handed back unstarted, it leaves nothing (no empty log for `tide logs`); queued again, it
  // is made ready again.
  EXPECT_EQ(runner.takeBackQueued({2}), std::vector<int64_t>{2});
  EXPECT_TRUE(eventually(gone, kBound));
  runner.launch(second);
  EXPECT_TRUE(eventually(ready, kBound));
  EXPECT_EQ(runner.runningCount(), 1);
  testing_support::writeFile(release, "");
  const std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 2);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[1].taskId, 2);
  EXPECT_EQ(updates[1].state, rest::TaskState::kFinished);
  EXPECT_EQ(readFile(secondLogs / "stdout"), "out\n");
  EXPECT_EQ(readFile(secondLogs / "stderr"), "err\n");
  EXPECT_EQ(readFile(secondDir / "output" / "p"), "part\n");
  EXPECT_FALSE(std::filesystem::exists(secondDir / "input")) << "made only for a task with inputs";
}

// An ended task's dir holding only an empty output dir becomes the next task's (one rename for
// two mkdirs); anything the ended task left there keeps its dir where it is.
TEST_F(TaskRunnerTest, AnEndedTasksEmptyDirBecomesTheNextTasksAndAnythingLeftKeepsIt) {
  TaskRunnerOptions runnerOptions = options(1);
  runnerOptions.logDir = workDir_.path() / "logs";
  runnerOptions.supervisorPath = TIDE_BIN_DIR "/tide-container";
  TaskRunner runner(runnerOptions);
  const std::filesystem::path tasks = workDir_.path() / "tasks";
  const auto dirOf = [&](int64_t id) { return tasks / ("s1-" + std::to_string(id) + "-0"); };
  const auto inodeOf = [](const std::filesystem::path& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 ? info.st_ino : 0;
  };
  const auto runAndStat = [&](int64_t id, const std::string& script) {
    TaskLaunch launch = commandTask(id, script + "; stat -c %i . > ../" + std::to_string(id) +
                                            ".inode; ls -A \"$TIDE_OUTPUT_DIR\" > ../" +
                                            std::to_string(id) + ".output");
    const TaskStatusUpdate update = runOne(runner, launch);
    EXPECT_EQ(update.state, rest::TaskState::kFinished) << update.reason;
    EXPECT_EQ(readFile(tasks / (std::to_string(id) + ".output")), "") << "task " << id;
    return std::stoull(readFile(tasks / (std::to_string(id) + ".inode")));
  };
  // Task 1 leaves an empty dir: task 2 runs in it, under its own name, with an empty output.
  const uint64_t first = runAndStat(1, "true");
  EXPECT_EQ(runAndStat(2, "true"), first);
  EXPECT_FALSE(std::filesystem::exists(dirOf(1)));
  EXPECT_EQ(inodeOf(dirOf(2)), first);
  // What a task leaves keeps its dir: a file in its cwd, a changed mode, a link for an output
  // dir. The task after it gets a new dir.
  const std::vector<std::string> leftBehind = {
      "echo kept > scratch", "chmod 500 \"$TIDE_OUTPUT_DIR\"",
      "rmdir \"$TIDE_OUTPUT_DIR\" && ln -s /tmp \"$TIDE_OUTPUT_DIR\""};
  int64_t id = 3;
  for (const std::string& leave : leftBehind) {
    const int64_t leaver = id++;
    const TaskStatusUpdate update = runOne(runner, commandTask(leaver, leave));
    EXPECT_EQ(update.state, rest::TaskState::kFinished) << leave << ": " << update.reason;
    const uint64_t leaverInode = inodeOf(dirOf(leaver));
    EXPECT_NE(runAndStat(id++, "true"), leaverInode) << leave;
    EXPECT_TRUE(std::filesystem::exists(dirOf(leaver))) << leave << ": its dir was taken";
  }
  EXPECT_EQ(readFile(dirOf(3) / "scratch"), "kept\n");
  std::filesystem::permissions(dirOf(5) / "output", std::filesystem::perms::owner_all);
}

// The executor's sync waits for a batch: it returns once enough updates are pending, once the
// queue runs low, or at the deadline, whichever comes first.
TEST_F(TaskRunnerTest, AnUpdateBatchEndsAtItsCountItsQueueFloorOrItsDeadline) {
  TaskRunner runner(options(1));
  runner.launch(queuedSleep(1, 60'000));  // holds the slot
  for (int64_t id = 2; id <= 4; ++id) runner.launch(queuedSleep(id, 60'000));
  ASSERT_EQ(runner.queuedCount(), 3u);
  // Nothing ends: only the deadline ends the wait.
  auto start = steady_clock::now();
  runner.waitForUpdateBatch(start + std::chrono::milliseconds(50), 2, 1);
  EXPECT_GE(steady_clock::now() - start, std::chrono::milliseconds(50));
  // Fewer queued than the floor: at once.
  start = steady_clock::now();
  runner.waitForUpdateBatch(start + kBound, 2, 4);
  EXPECT_LT(steady_clock::now() - start, kBound);
  // Two updates pending (noop tasks finish inside launch): at once.
  runner.launch(builtinTask(10, "noop"));
  runner.launch(builtinTask(11, "noop"));
  start = steady_clock::now();
  runner.waitForUpdateBatch(start + kBound, 2, 1);
  EXPECT_LT(steady_clock::now() - start, kBound);
  runner.killAll();
}

TEST_F(TaskRunnerTest, AQueuedNoopNeverWaits) {
  TaskRunner runner(options(1));
  runner.launch(queuedSleep(1, 60'000));
  TaskLaunch noop = builtinTask(2, "noop");
  noop.queued = true;
  runner.launch(noop);
  RunnerReport report;
  runner.collect(report);
  ASSERT_EQ(report.updates.size(), 1u);
  EXPECT_EQ(report.updates[0].taskId, 2);
  EXPECT_EQ(runner.queuedCount(), 0u);
  runner.killAll();
}

TEST_F(TaskRunnerTest, InterruptedWaitsReturnAtOnce) {
  TaskRunner runner(options());
  runner.interruptWaits();
  const auto start = steady_clock::now();
  EXPECT_FALSE(runner.waitForUpdates(start + kBound));
  EXPECT_LT(steady_clock::now() - start, kBound);
}

// Data: $TIDE_OUTPUT_DIR is committed as blocks, inputs are placed before the process starts,
// a fetch failure ends the task FETCH_FAILED without starting it.
TEST_F(TaskRunnerTest, OutputsBecomeBlocksInTheUpdate) {
  TaskRunnerOptions runnerOptions = options();
  std::vector<std::string> committed;
  runnerOptions.commitOutputs = [&](const TaskOutputOwner& owner,
                                    const std::filesystem::path& dir) {
    committed.push_back(owner.jobId + "/" + owner.stageId + "/" + std::to_string(owner.index) +
                        " " + readFile(dir / "part-1"));
    return std::vector<rest::BlockOutput>{{1, 3}};
  };
  TaskRunner runner(std::move(runnerOptions));
  const TaskStatusUpdate update =
      runOne(runner, commandTask(4, "printf abc > \"$TIDE_OUTPUT_DIR/part-1\""));
  EXPECT_EQ(update.state, rest::TaskState::kFinished) << update.reason << update.stderrTail;
  ASSERT_EQ(update.blocks.size(), 1u);
  EXPECT_EQ(update.blocks[0].partition, 1);
  EXPECT_EQ(committed, (std::vector<std::string>{"j1/s1/4 abc"}));
}

TEST_F(TaskRunnerTest, AnOutputThatCannotBeKeptFailsTheTask) {
  TaskRunnerOptions runnerOptions = options();
  runnerOptions.commitOutputs = [](const TaskOutputOwner&,
                                   const std::filesystem::path&) -> std::vector<rest::BlockOutput> {
    throw std::runtime_error("disk full");
  };
  TaskRunner runner(std::move(runnerOptions));
  const TaskStatusUpdate update = runOne(runner, commandTask(1, "true"));
  EXPECT_EQ(update.state, rest::TaskState::kFailed);
  EXPECT_NE(update.reason.find("disk full"), std::string::npos);
}

TEST_F(TaskRunnerTest, InputsArePlacedBeforeTheTaskStarts) {
  TaskRunnerOptions runnerOptions = options();
  runnerOptions.fetchInputs =
      [](const std::vector<rest::BlockInput>& inputs,
         const std::filesystem::path& inputDir) -> std::optional<FetchFailure> {
    for (const auto& input : inputs) {
      std::filesystem::create_directories(inputDir / input.stageId);
      std::ofstream(inputDir / input.stageId / ("part-" + std::to_string(input.mapIndex)))
          << "from " << input.executorId;
    }
    return std::nullopt;
  };
  TaskRunner runner(std::move(runnerOptions));
  TaskLaunch launch = commandTask(2, "cat \"$TIDE_INPUT_DIR/map/part-5\" >&2; exit 9");
  launch.inputs = {mapInput(5, "e7", "j/map/5/part-2")};
  const TaskStatusUpdate update = runOne(runner, launch);
  EXPECT_EQ(update.state, rest::TaskState::kFailed);
  EXPECT_EQ(update.stderrTail, "from e7");
}

TEST_F(TaskRunnerTest, AFetchFailureEndsTheTaskWithoutRunningIt) {
  TaskRunnerOptions runnerOptions = options();
  runnerOptions.fetchInputs = [](const std::vector<rest::BlockInput>& inputs,
                                 const std::filesystem::path&) -> std::optional<FetchFailure> {
    return FetchFailure{inputs.front(), "connection refused"};
  };
  TaskRunner runner(std::move(runnerOptions));
  TaskLaunch launch = commandTask(3, "touch ran");
  launch.inputs = {mapInput(1, "e2", "j/map/1/part-3")};
  const TaskStatusUpdate update = runOne(runner, launch);
  EXPECT_EQ(update.state, rest::TaskState::kFetchFailed);
  EXPECT_EQ(update.failedInput.executorId, "e2");
  EXPECT_EQ(update.failedInput.mapIndex, 1);
  EXPECT_NE(update.reason.find("connection refused"), std::string::npos);
  EXPECT_EQ(runner.runningCount(), 0);
}

TEST_F(TaskRunnerTest, ATaskKilledWhileFetchingNeverStarts) {
  TaskRunnerOptions runnerOptions = options();
  std::mutex gate;
  gate.lock();
  runnerOptions.fetchInputs = [&](const std::vector<rest::BlockInput>&,
                                  const std::filesystem::path&) -> std::optional<FetchFailure> {
    std::lock_guard<std::mutex> wait(gate);  // held until the kill was sent
    return std::nullopt;
  };
  TaskRunner runner(std::move(runnerOptions));
  TaskLaunch launch = commandTask(5, "sleep 30");
  rest::BlockInput input;
  input.stageId = "map";
  input.path = "j/map/0/part-5";
  launch.inputs = {input};
  runner.launch(launch);
  EXPECT_EQ(runner.runningCount(), 1) << "preparing counts as running";
  runner.kill(5);
  gate.unlock();
  const std::vector<TaskStatusUpdate> updates = waitForUpdates(runner, 1);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kKilled);
}

}  // namespace
}  // namespace tide::executor
