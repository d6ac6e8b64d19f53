// Containment with real processes: whatever a container's processes do (children, setsid,
// double fork), nothing of the container is left once it stops for any reason, and a container
// over its memory is killed whole with a reason that says so. Leftovers are found by walking
// /proc for an environment entry each test sets (tests/faults/proc_walk.h), never by name.
//
// The ContainerManager tests run the node manager's container code in this process; the
// `tide run` tests start the whole stack (tide-rm, tide-nm, tide-am, executors, tasks).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/child_process.h"
#include "common/process_tree.h"
#include "deploy/cluster_client.h"
#include "deploy/nm/container_manager.h"
#include "executor/task_runner.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"
#include "tests/faults/outputs.h"
#include "tests/faults/proc_walk.h"
#include "tests/faults/tally.h"
#include "tests/nm/nm_test_util.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::faults {
namespace {

using namespace std::chrono_literals;

// Each test's record for the suite's one line (tally.h): the fault, and what it left behind.
void recordFault(FaultTally& tally, const std::vector<WalkedProcess>& leftovers) {
  tally.injected();
  tally.left(static_cast<int>(leftovers.size()));
}
// After a fault: waits (bounded) until `find` finds nothing, records the fault and what was
// left in the tally, and expects nothing left.
void expectNoneLeftAfterFault(FaultTally& tally,
                              const std::function<std::vector<WalkedProcess>()>& find,
                              std::chrono::milliseconds bound = std::chrono::seconds(20)) {
  std::vector<WalkedProcess> leftovers = waitUntilNoneLeft(find, bound);
  recordFault(tally, leftovers);
  EXPECT_TRUE(leftovers.empty()) << describe(leftovers);
}

std::string uniqueMarker(const std::string& what) {
  std::random_device random;
  return "TIDE_FAULT_" + what + "=" + std::to_string(::getpid()) + "-" + std::to_string(random()) +
         std::to_string(random());
}

using testing_support::readFile;

// The waits here are for processes and their files: 30 s unless a test says otherwise.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds bound = 30s) {
  return testing_support::eventually(condition, bound, 20ms);
}

// A container command that leaves processes every way a command can: a background child, a
// child in a process group of its own, and a daemon (setsid and a double fork, so that its
// parent is gone and it leads a session of its own). `ready` is written once all are started.
std::string daemonisingCommand(const std::string& ready) {
  return "sleep 300 & "
         "set -m; sleep 301 & set +m; "
         "( setsid sh -c 'sleep 302 & exec sleep 303' & ) ; "
         "sleep 0.2; touch " +
         ready + "; wait";
}

class ContainerContainmentTest : public ::testing::Test {
 protected:
  ContainerContainmentTest() : marker_(uniqueMarker("CONTAINER")) {}

  nm::ContainerManagerOptions options(nm::MemoryEnforcement enforcement) {
    nm::ContainerManagerOptions result =
        nm::testing::managerOptions(dir_.path(), enforcement, /*stopGracePeriod=*/1000);
    result.supervisorPath = std::string(TIDE_BIN_DIR) + "/tide-container";
    return result;
  }

  rest::ContainerLaunchRequest request(const std::string& id, const std::string& command,
                                       int64_t memoryMb = 256) {
    rest::ContainerLaunchRequest r =
        nm::testing::launchRequest(id, command, memoryMb, "application_faults_0001");
    const size_t eq = marker_.find('=');
    r.environment[marker_.substr(0, eq)] = marker_.substr(eq + 1);
    return r;
  }

  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
  std::vector<WalkedProcess> left() const { return processesWithEnv(marker_); }

  // Starts the daemonising command and waits until its 5 processes (shell, 3 sleeps of the
  // shell and the daemon's) are all there.
  rest::ContainerReport launchDaemonising(nm::ContainerManager& manager, const std::string& id) {
    const rest::ContainerReport started =
        manager.launch(request(id, daemonisingCommand(path(id + ".ready"))));
    EXPECT_TRUE(eventually([&] { return std::filesystem::exists(path(id + ".ready")); }));
    // The supervisor, the shell, sleep 300, 301, the daemon's sh -> sleep 302 and 303.
    EXPECT_GE(left().size(), 6u) << describe(left());
    return started;
  }

