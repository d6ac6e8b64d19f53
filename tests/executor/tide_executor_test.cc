// tide-executor end to end: the real binary against a fake AM on 127.0.0.1.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/pidfd.h"
#include "tests/executor/fake_am.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide::executor {
namespace {

using rest::TaskLaunch;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::FakeAm;
using testing_support::eventually;
using testing_support::processGone;
using testing_support::readFile;

// A command task of stage s1 (index 0, attempt 0).
TaskLaunch commandTask(int64_t taskId, std::vector<std::string> argv) {
  TaskLaunch launch;
  launch.taskId = taskId;
  launch.stageId = "s1";
  launch.kind = "command";
  launch.argv = std::move(argv);
  return launch;
}

constexpr milliseconds kBound{20000};

// One tide-executor process in its own work dir, its stderr in executor.log there. Killed
// (SIGKILL) and reaped when the test ends, whatever happened.
class ExecutorProcess {
 public:
  ExecutorProcess(const std::filesystem::path& workDir, std::map<std::string, std::string> env,
                  const std::vector<std::string>& args)
      : logPath_(workDir / "executor.log") {
    env.emplace("PATH", "/usr/bin:/bin");
    std::vector<std::string> envEntries;
    for (const auto& [name, value] : env) envEntries.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (std::string& entry : envEntries) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> argStrings = {TIDE_BIN_DIR "/tide-executor"};
    argStrings.insert(argStrings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : argStrings) argv.push_back(arg.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, logPath_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addchdir_np(&actions, workDir.c_str());
    const int error = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) {
      ADD_FAILURE() << "cannot start " << argv[0] << ": " << strerror(error);
      pid_ = -1;
      return;
    }
    pidfd_ = openPidfd(pid_);
  }
  ~ExecutorProcess() {
    if (pid_ > 0 && !exitStatus_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
  }

  // The exit status (128 + signal for a signal), or nullopt when still running after `bound`.
  std::optional<int> waitForExit(milliseconds bound = kBound) {
    if (exitStatus_ || pid_ <= 0) return exitStatus_;
    pollfd exited{pidfd_, POLLIN, 0};
    if (::poll(&exited, 1, static_cast<int>(bound.count())) != 1) return std::nullopt;
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
    exitStatus_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exitStatus_;
  }

  bool exited() { return waitForExit(milliseconds(0)).has_value(); }
  void signal(int number) { ::kill(pid_, number); }
  std::string log() const { return readFile(logPath_); }

 private:
  std::filesystem::path logPath_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exitStatus_;
};

class TideExecutorTest : public ::testing::Test {
 protected:
  // Waits (bounded) until the AM's state satisfies `condition`; gives up early when the
  // executor has exited, so that a broken executor fails the test at once.
  static bool amSees(FakeAm& am, ExecutorProcess& executor, const std::function<bool()>& condition,
                     milliseconds bound = kBound) {
    const auto deadline = steady_clock::now() + bound;
    while (steady_clock::now() < deadline) {
      if (am.waitFor(condition, milliseconds(100))) return true;
      if (executor.exited()) return am.waitFor(condition, milliseconds(0));
    }
    return false;
  }

  std::unique_ptr<ExecutorProcess> startExecutor(FakeAm& am, std::vector<std::string> args = {},
                                                 const std::string& secret = "test-secret") {
    args.insert(args.begin(), {"--conf", "log.level=info"});
    return std::make_unique<ExecutorProcess>(workDir_.path(),
                                             std::map<std::string, std::string>{
                                                 {"TIDE_AM_ADDRESS", am.url()},
                                                 {"TIDE_APP_SECRET", secret},
                                                 {"TIDE_EXECUTOR_ID", "e1"},
                                                 {"TIDE_CONTAINER_ID", "container_e1"},
                                             },
                                             args);
  }

  static std::vector<TaskLaunch> noopTasks(int count, int64_t firstId = 0) {
    std::vector<TaskLaunch> launches(count);
    for (int i = 0; i < count; ++i) {
      launches[i].taskId = firstId + i;
      launches[i].jobId = "j1";
      launches[i].stageId = "s1";
      launches[i].index = i;
      launches[i].kind = "noop";
    }
    return launches;
  }

