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
#include <vector>

#include "common/process_tree.h"
#include "deploy/nm/container_records.h"
#include "deploy/nm/process_group.h"
#include "rest/json.h"
#include "tests/nm/nm_test_util.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::nm {
namespace {

using testing::Descendants;
using testing::expectEndedWhileTheNodeManagerWasDown;
using testing::kBound;
using testing::kCommandLeavingDescendants;
using testing::launchRequest;
using testing::managerOptions;
using testing::readPidFile;
using testing::waitForDescendants;
using testing::waitForPidFile;
using testing_support::eventually;
using testing_support::readFile;

constexpr DurationMs kCompletionBound = 10000;

class ContainerManagerTest : public ::testing::Test {
 protected:
  ContainerManagerOptions options(MemoryEnforcement enforcement = MemoryEnforcement::kOff) {
    return managerOptions(dir_.path(), enforcement);
  }

  std::unique_ptr<ContainerManager> startManager(ContainerManagerOptions opts) {
    auto manager = std::make_unique<ContainerManager>(std::move(opts));
    manager->start();
    return manager;
  }

  std::filesystem::path containerDir(const std::string& containerId) const {
    return dir_.path() / "work" / "application_test_0001" / containerId;
  }

  std::string recordsDir() const { return (dir_.path() / "work" / ".containers").string(); }

  ContainerRecord recordFor(const std::string& containerId, pid_t pid, uint64_t startTicks) {
    ContainerRecord record;
    record.containerId = containerId;
    record.applicationId = "application_test_0001";
    record.token = "token-" + containerId;
    record.resource = {64, 1};
    record.workDir = dir_.path().string();
    record.pid = pid;
    record.startTimeTicks = startTicks;
    record.bootId = currentBootId();
    return record;
  }

  // What a previous node manager left: a container supervisor running `command` (in this
  // test's directory) and its record.
  pid_t startRecordedSupervisor(const std::string& containerId, const std::string& command) {
    ContainerRecords records(recordsDir());
    records.ensureDirectory();
    SpawnOptions spec;
    spec.argv = {TIDE_BIN_DIR "/tide-container",
                 "--grace",
                 "1000",
                 "--exit-file",
                 records.exitFile(containerId),
                 "--",
                 "/bin/sh",
                 "-c",
                 command};
    spec.workDir = dir_.path().string();
    spec.stdoutPath = (dir_.path() / (containerId + ".out")).string();
    spec.stderrPath = (dir_.path() / (containerId + ".err")).string();
    spec.grouping = ProcessGrouping::kNewSession;
    const pid_t pid = spawnProcess(spec);
    const auto info = readProcess(pid);
    EXPECT_TRUE(info.has_value());
    EXPECT_EQ(records.write(recordFor(containerId, pid, info ? info->startTimeTicks : 0)), "");
    return pid;
  }

  // A recorded supervisor running kCommandLeavingDescendants, with its descendants once they
  // wrote their pids; nothing when they did not within kBound.
  struct RecordedTree {
    pid_t supervisor = 0;
    pid_t grandchild = 0;
    pid_t daemon = 0;
  };
  std::optional<RecordedTree> startRecordedTree(const std::string& containerId) {
    RecordedTree tree;
    tree.supervisor = startRecordedSupervisor(containerId, kCommandLeavingDescendants);
    const std::optional<Descendants> descendants = waitForDescendants(dir_.path());
    if (!descendants) return std::nullopt;
    tree.grandchild = descendants->grandchild;
    tree.daemon = descendants->daemon;
    return tree;
  }