  void TearDown() override { tally_.flush(); }

  testing_support::TempDir dir_;
  std::string marker_;
  FaultTally tally_;
};

TEST_F(ContainerContainmentTest, AReleasedContainerLeavesNothing) {
  nm::ContainerManager manager(options(nm::MemoryEnforcement::kOff));
  manager.start();
  launchDaemonising(manager, "released");
  const auto stopped = manager.stop("released", nm::StopReason::kResourceManager, true);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->state, "COMPLETE");
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

TEST_F(ContainerContainmentTest, ItsMainProcessKilledBySigkillTakesEverythingWithIt) {
  // As an executor killed with kill -9: its tasks and their daemons go with it.
  nm::ContainerManager manager(options(nm::MemoryEnforcement::kOff));
  manager.start();
  const rest::ContainerReport started = launchDaemonising(manager, "main9");
  // The main process is the supervisor's child running the command, in the supervisor's
  // session (the daemon, re-parented to the supervisor too, has a session of its own).
  pid_t main = 0;
  for (const ProcessInfo& info : descendantsOf(started.pid, readProcessTable())) {
    if (info.ppid == started.pid && info.session == started.pid) main = info.pid;
  }
  ASSERT_GT(main, 0);
  ASSERT_EQ(::kill(main, SIGKILL), 0);
  ASSERT_TRUE(manager.waitForCompletion("main9", 10000));
  EXPECT_THAT(manager.report("main9")->diagnostics,
              ::testing::StartsWith("killed by signal 9 (SIGKILL)"));
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

TEST_F(ContainerContainmentTest, AProcessThatEndsNormallyLeavesNothingRunning) {
  nm::ContainerManager manager(options(nm::MemoryEnforcement::kOff));
  manager.start();
  const rest::ContainerReport started = manager.launch(
      request("quick", "( setsid sh -c 'exec sleep 300' & ) ; sleep 300 & sleep 0.2; exit 4"));
  ASSERT_TRUE(manager.waitForCompletion("quick", 10000));
  EXPECT_EQ(manager.report("quick")->exitStatus, 4);
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

TEST_F(ContainerContainmentTest, AContainerOverItsMemoryIsKilledWholeWithTheReason) {
  // The memory is held by a process in a session of its own (setsid), below a shell: neither
  // the container's main process nor its process group holds it.
  nm::ContainerManager manager(options(nm::MemoryEnforcement::kWatchdog));
  manager.start();
  ASSERT_EQ(manager.memoryEnforcement(), nm::MemoryEnforcement::kWatchdog);
  manager.launch(
      request("hungry", "setsid -w sh -c 'head -c 400M /dev/zero | tail' & sleep 300 & wait", 64));
  ASSERT_TRUE(manager.waitForCompletion("hungry", 60000));
  const rest::ContainerReport done = *manager.report("hungry");
  EXPECT_EQ(done.exitStatus, rest::exit_status::kKilledExceededPmem);
  EXPECT_NE(done.diagnostics.find("Container hungry is running beyond physical memory limits. "
                                  "Current usage: "),
            std::string::npos)
      << done.diagnostics;
  EXPECT_NE(done.diagnostics.find("of 64 MB physical memory used"), std::string::npos)
      << done.diagnostics;
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

// ---- the whole stack: tide run ----

class TideRunContainmentTest : public ::testing::Test {
 protected:
  TideRunContainmentTest() : runMarker_(uniqueMarker("RUN")), taskMarker_(uniqueMarker("TASK")) {}

  ~TideRunContainmentTest() override {
    if (run_ && run_->running()) run_->signal(SIGKILL);
    // Whatever a failed test left: never leave processes behind.
    for (const WalkedProcess& p : leftOfRun()) ::kill(p.pid, SIGKILL);
  }

  std::string workDir() const { return (dir_.path() / "run").string(); }

  // A job of `tasks` command tasks, each leaving a child and a daemon and then sleeping.
  void startRun(int tasks, const std::string& command,
                const std::vector<std::string>& extraArgs = {}) {
    const size_t eq = taskMarker_.find('=');
    std::ostringstream job;
    job << R"({"name": "contained", "output": ")" << outputDir()
        << R"(", "stages": [{"id": "s", "tasks": )" << tasks << R"(, "env": {")"
        << taskMarker_.substr(0, eq) << R"(": ")" << taskMarker_.substr(eq + 1)
        << R"("}, "command": ["sh", "-c", ")" << command << R"("]}]})";
    const std::string jobFile = dir_.writeFile("job.json", job.str());
    ChildSpec spec;
    spec.argv = {std::string(TIDE_BIN_DIR) + "/tide",
                 "run",
                 jobFile,
                 "--work-dir",
                 workDir(),
                 "--conf",
                 "nm.cores=4",
                 "--conf",
                 "nm.memory=4g",
                 "--conf",
                 "executor.memory=256m",
                 "--conf",
                 "am.memory=256m"};
    spec.argv.insert(spec.argv.end(), extraArgs.begin(), extraArgs.end());
    const size_t runEq = runMarker_.find('=');
    spec.environment = {{runMarker_.substr(0, runEq), runMarker_.substr(runEq + 1)}};
    spec.logPath = (dir_.path() / "tide-run.log").string();
    run_ = std::make_unique<ChildProcess>(spec);
  }

  // Everything of this run: tide run's daemons carry its environment, containers run in its
  // work dir, and tasks (and all they start) carry the job's marker.
  std::vector<WalkedProcess> leftOfRun() const {
    return findProcesses([&](const WalkedProcess& p) {
      return hasEnvEntry(p, runMarker_) || hasEnvEntry(p, taskMarker_) ||
             p.cwd.rfind(workDir(), 0) == 0;
    });
  }
  std::vector<WalkedProcess> tasksRunning() const { return processesWithEnv(taskMarker_); }

  std::string runLog() const { return readFile((dir_.path() / "tide-run.log").string()); }

  // The executor a task process runs below: the tide-executor binary (found by its executable,
  // since its container's supervisor and its tasks carry the same environment) that the task
  // descends from. Its TIDE_CONTAINER_ID entry ties every process of its container (the tasks
  // inherit it).
  pid_t executorOf(pid_t task, std::string* containerEntry) const {
    const std::string binary = std::string(TIDE_BIN_DIR) + "/tide-executor";
    for (const WalkedProcess& p : findProcesses([&](const WalkedProcess& p) {
           char exe[4096];
           const ssize_t n =
               ::readlink(("/proc/" + std::to_string(p.pid) + "/exe").c_str(), exe, sizeof(exe));
           return n > 0 && std::string(exe, static_cast<size_t>(n)) == binary &&
                  p.cwd.rfind(workDir(), 0) == 0;
         })) {
      for (const ProcessInfo& d : descendantsOf(p.pid, readProcessTable())) {
        if (d.pid != task) continue;
        std::istringstream entries(p.environ);
        std::string e;
        while (std::getline(entries, e, '\0')) {
          if (e.rfind("TIDE_CONTAINER_ID=", 0) == 0) *containerEntry = e;
        }
        return p.pid;
      }
    }
    return 0;
  }

  // Every process of the container, and each of `seen` still running (same pid and start).
  std::vector<WalkedProcess> leftOfContainer(const std::string& containerEntry,
                                             const std::vector<WalkedProcess>& seen) const {
    return findProcesses([&](const WalkedProcess& p) {
      if (hasEnvEntry(p, containerEntry)) return true;
      for (const WalkedProcess& t : seen) {
        if (t.pid == p.pid &&
            t.stat.substr(0, t.stat.find(')')) == p.stat.substr(0, p.stat.find(')'))) {
          return true;
        }
      }
      return false;
    });
  }

  // A run of kQuickOrLingeringTask, once tasks 0 and 1 committed and tasks 2 and 3 run, each
  // with its child and its daemon (within 60 s).
  bool twoCommittedAndTwoLingering() const {
    return eventually(
        [&] {
          return std::filesystem::exists(outputDir() + "/part-0") &&
                 std::filesystem::exists(outputDir() + "/part-1") && tasksRunning().size() >= 6;
        },
        60s);
  }

  // The executor of the first task processes, once three run (a task, its child, its daemon),
  // with those processes and its container's TIDE_CONTAINER_ID entry; pid 0 when none is found.
  struct BusyExecutor {
    std::vector<WalkedProcess> tasks;
    pid_t pid = 0;
    std::string containerEntry;
  };
  BusyExecutor busyExecutor() const {
    BusyExecutor busy;
    if (!eventually([&] { return tasksRunning().size() >= 3; }, 60s)) {
      ADD_FAILURE() << describe(tasksRunning()) << runLog();
      return busy;
    }
    busy.tasks = tasksRunning();
    busy.pid = executorOf(busy.tasks.front().pid, &busy.containerEntry);
    return busy;
  }

  // After a fault on an executor: the run succeeds with task 0's output committed once, and
  // nothing of the run is left, `leftovers` (what the fault left of the executor) included.
  void expectRightJobAndNothingLeft(const std::vector<WalkedProcess>& leftovers) {
    ASSERT_TRUE(run_->waitFor(120s).has_value()) << runLog();
    EXPECT_EQ(*run_->exitStatus(), 0) << runLog();
    tally_.jobChecked(!HasFailure());
    expectCommittedOnce({0});
    auto rest = waitUntilNoneLeft([&] { return leftOfRun(); }, 30s);
    rest.insert(rest.end(), leftovers.begin(), leftovers.end());
    recordFault(tally_, rest);
    EXPECT_TRUE(rest.empty()) << describe(rest);
  }

  void TearDown() override { tally_.flush(); }

  // The job's output: exactly the files of `tasks`, each committed once (outputs.h).
  void expectCommittedOnce(const std::set<int>& tasks) {
    tally_.duplicates(outputProblems(outputDir(), tasks));
  }
  std::string outputDir() const { return (dir_.path() / "out").string(); }

  testing_support::TempDir dir_;
  std::string runMarker_;
  std::string taskMarker_;
  std::unique_ptr<ChildProcess> run_;
  FaultTally tally_;
};