  // Runs `count` noop tasks through one executor with `slots` slots; checks each came back
  // FINISHED exactly once. (How fast is bench/executor's business.)
  void runNoopTasks(int count, int slots) {
    FakeAm am(FakeAm::Options{"test-secret", 200, slots});
    auto executor = startExecutor(
        am, {"--conf", "executor.cores=" + std::to_string(slots), "--conf", "log.level=warn"});
    EXPECT_TRUE(amSees(am, *executor, [&] { return !am.registrations.empty(); }))
        << executor->log();
    am.addTasks(noopTasks(count));
    // A volume check, not a speed check (bench/executor measures the rate): the bound only keeps
    // a lost update from hanging the test, and is wide enough for a sanitizer build on a busy
    // machine.
    EXPECT_TRUE(amSees(
        am, *executor, [&] { return am.updateCount >= static_cast<size_t>(count); }, 6 * kBound))
        << am.updateCount << " of " << count << " updates\n"
        << executor->log();
    am.shutdownExecutors();
    EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
    am.stop();  // joins the server's threads: what their handlers wrote is now safe to read

    EXPECT_EQ(am.updatesByTask.size(), static_cast<size_t>(count));
    EXPECT_EQ(am.updateCount, static_cast<size_t>(count));
    for (const auto& [taskId, updates] : am.updatesByTask) {
      EXPECT_EQ(updates.size(), 1u) << "task " << taskId;
      EXPECT_EQ(updates.front().state, rest::TaskState::kFinished) << "task " << taskId;
    }
    EXPECT_EQ(am.badSyncs, 0);
  }

  tide::testing_support::TempDir workDir_;
};

TEST_F(TideExecutorTest, ThousandNoopTasksFinishExactlyOnceWithOneSlot) {
  runNoopTasks(1000, 1);
}

TEST_F(TideExecutorTest, ThousandNoopTasksFinishExactlyOnceWithEightSlots) {
  runNoopTasks(1000, 8);
}

// The volume bench/executor measures the rate with: every task done exactly once.
TEST_F(TideExecutorTest, NoopThroughput) {
  for (int slots : {1, 8}) runNoopTasks(20000, slots);
}

// With two rounds of tasks per slot queued, the slot stays busy without the AM: the executor
// reports the ends of short tasks in batches (those within 20 ms of its last sync), not in one
// sync each, and loses none.
TEST_F(TideExecutorTest, EndsOfShortQueuedTasksGoToTheAmInBatches) {
  FakeAm am(FakeAm::Options::handingAhead(200));
  auto executor = startExecutor(am);
  constexpr int kTasks = 100;
  std::vector<TaskLaunch> tasks;
  for (int i = 0; i < kTasks; ++i) {
    TaskLaunch sleep;
    sleep.taskId = i;
    sleep.stageId = "s1";
    sleep.index = i;
    sleep.kind = "sleep";
    sleep.sleepMs = 1;
    sleep.queued = true;
    tasks.push_back(sleep);
  }
  am.addTasks(tasks);
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.updateCount >= kTasks; })) << executor->log();
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
  am.stop();
  ASSERT_EQ(am.updatesByTask.size(), static_cast<size_t>(kTasks));
  for (const auto& [taskId, updates] : am.updatesByTask) {
    EXPECT_EQ(updates.size(), 1u) << "task " << taskId;
    EXPECT_EQ(updates.front().state, rest::TaskState::kFinished) << "task " << taskId;
  }
  // One sync per end would be 100; 100 ms or more of tasks in 20 ms batches, and the last few
  // (the queue under two rounds) at once, are far fewer.
  EXPECT_LE(am.syncsWithUpdates, 30);
}

// At the end of a stage the AM holds an idle executor's sync for the heartbeat. An executor
// must never ask for that while it holds a task: not while one runs, is queued, or is being
// started out of its queue (then in neither list; an end during the hold waited out the whole
// heartbeat, and so did the stage). Many short stage ends, each a chance to ask at the wrong
// moment.
TEST_F(TideExecutorTest, NeverAsksToBeHeldWhileATaskRunsIsQueuedOrIsStarting) {
  FakeAm am(FakeAm::Options::handingAhead(2));
  auto executor = startExecutor(am);
  constexpr int kRounds = 40;
  constexpr int kTasksPerRound = 3;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<TaskLaunch> tasks;
    for (int i = 0; i < kTasksPerRound; ++i) {
      TaskLaunch task = commandTask(round * kTasksPerRound + i, {"true"});
      task.queued = i > 0;
      tasks.push_back(task);
    }
    am.addTasks(tasks);
    const size_t ended = static_cast<size_t>((round + 1) * kTasksPerRound);
    ASSERT_TRUE(amSees(am, *executor, [&] { return am.updateCount >= ended; }))
        << "round " << round << "\n"
        << executor->log();
  }
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
  am.stop();
  EXPECT_EQ(am.holdAsksWithTasksOut, 0);
  EXPECT_EQ(am.updatesByTask.size(), static_cast<size_t>(kRounds * kTasksPerRound));
}

