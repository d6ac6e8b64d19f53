// executor/supervisor_launcher.h with the real tide-container --serve: a slot supervisor runs
// the command as an exec'd supervisor would (environment, directory, descriptors, its own
// process group, the exit status or signal), one task after another with nothing of the last
// one left; a killed launcher stops no task and is replaced when a slot is needed, a killed
// slot is dropped, nothing outlives the executor's end, and a bad request is refused without
// stopping anything.
// Leftovers are found by walking /proc for a marker in the environment, never by name.

#include "executor/supervisor_launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/pidfd.h"
#include "common/process_tree.h"
#include "common/spawn.h"
#include "common/supervisor_launch.h"
#include "executor/task_runner.h"
#include "tests/faults/proc_walk.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::executor {
namespace {

using namespace std::chrono_literals;
using faults::describe;
using faults::processesWithEnv;
using testing_support::eventually;
using testing_support::readFile;

constexpr char kSupervisor[] = TIDE_BIN_DIR "/tide-container";

class SupervisorLauncherTest : public ::testing::Test {
 protected:
  SupervisorLauncherTest() {
    std::random_device random;
    marker_ = "TIDE_LAUNCHER_TEST=" + std::to_string(::getpid()) + "-" + std::to_string(random());
  }
  ~SupervisorLauncherTest() override {
    for (int fd : files_) ::close(fd);
  }