constexpr char kLingeringTask[] =
    "sleep 300 & ( setsid sh -c 'exec sleep 301' & ) ; exec sleep 302";

// Tasks 0 and 1 write their output and end; the others linger (a child, a daemon, a sleep).
constexpr char kQuickOrLingeringTask[] =
    "if [ {task} -lt 2 ]; then echo task {task} attempt {attempt} > $TIDE_OUTPUT_DIR/part-0; "
    "else sleep 300 & ( setsid sh -c 'exec sleep 301' & ) ; exec sleep 302; fi";

// The first attempt of each task writes its output and lingers (a child, a daemon, a sleep);
// a later attempt writes its output and ends. `first` is a directory prefix in the test's dir.
std::string firstAttemptLingers(const std::string& first) {
  return "echo task {task} attempt {attempt} > $TIDE_OUTPUT_DIR/part-0; if mkdir " + first +
         "-{task} 2>/dev/null; then sleep 300 & ( setsid sh -c 'exec sleep 301' & ) ; sleep 302; "
         "fi";
}

TEST_F(TideRunContainmentTest, TideRunKilledBySigkillLeavesNothing) {
  startRun(4, kQuickOrLingeringTask);
  ASSERT_TRUE(twoCommittedAndTwoLingering()) << describe(tasksRunning()) << runLog();
  ASSERT_TRUE(run_->signal(SIGKILL));
  ASSERT_TRUE(run_->waitFor(10s).has_value());
  // Stopped, as it must be: only what was committed before is in the output.
  tally_.jobChecked(!HasFailure());
  expectCommittedOnce({0, 1});
  expectNoneLeftAfterFault(
      tally_, [&] { return leftOfRun(); }, 30s);
}