TEST_F(TideExecutorTest, RegistersWithItsIdentity) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am, {"--conf", "executor.cores=3"});
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.syncs >= 1; })) << executor->log();
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
  ASSERT_EQ(am.registrations.size(), 1u);
  EXPECT_EQ(am.registrations[0].executorId, "e1");
  EXPECT_EQ(am.registrations[0].containerId, "container_e1");
  EXPECT_EQ(am.registrations[0].cores, 3);
  EXPECT_GT(am.registrations[0].pid, 0);
  EXPECT_EQ(executor->log().find("test-secret"), std::string::npos) << executor->log();
}

TEST_F(TideExecutorTest, FailingCommandSendsItsStderrTail) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am);
  const TaskLaunch failing = commandTask(1, {"sh", "-c", "echo 'disk on fire' >&2; exit 4"});
  TaskLaunch secretCheck = failing;
  secretCheck.taskId = 2;
  secretCheck.index = 1;
  secretCheck.argv = {"sh", "-c", "test -z \"$TIDE_APP_SECRET\" && test \"$TIDE_TASK_INDEX\" = 1"};
  am.addTasks({failing, secretCheck});
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.updateCount >= 2; })) << executor->log();
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();

  const rest::TaskStatusUpdate& failed = am.updatesByTask.at(1).front();
  EXPECT_EQ(failed.state, rest::TaskState::kFailed);
  EXPECT_EQ(failed.exitCode, 4);
  EXPECT_EQ(failed.reason, "exited with code 4");
  EXPECT_EQ(failed.stderrTail, "disk on fire\n");
  EXPECT_EQ(am.updatesByTask.at(2).front().state, rest::TaskState::kFinished)
      << "the task saw TIDE_APP_SECRET or no TIDE_TASK_INDEX";
  EXPECT_EQ(readFile(workDir_.path() / "tasks" / "s1-0-0" / "stderr"), "disk on fire\n");
}

TEST_F(TideExecutorTest, OnlyTheAttemptTheAmAuthorisesCommitsItsOutput) {
  FakeAm am(FakeAm::Options{"test-secret", 200, 2});
  auto executor = startExecutor(am, {"--conf", "executor.cores=2"});
  const std::filesystem::path output = workDir_.path() / "job-output";
  TaskLaunch winner;
  winner.taskId = 1;
  winner.jobId = "j1";
  winner.stageId = "final";
  winner.index = 3;
  winner.kind = "command";
  winner.argv = {"sh", "-c", "echo winner > \"$TIDE_OUTPUT_DIR/part-0\""};
  winner.collectDir = output.string();
  TaskLaunch loser = winner;  // a second attempt of the same task, which the AM denies
  loser.taskId = 2;
  loser.attempt = 1;
  loser.argv = {"sh", "-c", "echo loser > \"$TIDE_OUTPUT_DIR/part-0\""};
  am.denyCommit(2);
  am.addTasks({winner, loser});
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.updateCount >= 2; })) << executor->log();
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();

  EXPECT_EQ(am.commitRequests.size(), 2u);
  EXPECT_EQ(am.updatesByTask.at(1).front().state, rest::TaskState::kFinished);
  ASSERT_EQ(am.updatesByTask.at(1).front().blocks.size(), 1u);
  const rest::TaskStatusUpdate& denied = am.updatesByTask.at(2).front();
  EXPECT_EQ(denied.state, rest::TaskState::kKilled);
  EXPECT_EQ(denied.reason, "commit denied: another attempt has committed");
  EXPECT_TRUE(denied.blocks.empty());
  // The job's output holds the winner's file only, and nothing half-written.
  EXPECT_EQ(readFile(output / "part-3"), "winner\n");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(output)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  EXPECT_FALSE(std::filesystem::exists(workDir_.path() / "tasks" / "final-3-1" / "output"));
}

TEST_F(TideExecutorTest, ATaskThatWroteNoBlockFinishesWithoutAskingToCommit) {
  FakeAm am(FakeAm::Options{"test-secret", 200, 1});
  auto executor = startExecutor(am);
  TaskLaunch quiet;
  quiet.taskId = 1;
  quiet.jobId = "j1";
  quiet.stageId = "s";
  quiet.kind = "command";
  quiet.argv = {"sh", "-c", "echo not-a-block > \"$TIDE_OUTPUT_DIR/notes.txt\""};
  am.addTasks({quiet});
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.updateCount >= 1; })) << executor->log();
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
  EXPECT_TRUE(am.commitRequests.empty()) << "nothing to commit: no round trip to ask";
  EXPECT_EQ(am.updatesByTask.at(1).front().state, rest::TaskState::kFinished);
  EXPECT_TRUE(am.updatesByTask.at(1).front().blocks.empty());
}