  // A request whose processes carry the marker, with stdout and stderr in the temp dir.
  LaunchRequest request(const std::string& script) {
    LaunchRequest r;
    r.argv = {"/bin/sh", "-c", script};
    r.environment = {marker_, "PATH=/usr/bin:/bin"};
    r.workDir = dir_.path().string();
    return r;
  }
  int file(const std::string& name) {
    const int fd =
        ::open((dir_.path() / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    files_.push_back(fd);
    return fd;
  }
  // Waits (bounded) until the task has exited, as the runner's pidfd poll does.
  static bool exited(pid_t pid) {
    const int pidfd = openPidfd(pid);
    if (pidfd < 0) return false;
    pollfd ready{pidfd, POLLIN, 0};
    const bool done = ::poll(&ready, 1, 20000) == 1;
    ::close(pidfd);
    return done;
  }
  std::vector<faults::WalkedProcess> left() const { return processesWithEnv(marker_); }

  testing_support::TempDir dir_;
  std::string marker_;
  std::vector<int> files_;
};

TEST_F(SupervisorLauncherTest, RunsTheCommandWithItsEnvironmentDirectoryAndDescriptors) {
  SupervisorLauncher launcher(kSupervisor, {});
  const pid_t pid = launcher.launch(
      request("echo \"$TIDE_LAUNCHER_TEST\" \"$(pwd)\"; echo err >&2; "
              "[ -e /proc/self/fd/3 ] && echo leaked 3; [ -e /proc/self/fd/4 ] && echo leaked 4; "
              "cat; exit 3"),
      file("out"), file("err"));
  // It leads its own process group as soon as its pid is known: a kill(-pid) cannot miss.
  EXPECT_EQ(::getpgid(pid), pid);
  EXPECT_NE(::getppid(), pid);
  ASSERT_TRUE(exited(pid));
  const std::optional<int> status = launcher.reap(pid);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describeWaitStatus(*status), "exited with code 3");
  const std::string value = marker_.substr(marker_.find('=') + 1);
  // Its stdin is /dev/null (cat read nothing) and no descriptor of the launcher's was left open.
  EXPECT_EQ(readFile(dir_.path() / "out"), value + " " + dir_.path().string() + "\n");
  EXPECT_EQ(readFile(dir_.path() / "err"), "err\n");
  // Reaped once: the pid is no longer the launcher's to report.
  EXPECT_FALSE(launcher.reap(pid).has_value());
  EXPECT_EQ(errno, ECHILD);
}

TEST_F(SupervisorLauncherTest, ACommandKilledBySignalIsReportedAsThatSignal) {
  SupervisorLauncher launcher(kSupervisor, {});
  const pid_t pid = launcher.launch(request("kill -KILL $$"), file("out"), file("err"));
  ASSERT_TRUE(exited(pid));
  const std::optional<int> status = launcher.reap(pid);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describeWaitStatus(*status), "killed by signal 9 (SIGKILL)");
}

TEST_F(SupervisorLauncherTest, AProgramThatCannotRunExits127SayingWhy) {
  SupervisorLauncher launcher(kSupervisor, {});
  LaunchRequest missing = request("");
  missing.argv = {"/no/such/program"};
  const pid_t pid = launcher.launch(missing, file("out"), file("err"));
  ASSERT_TRUE(exited(pid));
  EXPECT_EQ(exitCodeOf(launcher.reap(pid).value_or(-1)), 127);
  EXPECT_NE(readFile(dir_.path() / "err").find("/no/such/program"), std::string::npos);

  LaunchRequest nowhere = request("true");
  nowhere.workDir = (dir_.path() / "missing").string();
  const pid_t second = launcher.launch(nowhere, file("out2"), file("err2"));
  ASSERT_TRUE(exited(second));
  EXPECT_EQ(exitCodeOf(launcher.reap(second).value_or(-1)), 127);
  EXPECT_NE(readFile(dir_.path() / "err2").find("cannot enter working directory"),
            std::string::npos);
}

// Slot supervisors hang on the executor's sockets, not on the launcher: a SIGKILLed launcher
// stops no task, the next new slot comes from a new launcher, and the executor's end going
// leaves nothing, the tasks' daemons included.
TEST_F(SupervisorLauncherTest, AKilledLauncherStopsNoTaskAndTheExecutorGoingLeavesNothing) {
  auto launcher = std::make_unique<SupervisorLauncher>(kSupervisor, std::vector<std::string>{});
  const std::string ready = (dir_.path() / "ready").string();
  const pid_t pid = launcher->launch(
      request("( setsid sh -c 'exec sleep 300' & ) ; sleep 301 & touch " + ready + "; wait"),
      file("out"), file("err"));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }, 20s));
  ASSERT_TRUE(eventually([&] { return left().size() >= 3; }, 20s)) << describe(left());
  const pid_t first = launcher->launcherPid();
  ASSERT_GT(first, 0);
  // ps tells the launcher from the slot supervisors it forked.
  EXPECT_EQ(readFile("/proc/" + std::to_string(first) + "/cmdline")
                .find(std::string(kSupervisor) + '\0' + "--serve"),
            0u);
  // The task's parent: the slot supervisor that runs it.
  const std::optional<ProcessInfo> task = readProcess(pid);
  ASSERT_TRUE(task.has_value());
  const std::string supervisor = readFile("/proc/" + std::to_string(task->ppid) + "/cmdline");
  EXPECT_EQ(supervisor.substr(0, supervisor.find_last_not_of('\0') + 1),
            std::string(kSupervisor) + '\0' + "--task-supervisor");
  const size_t running = left().size();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  // A second task needs a second slot, which a new launcher starts.
  const pid_t next = launcher->launch(request("exit 0"), file("out2"), file("err2"));
  EXPECT_NE(launcher->launcherPid(), first);
  ASSERT_TRUE(exited(next));
  EXPECT_EQ(launcher->reap(next), std::optional<int>(0));
  EXPECT_EQ(::kill(pid, 0), 0) << "the task died with the launcher";
  EXPECT_EQ(left().size(), running) << describe(left());
  launcher.reset();
  EXPECT_TRUE(eventually([&] { return left().empty(); }, 20s)) << describe(left());
}