TEST_F(TideRunContainmentTest, AnExecutorKilledBySigkillTakesItsTasksWithIt) {
  startRun(1, firstAttemptLingers((dir_.path() / "first").string()));
  const BusyExecutor busy = busyExecutor();
  ASSERT_GT(busy.pid, 0) << describe(leftOfRun());
  ASSERT_FALSE(busy.containerEntry.empty());
  ASSERT_EQ(::kill(busy.pid, SIGKILL), 0);
  // Every process of that container (the tasks inherit its TIDE_CONTAINER_ID) is gone, and
  // each task process seen before the kill too.
  const auto leftovers =
      waitUntilNoneLeft([&] { return leftOfContainer(busy.containerEntry, busy.tasks); });
  EXPECT_TRUE(leftovers.empty()) << describe(leftovers);
  // The task ran again elsewhere and the job succeeded, its output committed once.
  expectRightJobAndNothingLeft(leftovers);
}

TEST_F(TideRunContainmentTest, AnExecutorStoppedPastTheNetworkTimeoutGoesWithItsTasks) {
  // A SIGSTOPped executor stops heartbeating: after network.timeout the AM counts it lost and
  // releases its container, and the NM kills the container whole (a stopped process dies by
  // SIGKILL too), so its tasks do not run on beside their re-runs.
  startRun(1, firstAttemptLingers((dir_.path() / "first").string()),
           {"--conf", "network.timeout=3s"});
  const BusyExecutor busy = busyExecutor();
  ASSERT_GT(busy.pid, 0) << describe(leftOfRun());
  ASSERT_EQ(::kill(busy.pid, SIGSTOP), 0);
  const auto leftovers =
      waitUntilNoneLeft([&] { return leftOfContainer(busy.containerEntry, busy.tasks); }, 40s);
  EXPECT_TRUE(leftovers.empty()) << describe(leftovers) << runLog();
  for (const WalkedProcess& p : leftovers) ::kill(p.pid, SIGCONT);
  expectRightJobAndNothingLeft(leftovers);
}