TEST_F(TideExecutorTest, KillFromTheAmEndsTheTask) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am);
  am.addTasks({commandTask(7, {"sleep", "60"})});
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.lastRunning == std::vector<int64_t>{7}; }))
      << executor->log();
  am.kill(7);
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.updateCount >= 1; })) << executor->log();
  EXPECT_EQ(am.updatesByTask.at(7).front().state, rest::TaskState::kKilled);
  am.shutdownExecutors();
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
}

// How the AM ends a running executor: what it does, the exit status, a line in the log.
struct AmEnding {
  const char* name;
  void (FakeAm::*end)();
  int exitStatus;
  const char* logged;
};

class TideExecutorEndTest : public TideExecutorTest,
                            public ::testing::WithParamInterface<AmEnding> {};

TEST_P(TideExecutorEndTest, ExitsAsTheAmSays) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am);
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.syncs >= 1; })) << executor->log();
  (am.*GetParam().end)();
  EXPECT_EQ(executor->waitForExit(), GetParam().exitStatus) << executor->log();
  EXPECT_NE(executor->log().find(GetParam().logged), std::string::npos) << executor->log();
}

INSTANTIATE_TEST_SUITE_P(
    AmEndings, TideExecutorEndTest,
    ::testing::Values(
        // A shutdown exits 0.
        AmEnding{"Shutdown", &FakeAm::shutdownExecutors, 0, "released"},
        // An AM that no longer knows the executor makes it exit 1.
        AmEnding{"Forgotten", &FakeAm::forgetExecutors, 1, "does not know executor e1"}),
    [](const ::testing::TestParamInfo<AmEnding>& info) { return std::string(info.param.name); });

TEST_F(TideExecutorTest, ExitsWhenTheAmIsGoneForNetworkTimeout) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am, {"--conf", "network.timeout=2s"});
  ASSERT_TRUE(amSees(am, *executor, [&] { return am.syncs >= 1; })) << executor->log();
  const auto stoppedAt = steady_clock::now();
  am.stop();
  // network.timeout, plus the AM's own stop and a margin for a loaded machine.
  const std::optional<int> status = executor->waitForExit(milliseconds(2000 + 6000));
  ASSERT_TRUE(status.has_value()) << "still running\n" << executor->log();
  EXPECT_EQ(*status, 1) << executor->log();
  EXPECT_LT(steady_clock::now() - stoppedAt, milliseconds(2000 + 5000));
  EXPECT_NE(executor->log().find("unreachable"), std::string::npos) << executor->log();
}

TEST_F(TideExecutorTest, AWrongSecretIsRefusedAndEndsTheExecutor) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am, {}, "not-the-secret");
  const std::optional<int> status = executor->waitForExit();
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(*status, 0);
  EXPECT_GE(am.refusedRequests(), 1);
  const std::string log = executor->log();
  EXPECT_NE(log.find("HTTP 401"), std::string::npos) << log;
  EXPECT_NE(log.find("TIDE_APP_SECRET"), std::string::npos) << log;
  EXPECT_EQ(log.find("not-the-secret"), std::string::npos) << log;
}

TEST_F(TideExecutorTest, AMissingVariableExitsTwo) {
  ExecutorProcess executor(workDir_.path(),
                           {{"TIDE_AM_ADDRESS", "http://127.0.0.1:9"},
                            {"TIDE_EXECUTOR_ID", "e1"},
                            {"TIDE_CONTAINER_ID", "c1"}},
                           {});
  EXPECT_EQ(executor.waitForExit(), 2) << executor.log();
  EXPECT_NE(executor.log().find("TIDE_APP_SECRET is not set"), std::string::npos) << executor.log();
}

TEST_F(TideExecutorTest, SigtermKillsTheTasksAndExits) {
  FakeAm am(FakeAm::Options{});
  auto executor = startExecutor(am);
  am.addTasks({commandTask(1, {"sh", "-c", "echo $$ > task.pid; exec sleep 60"})});
  const std::filesystem::path pidFile = workDir_.path() / "tasks" / "s1-0-0" / "task.pid";
  ASSERT_TRUE(eventually([&] { return readFile(pidFile).find('\n') != std::string::npos; }, kBound))
      << executor->log();
  const pid_t task = std::stoi(readFile(pidFile));

  const auto signalledAt = steady_clock::now();
  executor->signal(SIGTERM);
  EXPECT_EQ(executor->waitForExit(), 0) << executor->log();
  EXPECT_LT(steady_clock::now() - signalledAt, milliseconds(5000));
  EXPECT_TRUE(eventually([&] { return processGone(task); }, kBound))
      << "task " << task << " survived";
  EXPECT_NE(executor->log().find("SIGTERM"), std::string::npos) << executor->log();
}

}  // namespace
}  // namespace tide::executor