// Stopping a task reaches what it orphaned in a session of its own too, with SIGTERM first (a
// daemon may clean up), as a supervisor exec'd per task passes its SIGTERM on to its tree.
TEST_F(SupervisorLauncherTest, StoppingATaskSendsSigtermToWhatItOrphanedToo) {
  SupervisorLauncher launcher(kSupervisor, {});
  const std::string daemonPid = (dir_.path() / "daemon").string();
  const std::string termed = (dir_.path() / "termed").string();
  const pid_t pid = launcher.launch(
      request("( setsid sh -c 'trap \"echo yes > " + termed + "; exit 0\" TERM; echo $$ > " +
              daemonPid + ".tmp; mv " + daemonPid + ".tmp " + daemonPid +
              "; while :; do sleep 0.05; done' & ); exec sleep 300"),
      file("out"), file("err"));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(daemonPid); }, 20s));
  errno = 0;
  EXPECT_FALSE(launcher.stop(::getpid()));
  EXPECT_EQ(errno, ECHILD);
  ASSERT_TRUE(launcher.stop(pid));
  // Before the reap, which SIGKILLs whatever is left (the daemon may still be in its trap).
  EXPECT_TRUE(eventually([&] { return readFile(termed) == "yes\n"; }, 20s))
      << "the orphaned daemon got no SIGTERM";
  ASSERT_TRUE(exited(pid));
  EXPECT_EQ(describeWaitStatus(launcher.reap(pid).value_or(-1)), "killed by signal 15 (SIGTERM)");
  EXPECT_TRUE(left().empty()) << describe(left());
}

// A slot supervisor killed under its task: reaping that task says it lost track of it, and the
// next launch gets a slot that works.
TEST_F(SupervisorLauncherTest, AKilledSlotSupervisorIsDroppedAndItsTaskReportedLost) {
  SupervisorLauncher launcher(kSupervisor, {});
  const pid_t pid = launcher.launch(request("exec sleep 300"), file("out"), file("err"));
  const std::optional<ProcessInfo> task = readProcess(pid);
  ASSERT_TRUE(task.has_value());
  ASSERT_EQ(::kill(task->ppid, SIGKILL), 0);
  ASSERT_EQ(::kill(-pid, SIGKILL), 0);
  ASSERT_TRUE(exited(pid));
  errno = 0;
  EXPECT_FALSE(launcher.reap(pid).has_value());
  EXPECT_NE(errno, 0);
  const pid_t next = launcher.launch(request("exit 5"), file("out2"), file("err2"));
  ASSERT_TRUE(exited(next));
  EXPECT_EQ(exitCodeOf(launcher.reap(next).value_or(-1)), 5);
}