TEST_F(TideRunContainmentTest, AKilledApplicationLeavesNothing) {
  startRun(4, kQuickOrLingeringTask);
  ASSERT_TRUE(twoCommittedAndTwoLingering()) << describe(tasksRunning()) << runLog();
  const std::string rmPort = readFile(workDir() + "/rm.port");
  const std::string log = runLog();
  const size_t at = log.find("submitted application_");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string appId = log.substr(at + 10, log.find(' ', at + 10) - at - 10);
  // The cluster secret tide run's RM keeps in its work dir is its admin token.
  const std::string secret = rest::readSecretFile(workDir() + "/rm.secret");
  deploy::ClusterClient client("http://127.0.0.1:" + std::to_string(std::stoi(rmPort)), secret);
  client.kill(appId);
  // tide run reports the kill and stops its cluster: nothing of the run is left.
  ASSERT_TRUE(run_->waitFor(60s).has_value()) << runLog();
  EXPECT_NE(*run_->exitStatus(), 0);
  EXPECT_NE(runLog().find("KILLED"), std::string::npos) << runLog();
  tally_.jobChecked(!HasFailure());
  // Stopped: the two tasks that had committed are in the output, nothing else.
  expectCommittedOnce({0, 1});
  expectNoneLeftAfterFault(
      tally_, [&] { return leftOfRun(); }, 30s);
}

