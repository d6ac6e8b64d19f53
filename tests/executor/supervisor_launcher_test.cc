// executor/supervisor_launcher.h with the real tide-container --serve: a forked supervisor runs
// the command as an exec'd one would (environment, directory, descriptors, its own process
// group, the exit status or signal), nothing outlives the launcher however it dies, a launcher
// that died is replaced at the next launch, and a bad request is refused without stopping it.
// Leftovers are found by walking /proc for a marker in the environment, never by name.

#include "executor/supervisor_launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

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
    r.graceMs = 300;
    return r;
  }
  int file(const std::string& name) {
    const int fd =
        ::open((dir_.path() / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    files_.push_back(fd);
    return fd;
  }
  // Waits (bounded) until the supervisor has exited, as the runner's pidfd poll does.
  static bool exited(pid_t pid) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
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

TEST_F(SupervisorLauncherTest, NothingOutlivesAKilledLauncherAndTheNextLaunchGetsANewOne) {
  SupervisorLauncher launcher(kSupervisor, {});
  const std::string ready = (dir_.path() / "ready").string();
  const pid_t pid = launcher.launch(
      request("( setsid sh -c 'exec sleep 300' & ) ; sleep 301 & touch " + ready + "; wait"),
      file("out"), file("err"));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }, 20s));
  ASSERT_TRUE(eventually([&] { return left().size() >= 3; }, 20s)) << describe(left());
  const pid_t first = launcher.launcherPid();
  ASSERT_GT(first, 0);
  // ps tells the launcher from the supervisors it forked.
  EXPECT_EQ(readFile("/proc/" + std::to_string(first) + "/cmdline")
                .find(std::string(kSupervisor) + '\0' + "--serve"),
            0u);
  const std::string supervisor = readFile("/proc/" + std::to_string(pid) + "/cmdline");
  EXPECT_EQ(supervisor.substr(0, supervisor.find_last_not_of('\0') + 1),
            std::string(kSupervisor) + '\0' + "--task-supervisor");
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  EXPECT_TRUE(eventually([&] { return left().empty(); }, 20s)) << describe(left());
  // The supervisor went with it and was reaped by someone else: the launcher cannot say how.
  EXPECT_FALSE(launcher.reap(pid).has_value());
  const pid_t next = launcher.launch(request("exit 0"), file("out2"), file("err2"));
  EXPECT_NE(launcher.launcherPid(), first);
  ASSERT_TRUE(exited(next));
  EXPECT_EQ(launcher.reap(next), std::optional<int>(0));
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
  const auto ask = [&](const std::string& payload, const std::vector<int>& fds) {
    std::string answer;
    std::vector<int> received;
    EXPECT_TRUE(sendFrame(ends[0], payload, fds));
    EXPECT_TRUE(receiveFrame(ends[0], answer, received));
    return decodeAnswer(answer);
  };
  EXPECT_EQ(ask("nonsense", {}), -EINVAL);
  EXPECT_EQ(ask(encodeLaunch(request("true")), {}), -EINVAL);  // no descriptors to give it
  EXPECT_EQ(ask(encodeReap(::getpid()), {}), -ECHILD);         // not a child of the launcher
  const int64_t pid = ask(encodeLaunch(request("exit 5")), {file("out"), file("err")});
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(exited(static_cast<pid_t>(pid)));
  EXPECT_EQ(exitCodeOf(static_cast<int>(ask(encodeReap(static_cast<pid_t>(pid)), {}))), 5);
  const std::string errors = readFile(dir_.path() / "launcher.err");
  EXPECT_NE(errors.find("unknown kind"), std::string::npos) << errors;
  EXPECT_NE(errors.find("a launch needs 2 descriptors"), std::string::npos) << errors;
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