// A slot supervisor that stops answering (here SIGSTOPped) holds the executor up no longer
// than the answer timeout: the reap of its task fails with ETIMEDOUT, the slot is dropped, and
// the next launch gets a slot that works. Let run again, the dropped supervisor finds its
// socket closed and ends.
TEST_F(SupervisorLauncherTest, ASlotSupervisorThatStopsAnsweringIsDroppedAfterTheAnswerTimeout) {
  SupervisorLauncher launcher(kSupervisor, {}, 500ms);
  const pid_t pid = launcher.launch(request("exec sleep 300"), file("out"), file("err"));
  const std::optional<ProcessInfo> task = readProcess(pid);
  ASSERT_TRUE(task.has_value());
  const pid_t supervisor = task->ppid;
  ASSERT_EQ(::kill(supervisor, SIGSTOP), 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(exited(pid));
  const auto start = std::chrono::steady_clock::now();
  errno = 0;
  EXPECT_FALSE(launcher.reap(pid).has_value());
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "the reap waited on";
  const pid_t next = launcher.launch(request("exit 5"), file("out2"), file("err2"));
  ASSERT_TRUE(exited(next));
  EXPECT_EQ(exitCodeOf(launcher.reap(next).value_or(-1)), 5);
  ASSERT_EQ(::kill(supervisor, SIGCONT), 0);
  EXPECT_TRUE(eventually(
      [&] {
        const std::optional<ProcessInfo> info = readProcess(supervisor);
        return !info.has_value() || info->state == 'Z';
      },
      20s))
      << "the dropped slot supervisor did not end once let run";
}

// A slot supervisor is forked once and runs one task after another; what a task left running
// (here a daemon in a session of its own, which only the subreaper still holds) is gone when
// its reap is answered, before the next task can start below the same supervisor.
TEST_F(SupervisorLauncherTest, ASlotRunsTaskAfterTaskAndNothingATaskLeftOutlivesItsReap) {
  SupervisorLauncher launcher(kSupervisor, {});
  const std::string daemonPidFile = (dir_.path() / "daemon").string();
  const pid_t first = launcher.launch(
      request("( setsid sh -c 'echo $$ > " + daemonPidFile + ".tmp; mv " + daemonPidFile + ".tmp " +
              daemonPidFile + "; exec sleep 300' & ); while [ ! -s " + daemonPidFile +
              " ]; do sleep 0.01; done"),
      file("out"), file("err"));
  ASSERT_TRUE(exited(first));
  const pid_t daemon = std::stoi(readFile(daemonPidFile));
  ASSERT_EQ(::kill(daemon, 0), 0) << "the daemon should still run until the task is reaped";
  const std::optional<ProcessInfo> firstTask = readProcess(first);  // a zombie until reaped
  ASSERT_TRUE(firstTask.has_value());
  EXPECT_EQ(launcher.reap(first), std::optional<int>(0));
  EXPECT_FALSE(readProcess(daemon).has_value()) << "the task's daemon outlived its reap";

  // Two at once get two supervisors; the first of them is the one the first task had.
  const std::string ready = (dir_.path() / "ready").string();
  const pid_t second = launcher.launch(request("exit 3"), file("out2"), file("err2"));
  const pid_t third =
      launcher.launch(request("touch " + ready + "; exec sleep 300"), file("out3"), file("err3"));
  ASSERT_TRUE(exited(second));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }, 20s));
  const std::optional<ProcessInfo> secondTask = readProcess(second);
  const std::optional<ProcessInfo> thirdTask = readProcess(third);
  ASSERT_TRUE(secondTask.has_value() && thirdTask.has_value());
  EXPECT_EQ(secondTask->ppid, firstTask->ppid);
  EXPECT_NE(thirdTask->ppid, firstTask->ppid);
  EXPECT_EQ(exitCodeOf(launcher.reap(second).value_or(-1)), 3);
  ASSERT_EQ(::kill(-third, SIGKILL), 0);  // each task leads its own process group
  ASSERT_TRUE(exited(third));
  EXPECT_EQ(describeWaitStatus(launcher.reap(third).value_or(-1)), "killed by signal 9 (SIGKILL)");
  EXPECT_FALSE(launcher.reap(third).has_value()) << "a task is reaped once";
}

// The parent-death signal of the launcher fires when the thread that started it ends: that
// alone must not stop it (nor the tasks it launched); the executor's death must.
TEST_F(SupervisorLauncherTest, TheStartingThreadEndingStopsNothingTheLauncherGoingStopsAll) {
  auto launcher = std::make_unique<SupervisorLauncher>(kSupervisor, std::vector<std::string>{});
  const std::string ready = (dir_.path() / "ready").string();
  pid_t sleeper = -1;
  std::thread starter([&] {
    sleeper =
        launcher->launch(request("touch " + ready + "; exec sleep 300"), file("out"), file("err"));
  });
  starter.join();
  ASSERT_GT(sleeper, 0);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }, 20s));
  const pid_t launcherPid = launcher->launcherPid();
  // Still serving, from this thread, with the sleeper still running.
  const pid_t quick = launcher->launch(request("exit 4"), file("out2"), file("err2"));
  ASSERT_TRUE(exited(quick));
  EXPECT_EQ(exitCodeOf(launcher->reap(quick).value_or(-1)), 4);
  EXPECT_EQ(launcher->launcherPid(), launcherPid);
  EXPECT_EQ(::kill(sleeper, 0), 0) << "the task died with the thread that started its launcher";
  // Closing the launcher (the executor going) takes the running task down.
  launcher.reset();
  EXPECT_TRUE(eventually([&] { return left().empty(); }, 20s)) << describe(left());
}