  static void reap(pid_t pid) {
    int status = 0;
    eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, kBound);
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
  const pid_t grandchild = waitForPidFile(containerDir("stop1") / "grandchild.pid");
  ASSERT_NE(grandchild, 0);
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
  const pid_t grandchild = waitForPidFile(containerDir("stubborn") / "grandchild.pid");
  ASSERT_NE(grandchild, 0);
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

TEST_F(ContainerManagerTest, WithRecoveryOffStartKillsTheContainersRecordedByAPreviousRun) {
  // A previous NM that died without cleaning up: its container is still running and its
  // record is on disk.
  const pid_t orphan =
      startRecordedSupervisor("old_container", "sleep 60 & echo $! > gc.pid; wait");
  const pid_t grandchild = waitForPidFile(dir_.path() / "gc.pid");
  ASSERT_NE(grandchild, 0);

  ContainerManagerOptions opts = options();
  opts.recovery = false;
  auto manager = startManager(opts);
  // The orphan is this test's own child, so reaping it here tells how it ended.
  int status = 0;
  ASSERT_TRUE(eventually([&] { return ::waitpid(orphan, &status, WNOHANG) == orphan; }, kBound));
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(eventually([&] { return processGone(grandchild); }, kBound));
  EXPECT_FALSE(std::filesystem::exists(recordsDir() + "/old_container.json"));
  EXPECT_FALSE(manager->report("old_container").has_value());
}

TEST_F(ContainerManagerTest, RunningContainersAreRecordedUntilTheRmAcknowledgedTheirEnd) {
  auto manager = startManager(options());
  const rest::ContainerReport started = manager->launch(launchRequest("rec", "sleep 60"));
  const std::string record = recordsDir() + "/rec.json";
  ASSERT_TRUE(std::filesystem::exists(record));
  const ContainerRecord running = parseContainerRecord(readFile(record), record);
  EXPECT_EQ(running.pid, started.pid);
  EXPECT_EQ(running.startTimeTicks, readProcess(started.pid)->startTimeTicks);
  EXPECT_EQ(running.bootId, currentBootId());
  EXPECT_EQ(running.resource.memoryMb, 64);
  EXPECT_FALSE(running.completion.has_value());

  manager->stop("rec", StopReason::kAppMaster, /*wait=*/true);
  const ContainerRecord completed = parseContainerRecord(readFile(record), record);
  ASSERT_TRUE(completed.completion.has_value());
  EXPECT_EQ(completed.completion->exitStatus, rest::exit_status::kKilledByAppMaster);

  std::vector<std::string> completedIds;
  manager->heartbeat(&completedIds);
  manager->markReported(completedIds);
  EXPECT_FALSE(std::filesystem::exists(record));
  EXPECT_FALSE(std::filesystem::exists(recordsDir() + "/rec.exit"));
}

// --- Recovery (nm.recovery.enabled): what a previous node manager recorded is re-attached to.
// The previous NM's container is a real tide-container, started here with a record as tide-nm
// writes it; it is this test's child, not the manager's, as it would be init's after a crash.

TEST_F(ContainerManagerTest, ARecordedContainerStillRunningIsReattachedReportedAndStoppedWhole) {
  const std::optional<RecordedTree> tree = startRecordedTree("kept");
  ASSERT_TRUE(tree.has_value());

  auto manager = startManager(options());
  EXPECT_EQ(manager->recoverySummary().reattached, 1);
  const auto report = manager->report("kept");
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->state, "RUNNING");
  EXPECT_EQ(report->pid, tree->supervisor);
  EXPECT_EQ(report->applicationId, "application_test_0001");
  EXPECT_TRUE(manager->tokenMatches("kept", "token-kept"));
  EXPECT_FALSE(manager->tokenMatches("kept", "token-other"));
  EXPECT_EQ(manager->allocated().memoryMb, 64);
  const rest::NodeHeartbeat beat = manager->heartbeat(nullptr);
  ASSERT_EQ(beat.containers.size(), 1u);
  EXPECT_EQ(beat.containers[0].state, "RUNNING");
  EXPECT_THROW(manager->launch(launchRequest("kept", "true")), ContainerConflictError);
  EXPECT_FALSE(processGone(tree->grandchild));

  const auto stopped = manager->stop("kept", StopReason::kAppMaster, /*wait=*/true);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->state, "COMPLETE");
  EXPECT_EQ(stopped->exitStatus, rest::exit_status::kKilledByAppMaster);
  EXPECT_TRUE(eventually([&] { return processGone(tree->grandchild) && processGone(tree->daemon); },
                         kBound));
  reap(tree->supervisor);
}

TEST_F(ContainerManagerTest, ARecordedContainerThatEndedMeanwhileIsReportedWithTheReason) {
  const pid_t supervisor = startRecordedSupervisor("ended", "echo bad >&2; exit 5");
  reap(supervisor);  // it ended before any node manager watched it

  auto manager = startManager(options());
  EXPECT_EQ(manager->recoverySummary().completed, 1);
  const auto report = manager->report("ended");
  ASSERT_TRUE(report.has_value());
  expectEndedWhileTheNodeManagerWasDown(*report, 5);
  std::vector<std::string> completedIds;
  const rest::NodeHeartbeat beat = manager->heartbeat(&completedIds);
  ASSERT_EQ(beat.containers.size(), 1u);
  EXPECT_EQ(beat.containers[0].state, "COMPLETE");
  EXPECT_EQ(beat.containers[0].exitStatus, 5);
  EXPECT_EQ(completedIds, std::vector<std::string>{"ended"});
}