TEST_F(TideRunContainmentTest, ATaskOverItsMemoryFailsTheJobWithTheReason) {
  // One executor of 256 MB whose task holds 600 MB: the container is killed for its memory
  // each time, until the AM gives up on executor failures with the reason.
  startRun(
      1, "head -c 600M /dev/zero | tail",
      {"--conf", "dynamicAllocation.maxExecutors=1", "--conf", "nm.memoryEnforcement=watchdog"});
  ASSERT_TRUE(run_->waitFor(120s).has_value()) << runLog();
  EXPECT_NE(*run_->exitStatus(), 0);
  // The application's failure, as tide run reports it from the RM's final status.
  const std::string log = runLog();
  EXPECT_NE(log.find("killed for exceeding its memory limit: Container container_"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("is running beyond physical memory limits. Current usage: "),
            std::string::npos)
      << log;
  // The AM's own log of its decisions (the AM runs in the first container, ..._000001).
  bool amSawIt = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(workDir())) {
    const std::string file = entry.path().string();
    if (entry.is_regular_file() && file.find("_000001/") != std::string::npos) {
      const std::string text = readFile(file);
      amSawIt =
          amSawIt || (text.find("[am] executor e1 (container") != std::string::npos &&
                      text.find("is running beyond physical memory limits") != std::string::npos);
    }
  }
  EXPECT_TRUE(amSawIt) << "no AM log under " << workDir() << " names the memory kill";
  // Failing with the reason is this job's right outcome; its task never succeeded, so nothing
  // of it may be in the output.
  tally_.jobChecked(!HasFailure());
  expectCommittedOnce({});
  expectNoneLeftAfterFault(
      tally_, [&] { return leftOfRun(); }, 30s);
}

}  // namespace
}  // namespace tide::faults

// ---- a task below its supervisor, in the executor's TaskRunner ----

namespace tide::faults {
namespace {

class TaskContainmentTest : public ::testing::Test {
 protected:
  TaskContainmentTest() : marker_(uniqueMarker("TASK")) {}

  executor::TaskRunnerOptions options() {
    executor::TaskRunnerOptions result;
    result.workDir = dir_.path();
    result.slots = 2;
    result.environment = {marker_};
    result.killGracePeriod = 300;
    result.supervisorPath = std::string(TIDE_BIN_DIR) + "/tide-container";
    return result;
  }

  rest::TaskLaunch command(int64_t id, const std::string& script) {
    rest::TaskLaunch launch;
    launch.taskId = id;
    launch.jobId = "job-1";
    launch.stageId = "s";
    launch.index = id;
    launch.kind = "command";
    launch.argv = {"/bin/sh", "-c", script};
    return launch;
  }

  std::vector<rest::TaskStatusUpdate> waitForUpdate(executor::TaskRunner& runner) {
    executor::RunnerReport report;
    eventually([&] {
      runner.collect(report);
      return !report.updates.empty();
    });
    return report.updates;
  }

  std::vector<WalkedProcess> left() const { return processesWithEnv(marker_); }

  // Launches task 1, a shell that writes its pid and then runs `script`, and returns that
  // process once it runs (its parent is its slot supervisor); nullopt, with the failure
  // recorded, when it does not show.
  std::optional<ProcessInfo> launchWritingItsPid(executor::TaskRunner& runner,
                                                 const std::string& script) {
    const std::string pidFile = (dir_.path() / "task.pid").string();
    runner.launch(command(
        1, "echo $$ > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; " + script));
    if (!eventually([&] { return std::filesystem::exists(pidFile); })) {
      ADD_FAILURE() << "the task did not write its pid";
      return std::nullopt;
    }
    std::optional<ProcessInfo> task = tide::readProcess(std::stoi(readFile(pidFile)));
    EXPECT_TRUE(task.has_value()) << "the task is gone";
    return task;
  }

