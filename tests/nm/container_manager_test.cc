// ContainerManager with real processes: launch, output files, exit codes, stop with the whole
// process group, the resident-set watchdog, restart cleanup and heartbeat bookkeeping.

#include "deploy/nm/container_manager.h"
#include "common/spawn.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "deploy/nm/process_group.h"
#include "deploy/nm/process_group_records.h"
#include "rest/json.h"
#include "tests/nm/nm_test_util.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::nm {
namespace {

using testing::kBound;
using testing::launchRequest;
using testing::readPidFile;
using testing_support::eventually;
using testing_support::readFile;

constexpr DurationMs kCompletionBound = 10000;

class ContainerManagerTest : public ::testing::Test {
 protected:
  ContainerManagerOptions options(MemoryEnforcement enforcement = MemoryEnforcement::kOff) {
    ContainerManagerOptions result;
    result.workDir = (dir_.path() / "work").string();
    result.nmAddress = "127.0.0.1:18042";
    result.capacity = {4096, 4};
    result.memoryEnforcement = enforcement;
    result.stopGracePeriod = 2000;
    result.reapInterval = 20;
    result.memoryCheckInterval = 50;
    return result;
  }

  std::unique_ptr<ContainerManager> startManager(ContainerManagerOptions opts) {
    auto manager = std::make_unique<ContainerManager>(std::move(opts));
    manager->start();
    return manager;
  }

  std::filesystem::path containerDir(const std::string& containerId) const {
    return dir_.path() / "work" / "application_test_0001" / containerId;
  }