TEST_F(ContainerManagerTest, ARecordWhosePidWasRecycledIsNeitherAdoptedNorKilled) {
  // An unrelated process now has the recorded pid: same pid, another start time.
  SpawnOptions spec;
  spec.argv = {"/bin/sleep", "60"};
  spec.grouping = ProcessGrouping::kNewSession;
  const pid_t unrelated = spawnProcess(spec);
  const uint64_t realStart = readProcess(unrelated)->startTimeTicks;
  ContainerRecords records(recordsDir());
  records.ensureDirectory();
  ContainerRecord record = recordFor("recycled", unrelated, realStart - 1);
  ASSERT_EQ(records.write(record), "");

  {
    auto manager = startManager(options());
    EXPECT_EQ(manager->recoverySummary().reattached, 0);
    const auto report = manager->report("recycled");
    ASSERT_TRUE(report.has_value());
    EXPECT_EQ(report->state, "COMPLETE");
    EXPECT_EQ(report->exitStatus, rest::exit_status::kAborted);
    EXPECT_NE(report->diagnostics.find("now belongs to another process"), std::string::npos)
        << report->diagnostics;
    EXPECT_TRUE(manager->stop("recycled", StopReason::kResourceManager, /*wait=*/true));
  }
  // Nor does a node manager with recovery off kill it.
  record.completion.reset();
  ASSERT_EQ(records.write(record), "");
  {
    ContainerManagerOptions opts = options();
    opts.recovery = false;
    auto manager = startManager(opts);
  }
  const auto info = readProcess(unrelated);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->startTimeTicks, realStart);
  EXPECT_EQ(info->state, 'S');  // neither killed nor stopped
  ::kill(unrelated, SIGKILL);
  reap(unrelated);
}

TEST_F(ContainerManagerTest, AnAdoptedContainerOverItsMemoryIsKilledWhole) {
  const pid_t supervisor =
      startRecordedSupervisor("hog",
                              "while [ ! -e grow ]; do sleep 0.05; done; "
                              "(head -c 314572800 /dev/zero; sleep 30) | tail > /dev/null");
  auto manager = startManager(options(MemoryEnforcement::kWatchdog));
  ASSERT_EQ(manager->report("hog")->state, "RUNNING");
  std::ofstream(dir_.path() / "grow") << "";
  ASSERT_TRUE(manager->waitForCompletion("hog", kCompletionBound));
  const rest::ContainerReport done = *manager->report("hog");
  EXPECT_EQ(done.exitStatus, rest::exit_status::kKilledExceededPmem);
  EXPECT_NE(done.diagnostics.find("of 64 MB physical memory used"), std::string::npos)
      << done.diagnostics;
  reap(supervisor);
}

TEST_F(ContainerManagerTest, WhatAnAdoptedSupervisorKilledBySigkillLeftIsKilled) {
  // Its processes go to init, not to the manager: the manager remembers its tree.
  const std::optional<RecordedTree> tree = startRecordedTree("abandoned");
  ASSERT_TRUE(tree.has_value());
  auto manager = startManager(options());
  ASSERT_EQ(manager->report("abandoned")->state, "RUNNING");
  ASSERT_EQ(::kill(tree->supervisor, SIGKILL), 0);
  ASSERT_TRUE(manager->waitForCompletion("abandoned", kCompletionBound));
  EXPECT_EQ(manager->report("abandoned")->exitStatus, rest::exit_status::kAborted);
  EXPECT_TRUE(eventually([&] { return processGone(tree->grandchild) && processGone(tree->daemon); },
                         kBound));
  reap(tree->supervisor);
}

TEST_F(ContainerManagerTest, ARecordOfANewerVersionStopsTheStartWithAClearError) {
  ContainerRecords records(recordsDir());
  records.ensureDirectory();
  std::ofstream(recordsDir() + "/container_9.json")
      << R"({"version":2,"containerId":"container_9"})";
  ContainerManager manager(options());
  try {
    manager.start();
    ADD_FAILURE() << "started over a record it cannot read";
  } catch (const ContainerRecordError& e) {
    EXPECT_NE(std::string(e.what()).find(recordsDir() + "/container_9.json"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("newer tide-nm"), std::string::npos) << e.what();
  }
  // The record is left for the newer tide-nm, or for the operator.
  EXPECT_TRUE(std::filesystem::exists(recordsDir() + "/container_9.json"));
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