  // A task that leaves a daemon in a session of its own and a background child, then exits
  // 0: it finishes, and neither outlives it.
  void expectWhatATaskDaemonisedGoes(const executor::TaskRunnerOptions& runnerOptions) {
    executor::TaskRunner runner(runnerOptions);
    runner.launch(
        command(1, "( setsid sh -c 'exec sleep 300' & ) ; sleep 300 & sleep 0.3; exit 0"));
    const auto updates = waitForUpdate(runner);
    ASSERT_EQ(updates.size(), 1u);
    EXPECT_EQ(updates[0].state, rest::TaskState::kFinished) << updates[0].reason;
    expectNoneLeftAfterFault(tally_, [&] { return left(); });
  }

  void TearDown() override { tally_.flush(); }

  testing_support::TempDir dir_;
  std::string marker_;
  FaultTally tally_;
};

TEST_F(TaskContainmentTest, WhatATaskDaemonisedGoesWhenItEnds) {
  expectWhatATaskDaemonisedGoes(options());
}

// The same with a supervisor exec'd per task (forkSupervisors=false), the way without the
// executor's launcher.
TEST_F(TaskContainmentTest, WithASupervisorExecdPerTaskWhatATaskDaemonisedGoesToo) {
  executor::TaskRunnerOptions execd = options();
  execd.forkSupervisors = false;
  expectWhatATaskDaemonisedGoes(execd);
}

// A slot supervisor SIGKILLed under its task leaves the task orphaned; the executor sees the
// slot's socket hang up and kills the task and its group at once, rather than letting it run
// to its end (here 300 s) unsupervised, and the task's end says why.
TEST_F(TaskContainmentTest, ATaskWhoseSlotSupervisorIsKilledGoesAtOnceWithItsGroup) {
  executor::TaskRunner runner(options());
  const std::optional<ProcessInfo> task = launchWritingItsPid(runner, "sleep 300 & wait");
  ASSERT_TRUE(task.has_value());
  ASSERT_EQ(::kill(task->ppid, SIGKILL), 0) << "the task's slot supervisor";
  const auto updates = waitForUpdate(runner);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kFailed);
  EXPECT_THAT(updates[0].reason, ::testing::HasSubstr("slot supervisor died"));
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

// A slot supervisor that stops answering holds the runner up no longer than the answer
// timeout: the reap of its task gets no answer, and the task fails saying so.
TEST_F(TaskContainmentTest, ATaskWhoseSlotSupervisorStopsAnsweringFailsSayingSo) {
  executor::TaskRunnerOptions quick = options();
  quick.supervisorAnswerTimeout = 500;
  executor::TaskRunner runner(quick);
  const std::optional<ProcessInfo> task = launchWritingItsPid(runner, "exec sleep 300");
  ASSERT_TRUE(task.has_value());
  ASSERT_EQ(::kill(task->ppid, SIGSTOP), 0) << "the task's slot supervisor";
  ASSERT_EQ(::kill(task->pid, SIGKILL), 0);
  const auto updates = waitForUpdate(runner);
  ::kill(task->ppid, SIGCONT);  // dropped: it finds its socket closed and ends
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kFailed);
  EXPECT_THAT(updates[0].reason,
              ::testing::HasSubstr("its slot supervisor did not answer within 500ms"));
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

TEST_F(TaskContainmentTest, AKilledTaskTakesItsDaemonsEvenWhenTheyIgnoreSigterm) {
  executor::TaskRunner runner(options());
  const std::string ready = (dir_.path() / "ready").string();
  runner.launch(
      command(1, "trap '' TERM; ( setsid sh -c \"trap '' TERM; sleep 300; sleep 1\" & ) ; touch " +
                     ready + "; sleep 300; sleep 1"));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }));
  ASSERT_TRUE(eventually([&] { return left().size() >= 4; })) << describe(left());
  runner.kill(1);
  const auto updates = waitForUpdate(runner);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].state, rest::TaskState::kKilled);
  EXPECT_EQ(updates[0].exitCode, 128 + SIGKILL);
  expectNoneLeftAfterFault(tally_, [&] { return left(); });
}

}  // namespace
}  // namespace tide::faults