  testing_support::TempDir dir_;
};

TEST_F(ContainerManagerTest, RunsTheCommandInItsWorkDirAndRecordsTheExitCode) {
  auto manager = startManager(options());
  const rest::ContainerReport started =
      manager->launch(launchRequest("c1", "echo out; echo err >&2; pwd > cwd; exit 3"));
  EXPECT_EQ(started.state, "RUNNING");
  EXPECT_GT(started.pid, 0);
  EXPECT_EQ(started.workDir, containerDir("c1").string());

  ASSERT_TRUE(manager->waitForCompletion("c1", kCompletionBound));
  const rest::ContainerReport done = *manager->report("c1");
  EXPECT_EQ(done.state, "COMPLETE");
  EXPECT_EQ(done.exitStatus, 3);
  // A failure carries the end of its stderr.
  EXPECT_EQ(done.diagnostics, "exited with code 3\nlast lines of its stderr:\nerr");
  EXPECT_EQ(readFile(containerDir("c1") / "stdout"), "out\n");
  EXPECT_EQ(readFile(containerDir("c1") / "stderr"), "err\n");
  EXPECT_EQ(readFile(containerDir("c1") / "cwd"), containerDir("c1").string() + "\n");
}

TEST_F(ContainerManagerTest, EnvironmentIsTheRequestsPlusPathHomeAndTideVariables) {
  ::setenv("TIDE_NM_TEST_SHOULD_NOT_LEAK", "1", 1);
  auto manager = startManager(options());
  rest::ContainerLaunchRequest request = launchRequest("env1", "env > env.txt");
  request.environment = {{"GREETING", "hello world"}, {"HOME", "/custom/home"}};
  manager->launch(request);
  ASSERT_TRUE(manager->waitForCompletion("env1", kCompletionBound));
  ::unsetenv("TIDE_NM_TEST_SHOULD_NOT_LEAK");

  const std::string env = readFile(containerDir("env1") / "env.txt");
  EXPECT_NE(env.find("GREETING=hello world\n"), std::string::npos) << env;
  EXPECT_NE(env.find("HOME=/custom/home\n"), std::string::npos) << env;
  EXPECT_NE(env.find("PATH="), std::string::npos) << env;
  EXPECT_NE(env.find("TIDE_CONTAINER_ID=env1\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TIDE_APPLICATION_ID=application_test_0001\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TIDE_NM_ADDRESS=127.0.0.1:18042\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("TIDE_NM_TEST_SHOULD_NOT_LEAK"), std::string::npos) << env;
}

TEST_F(ContainerManagerTest, AContainerLeadsItsOwnProcessGroup) {
  auto manager = startManager(options());
  const rest::ContainerReport started =
      manager->launch(launchRequest("pg", "ps -o pgid= -p $$ > pgid; sleep 60"));
  ASSERT_TRUE(eventually([&] { return readPidFile(containerDir("pg") / "pgid") != 0; }, kBound));
  EXPECT_EQ(readPidFile(containerDir("pg") / "pgid"), started.pid);
  EXPECT_NE(started.pid, ::getpgrp());
}

TEST_F(ContainerManagerTest, StopKillsTheWholeProcessGroupAndReportsKilledByAppMaster) {
  auto manager = startManager(options());
  const rest::ContainerReport started =
      manager->launch(launchRequest("stop1", "sleep 60 & echo $! > grandchild.pid; wait"));
  pid_t grandchild = 0;
  ASSERT_TRUE(eventually(
      [&] {
        grandchild = readPidFile(containerDir("stop1") / "grandchild.pid");
        return grandchild != 0;
      },
      kBound));
  EXPECT_FALSE(processGone(grandchild));

  const auto stopped = manager->stop("stop1", StopReason::kAppMaster, /*wait=*/true);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->state, "COMPLETE");
  EXPECT_EQ(stopped->exitStatus, rest::exit_status::kKilledByAppMaster);
  EXPECT_EQ(stopped->diagnostics, "stopped on request");
  EXPECT_TRUE(processGone(static_cast<pid_t>(started.pid)));
  EXPECT_TRUE(eventually([&] { return processGone(grandchild); }, kBound));
}

TEST_F(ContainerManagerTest, StopEscalatesToSigkillWhenSigtermIsIgnored) {
  ContainerManagerOptions opts = options();
  opts.stopGracePeriod = 300;
  auto manager = startManager(opts);
  // An ignored SIGTERM stays ignored across fork and exec, so the sleep ignores it too.
  manager->launch(
      launchRequest("stubborn", "trap '' TERM; sleep 60 & echo $! > grandchild.pid; wait"));
  pid_t grandchild = 0;
  ASSERT_TRUE(eventually(
      [&] {
        grandchild = readPidFile(containerDir("stubborn") / "grandchild.pid");
        return grandchild != 0;
      },
      kBound));
  const auto before = std::chrono::steady_clock::now();
  const auto stopped = manager->stop("stubborn", StopReason::kAppMaster, /*wait=*/true);
  const auto took = std::chrono::steady_clock::now() - before;
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->state, "COMPLETE");
  EXPECT_EQ(stopped->exitStatus, rest::exit_status::kKilledByAppMaster);
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_TRUE(eventually([&] { return processGone(grandchild); }, kBound));
}

TEST_F(ContainerManagerTest, StopForTheResourceManagerKeepsTheExitItGets) {
  auto manager = startManager(options());
  manager->launch(launchRequest("rm1", "sleep 60"));
  const auto stopped = manager->stop("rm1", StopReason::kResourceManager, /*wait=*/true);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->exitStatus, 128 + SIGTERM);
  EXPECT_NE(stopped->diagnostics.find("stopped by the resource manager"), std::string::npos)
      << stopped->diagnostics;
}

TEST_F(ContainerManagerTest, WhatAContainerLeavesInItsGroupEndsWithIt) {
  auto manager = startManager(options());
  manager->launch(launchRequest("leaver", "sleep 60 & echo $! > grandchild.pid; exit 0"));
  ASSERT_TRUE(manager->waitForCompletion("leaver", kCompletionBound));
  EXPECT_EQ(manager->report("leaver")->exitStatus, 0);
  const pid_t grandchild = readPidFile(containerDir("leaver") / "grandchild.pid");
  ASSERT_NE(grandchild, 0);
  EXPECT_TRUE(eventually([&] { return processGone(grandchild); }, kBound));
}