TEST_F(SupervisorLauncherTest, ABadRequestIsRefusedAndTheLauncherServesOn) {
  int ends[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
  SpawnOptions spawn;
  spawn.argv = {kSupervisor, "--serve", "--die-with-parent", std::to_string(::getpid())};
  spawn.stdinFd = ends[1];
  spawn.stderrPath = (dir_.path() / "launcher.err").string();
  const pid_t launcher = spawnProcess(spawn);
  ::close(ends[1]);
  const auto ask = [&](int socket, const std::string& payload, const std::vector<int>& fds,
                       std::vector<int>& received) {
    std::string answer;
    EXPECT_TRUE(sendFrame(socket, payload, fds));
    EXPECT_TRUE(receiveFrame(socket, answer, received));
    return decodeAnswer(answer);
  };
  std::vector<int> none;
  EXPECT_EQ(ask(ends[0], "nonsense", {}, none), -EINVAL);
  EXPECT_EQ(ask(ends[0], encodeLaunch(request("true")), {file("o"), file("e")}, none), -EINVAL);
  std::vector<int> slotSocket;
  const int64_t slot = ask(ends[0], encodeNewSlot(), {}, slotSocket);
  ASSERT_GT(slot, 0);
  ASSERT_EQ(slotSocket.size(), 1u);
  const int toSlot = slotSocket[0];
  EXPECT_EQ(ask(toSlot, "nonsense", {}, none), -EINVAL);
  EXPECT_EQ(ask(toSlot, encodeNewSlot(), {}, none), -EINVAL);
  EXPECT_EQ(ask(toSlot, encodeLaunch(request("true")), {}, none), -EINVAL);  // no descriptors
  EXPECT_EQ(ask(toSlot, encodeReap(::getpid()), {}, none), -EINVAL);         // not the task it runs
  const int64_t pid =
      ask(toSlot, encodeLaunch(request("exit 5")), {file("out"), file("err")}, none);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ask(toSlot, encodeLaunch(request("true")), {file("o2"), file("e2")}, none), -EINVAL)
      << "a slot runs one task at a time";
  ASSERT_TRUE(exited(static_cast<pid_t>(pid)));
  EXPECT_EQ(
      exitCodeOf(static_cast<int>(ask(toSlot, encodeReap(static_cast<pid_t>(pid)), {}, none))), 5);
  EXPECT_TRUE(none.empty());
  const std::string errors = readFile(dir_.path() / "launcher.err");
  for (const char* refusal :
       {"unknown kind", "requests for slots only", "launches, stops and reaps only",
        "a launch needs 2 descriptors", "not the task it runs", "a launch while task"}) {
    EXPECT_NE(errors.find(refusal), std::string::npos) << refusal << " not in:\n" << errors;
  }
  // Closing a slot's socket ends the slot supervisor.
  ::close(toSlot);
  EXPECT_TRUE(exited(static_cast<pid_t>(slot)));
  // Closing the socket ends it.
  ::close(ends[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_EQ(describeWaitStatus(status), "exited with code 0");
}

TEST_F(SupervisorLauncherTest, ServeModeTakesNoProgramAndNoContainerOptions) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{kSupervisor, "--serve", "--", "true"},
        std::vector<std::string>{kSupervisor, "--serve", "--exit-file", "x"}}) {
    SpawnOptions spawn;
    spawn.argv = argv;
    spawn.stderrPath = (dir_.path() / "usage.err").string();
    int status = 0;
    ASSERT_EQ(::waitpid(spawnProcess(spawn), &status, 0) > 0, true);
    EXPECT_EQ(exitCodeOf(status), 125);
    EXPECT_NE(readFile(dir_.path() / "usage.err").find("--serve"), std::string::npos);
  }
}

}  // namespace
}  // namespace tide::executor
