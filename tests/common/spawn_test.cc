// common/spawn.h and common/process_tree.h with real processes: every option does what it says,
// a failure names the program and the step, and a process tree is found by parent links.

#include "common/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/process_tree.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using testing_support::readFile;

int waitExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

TEST(SpawnTest, RunsWithTheGivenEnvironmentDirectoryAndOutputFiles) {
  testing_support::TempDir dir;
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "echo \"$ONLY\" $(pwd); echo err >&2; exit 3"};
  options.environment = std::vector<std::string>{"ONLY=this"};
  options.workDir = dir.path().string();
  options.stdoutPath = (dir.path() / "out").string();
  options.stderrPath = (dir.path() / "err").string();
  const int status = waitExit(spawnProcess(options));
  EXPECT_EQ(exitCodeOf(status), 3);
  EXPECT_EQ(describeWaitStatus(status), "exited with code 3");
  EXPECT_EQ(readFile(options.stdoutPath), "this " + dir.path().string() + "\n");
  EXPECT_EQ(readFile(options.stderrPath), "err\n");
}

TEST(SpawnTest, OutputGoesToDescriptorsOpenedAheadWhichTheChildAloneKeepsNoOther) {
  testing_support::TempDir dir;
  const int out = ::open((dir.path() / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  const int err = ::open((dir.path() / "err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(out, 0);
  ASSERT_GE(err, 0);
  SpawnOptions options;
  // The descriptors become 1 and 2; their numbers in the parent are closed in the child.
  options.argv = {"/bin/sh", "-c",
                  "echo out; echo err >&2; [ -e /proc/self/fd/" + std::to_string(out) +
                      " ] && echo leaked; exit 0"};
  options.stdoutFd = out;
  options.stderrFd = err;
  options.stdoutPath = (dir.path() / "not-this").string();  // the descriptor wins
  EXPECT_EQ(exitCodeOf(waitExit(spawnProcess(options))), 0);
  ::close(out);
  ::close(err);
  EXPECT_EQ(readFile(dir.path() / "out"), "out\n");
  EXPECT_EQ(readFile(dir.path() / "err"), "err\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "not-this"));
}

TEST(SpawnTest, ANewSessionAndANewProcessGroupAreLedByTheChild) {
  for (ProcessGrouping grouping : {ProcessGrouping::kNewSession, ProcessGrouping::kNewProcessGroup,
                                   ProcessGrouping::kInherit}) {
    SpawnOptions options;
    options.argv = {"/bin/sleep", "30"};
    options.grouping = grouping;
    const pid_t pid = spawnProcess(options);
    const auto info = readProcess(pid);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->ppid, ::getpid());
    EXPECT_EQ(info->pgrp == pid, grouping != ProcessGrouping::kInherit);
    EXPECT_EQ(info->session == pid, grouping == ProcessGrouping::kNewSession);
    ::kill(pid, SIGKILL);
    const int status = waitExit(pid);
    EXPECT_EQ(describeWaitStatus(status), "killed by signal 9 (SIGKILL)");
    EXPECT_EQ(exitCodeOf(status), 128 + SIGKILL);
  }
}

TEST(SpawnTest, FailuresNameTheProgramAndTheStep) {
  SpawnOptions missing;
  missing.argv = {"/no/such/tide-program"};
  try {
    spawnProcess(missing);
    FAIL() << "a missing program started";
  } catch (const SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start '/no/such/tide-program' (exec)"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.code().value(), ENOENT);
  }
  SpawnOptions badOutput;
  badOutput.argv = {"/bin/true"};
  badOutput.stdoutPath = "/no/such/dir/out";
  EXPECT_THROW(spawnProcess(badOutput), SpawnError);
  EXPECT_THROW(spawnProcess(SpawnOptions{}), std::invalid_argument);
}

TEST(SpawnTest, FindProgramFollowsPath) {
  EXPECT_EQ(findProgram("sh", "/no/such/dir:/bin"), std::optional<std::string>("/bin/sh"));
  EXPECT_EQ(findProgram("tide-no-such-program", "/bin:/usr/bin"), std::nullopt);
  EXPECT_EQ(findProgram("./relative/prog", "/bin"), std::optional<std::string>("./relative/prog"));
}

TEST(ProcessTreeTest, DescendantsAreFoundByParentLinksAcrossSessionsAndKilled) {
  testing_support::TempDir dir;
  const std::string ready = (dir.path() / "ready").string();
  SpawnOptions options;
  // A child, and a grandchild that leads a session of its own (setsid -w keeps its parent).
  options.argv = {"/bin/sh", "-c",
                  "sleep 30 & setsid -w sh -c 'sleep 31 & touch " + ready + "; wait' & wait"};
  options.grouping = ProcessGrouping::kNewProcessGroup;
  const pid_t root = spawnProcess(options);
  testing_support::eventually([&] { return std::filesystem::exists(ready); },
                              std::chrono::seconds(20));
  const std::vector<ProcessInfo> tree = descendantsOf(root, readProcessTable());
  // sleep 30, setsid's sh (setsid -w forks it), sleep 31 (setsid itself may exec or fork).
  EXPECT_GE(tree.size(), 3u);
  bool otherSession = false;
  for (const ProcessInfo& info : tree) otherSession = otherSession || info.session != root;
  EXPECT_TRUE(otherSession);
  EXPECT_GT(treeResidentBytes(root, readProcessTable()), 0);

  EXPECT_TRUE(killDescendants(root));
  for (const ProcessInfo& info : descendantsOf(root, readProcessTable())) {
    EXPECT_EQ(info.state, 'Z') << info.pid;  // dead, waiting for their parents
  }
  ::kill(root, SIGKILL);
  waitExit(root);
}

}  // namespace
}  // namespace tide