TEST_F(ContainerManagerTest, AFailedContainersDiagnosticsEndWithTheLastTenLinesOfItsStderr) {
  auto manager = startManager(options());
  manager->launch(launchRequest(
      "noisy", "i=1; while [ $i -le 15 ]; do echo line-$i >&2; i=$((i+1)); done; exit 1"));
  manager->launch(launchRequest("quiet-ok", "echo fine >&2; exit 0"));
  ASSERT_TRUE(manager->waitForCompletion("noisy", kCompletionBound));
  ASSERT_TRUE(manager->waitForCompletion("quiet-ok", kCompletionBound));
  std::string expected = "exited with code 1\nlast lines of its stderr:";
  for (int i = 6; i <= 15; ++i) expected += "\nline-" + std::to_string(i);
  EXPECT_EQ(manager->report("noisy")->diagnostics, expected);
  // Success needs no explanation.
  EXPECT_EQ(manager->report("quiet-ok")->diagnostics, "exited with code 0");
}

TEST_F(ContainerManagerTest, ASignalEndReportsOneHundredTwentyEightPlusTheSignal) {
  auto manager = startManager(options());
  manager->launch(launchRequest("sig", "kill -9 $$"));
  ASSERT_TRUE(manager->waitForCompletion("sig", kCompletionBound));
  const rest::ContainerReport done = *manager->report("sig");
  EXPECT_EQ(done.exitStatus, 128 + 9);
  EXPECT_EQ(done.diagnostics, "killed by signal 9 (SIGKILL)");
}

TEST_F(ContainerManagerTest, WatchdogKillsAContainerOverItsMemory) {
  auto manager = startManager(options(MemoryEnforcement::kWatchdog));
  EXPECT_EQ(manager->memoryEnforcement(), MemoryEnforcement::kWatchdog);
  // tail keeps a line without newline in memory: 300 MiB of zeros against a 64 MiB limit.
  // The sleep holds the pipe open so the memory stays in use until the watchdog acts.
  manager->launch(launchRequest("hog", "(head -c 314572800 /dev/zero; sleep 30) | tail > /dev/null",
                                /*memoryMb=*/64));
  ASSERT_TRUE(manager->waitForCompletion("hog", kCompletionBound));
  const rest::ContainerReport done = *manager->report("hog");
  EXPECT_EQ(done.exitStatus, rest::exit_status::kKilledExceededPmem);
  EXPECT_NE(done.diagnostics.find("of 64 MB physical memory used"), std::string::npos)
      << done.diagnostics;
  EXPECT_GT(done.memoryUsedMb, 64);
}

TEST_F(ContainerManagerTest, WatchdogLeavesAContainerWithinItsMemoryAloneAndReportsUsage) {
  auto manager = startManager(options(MemoryEnforcement::kWatchdog));
  manager->launch(launchRequest("small", "sleep 60", /*memoryMb=*/64));
  EXPECT_TRUE(eventually([&] { return manager->report("small")->memoryUsedMb > 0; }, kBound));
  EXPECT_EQ(manager->report("small")->state, "RUNNING");
}

TEST_F(ContainerManagerTest, AutoFallsBackToTheWatchdogWhenCgroupsAreNotUsable) {
  ContainerManagerOptions opts = options(MemoryEnforcement::kAuto);
  opts.cgroupRoot = (dir_.path() / "no-cgroup-here").string();
  auto manager = startManager(opts);
  EXPECT_EQ(manager->memoryEnforcement(), MemoryEnforcement::kWatchdog);
  EXPECT_NE(manager->memoryEnforcementReason().find("not a cgroup v2 hierarchy"), std::string::npos)
      << manager->memoryEnforcementReason();

  ContainerManagerOptions strict = options(MemoryEnforcement::kCgroup);
  strict.cgroupRoot = opts.cgroupRoot;
  ContainerManager refusing(strict);
  EXPECT_THROW(refusing.start(), std::runtime_error);
}

// The cgroup path against a directory tree shaped like cgroupfs (regular files stand in for
// the kernel's): the container's shell writes itself into its cgroup.procs before running the
// command, memory.max carries the limit, and an oom_kill in memory.events reports -104.
TEST_F(ContainerManagerTest, CgroupModeJoinsTheContainersCgroupAndReportsAnOomKill) {
  if (readFile("/proc/self/cgroup").find("0::/\n") == std::string::npos) {
    GTEST_SKIP() << "the fake tree assumes this process sits at the cgroup v2 root";
  }
  const std::filesystem::path root = dir_.path() / "cgroupfs";
  std::filesystem::create_directories(root);
  std::ofstream(root / "cgroup.controllers") << "cpu memory pids\n";
  ContainerManagerOptions opts = options(MemoryEnforcement::kCgroup);
  opts.cgroupRoot = root.string();
  opts.cgroupName = "tide-nm-test";
  auto manager = startManager(opts);
  ASSERT_EQ(manager->memoryEnforcement(), MemoryEnforcement::kCgroup);

  const rest::ContainerReport started =
      manager->launch(launchRequest("boxed", "echo \"$TIDE_CONTAINER_ID\"; sleep 60", 64));
  const std::filesystem::path group = root / "tide-nm-test" / "boxed";
  EXPECT_EQ(readFile(group / "memory.max"), std::to_string(64 * 1024 * 1024));
  ASSERT_TRUE(eventually([&] { return readPidFile(group / "cgroup.procs") != 0; }, kBound));
  EXPECT_EQ(readPidFile(group / "cgroup.procs"), started.pid);
  ASSERT_TRUE(
      eventually([&] { return readFile(containerDir("boxed") / "stdout") == "boxed\n"; }, kBound));

  std::ofstream(group / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
  const auto stopped = manager->stop("boxed", StopReason::kResourceManager, /*wait=*/true);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->exitStatus, rest::exit_status::kKilledExceededPmem);
  EXPECT_NE(stopped->diagnostics.find("beyond physical memory limits: 64 MB"), std::string::npos)
      << stopped->diagnostics;
}

TEST_F(ContainerManagerTest, StartKillsProcessGroupsRecordedByAPreviousRun) {
  // A previous NM that died without cleaning up: its container is still running and its
  // record is on disk.
  const std::string workDir = (dir_.path() / "work").string();
  ProcessGroupRecords records(workDir + "/.containers");
  records.ensureDirectory();
  SpawnOptions spec;
  spec.argv = {"/bin/sh", "-c", "sleep 60 & wait"};
  spec.workDir = dir_.path().string();
  spec.stdoutPath = (dir_.path() / "orphan.out").string();
  spec.stderrPath = (dir_.path() / "orphan.err").string();
  spec.grouping = ProcessGrouping::kNewSession;
  const pid_t orphan = spawnProcess(spec);
  ASSERT_EQ(records.record("old_container", orphan), "");

  auto manager = startManager(options());
  // The orphan is this test's own child, so reaping it here tells how it ended.
  int status = 0;
  ASSERT_TRUE(eventually([&] { return ::waitpid(orphan, &status, WNOHANG) == orphan; }, kBound));
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_FALSE(std::filesystem::exists(workDir + "/.containers/old_container.pgid"));
}

TEST_F(ContainerManagerTest, RunningContainersAreRecordedUntilTheyEnd) {
  auto manager = startManager(options());
  const rest::ContainerReport started = manager->launch(launchRequest("rec", "sleep 60"));
  const std::filesystem::path record = dir_.path() / "work" / ".containers" / "rec.pgid";
  ASSERT_TRUE(std::filesystem::exists(record));
  EXPECT_EQ(std::stol(readFile(record)), started.pid);
  manager->stop("rec", StopReason::kAppMaster, /*wait=*/true);
  EXPECT_FALSE(std::filesystem::exists(record));
}

TEST_F(ContainerManagerTest, RefusesDuplicateIdsAndUnusableFields) {
  auto manager = startManager(options());
  manager->launch(launchRequest("dup", "sleep 60"));
  EXPECT_THROW(manager->launch(launchRequest("dup", "true")), ContainerConflictError);

  auto refusedField = [&](const rest::ContainerLaunchRequest& request) -> std::string {
    try {
      manager->launch(request);
    } catch (const rest::JsonFieldError& error) {
      return error.fieldPath();
    }
    return "";
  };
  EXPECT_EQ(refusedField(launchRequest("../escape", "true")), "containerId");
  EXPECT_EQ(refusedField(launchRequest(".hidden", "true")), "containerId");
  rest::ContainerLaunchRequest badApp = launchRequest("ok1", "true");
  badApp.applicationId = "a/b";
  EXPECT_EQ(refusedField(badApp), "applicationId");
  EXPECT_EQ(refusedField(launchRequest("ok2", "true", /*memoryMb=*/0)), "resource.memory");
}

TEST_F(ContainerManagerTest, HeartbeatCarriesACompletionUntilTheRmHasSeenIt) {
  auto manager = startManager(options());
  manager->launch(launchRequest("running", "sleep 60"));
  manager->launch(launchRequest("done", "exit 4"));
  ASSERT_TRUE(manager->waitForCompletion("done", kCompletionBound));

  std::vector<std::string> completed;
  rest::NodeHeartbeat first = manager->heartbeat(&completed);
  ASSERT_EQ(first.containers.size(), 2u);
  EXPECT_EQ(first.containers[0].containerId, "running");
  EXPECT_EQ(first.containers[0].state, "RUNNING");
  EXPECT_EQ(first.containers[1].containerId, "done");
  EXPECT_EQ(first.containers[1].state, "COMPLETE");
  EXPECT_EQ(first.containers[1].exitStatus, 4);
  EXPECT_EQ(completed, std::vector<std::string>{"done"});

  // Not acknowledged yet (e.g. the heartbeat failed): still reported.
  EXPECT_EQ(manager->heartbeat(nullptr).containers.size(), 2u);

  manager->markReported(completed);
  rest::NodeHeartbeat second = manager->heartbeat(nullptr);
  ASSERT_EQ(second.containers.size(), 1u);
  EXPECT_EQ(second.containers[0].containerId, "running");
  EXPECT_TRUE(manager->report("done").has_value());  // still listed for GET
}

TEST_F(ContainerManagerTest, KeepsOnlyABoundedNumberOfReportedCompletions) {
  ContainerManagerOptions opts = options();
  opts.completedRetained = 2;
  auto manager = startManager(opts);
  for (const char* id : {"q1", "q2", "q3", "q4"}) {
    manager->launch(launchRequest(id, "true"));
    ASSERT_TRUE(manager->waitForCompletion(id, kCompletionBound));
  }
  std::vector<std::string> completed;
  manager->heartbeat(&completed);
  EXPECT_EQ(completed.size(), 4u);
  manager->markReported(completed);
  const auto reports = manager->reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].containerId, "q3");
  EXPECT_EQ(reports[1].containerId, "q4");
}

TEST_F(ContainerManagerTest, StopAllEndsEveryContainer) {
  ContainerManagerOptions opts = options();
  opts.stopGracePeriod = 300;
  auto manager = startManager(opts);
  const auto a = manager->launch(launchRequest("a", "sleep 60"));
  const auto b = manager->launch(launchRequest("b", "trap '' TERM; sleep 60"));
  manager->stopAll();
  EXPECT_EQ(manager->report("a")->state, "COMPLETE");
  EXPECT_EQ(manager->report("b")->state, "COMPLETE");
  EXPECT_TRUE(processGone(static_cast<pid_t>(a.pid)));
  EXPECT_TRUE(processGone(static_cast<pid_t>(b.pid)));
  EXPECT_THROW(manager->launch(launchRequest("late", "true")), std::runtime_error);
}

}  // namespace
}  // namespace tide::nm
