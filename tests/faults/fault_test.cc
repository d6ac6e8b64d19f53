// The fault suite (issue 11): real tide-rm, tide-nm, tide-am and tide-executor processes on
// 127.0.0.1 with ephemeral ports; faults are injected while jobs of command tasks write
// outputs (kill -9 of an executor, of a node manager and its restart, of a task's process;
// SIGSTOP of an executor past network.timeout), and afterwards the job's result is checked,
// every task's output must be committed exactly once, and no process of the run may be left
// (found by walking /proc for processes whose working directory is inside the test's
// directory, not by name). Each test appends its record to the suite's tally (tally.h).

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/process_tree.h"
#include "tests/faults/outputs.h"
#include "tests/faults/tally.h"
#include "tests/integration/am_cluster_test.h"
#include "tests/support/processes.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;
using testing_support::processesUnder;
namespace fs = std::filesystem;

// How many processes other than this one have `file` open.
int processesWithOpen(const std::string& file) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoi(name) == ::getpid()) continue;
    std::error_code fdError;
    for (const auto& fd : fs::directory_iterator(entry.path() / "fd", fdError)) {
      std::error_code linkError;
      if (fs::read_symlink(fd.path(), linkError).string() == file) {
        ++count;
        break;
      }
    }
  }
  return count;
}

class FaultTest : public testing_support::AmClusterTest {
 protected:
  // Every output file of a job of `tasks` tasks, each written as "task <i> attempt <a>": the
  // output directory must hold part-0 .. part-<tasks-1> and nothing else (no temporary or
  // half-written file), each naming its own task (outputs.h). What is wrong goes to the tally.
  std::map<int, int> expectCommittedOnce(const fs::path& output, int tasks) {
    std::map<int, int> attempts;
    tally.duplicates(faults::outputProblems(output, faults::firstTasks(tasks), &attempts));
    return attempts;
  }

  // Once the application has ended, nothing of it runs, with the node managers still up: every
  // container it had (the AM's, the executors', their tasks') has been stopped.
  void expectApplicationGone() {
    std::vector<pid_t> left;
    const bool gone = eventually(
        [&] {
          left.clear();
          for (size_t i = 0; i < cluster->nodeCount(); ++i) {
            const fs::path work =
                dir.path() / "cluster" / ("nm" + std::to_string(i)) / "work" / appId;
            for (pid_t pid : processesUnder(work)) left.push_back(pid);
          }
          return left.empty();
        },
        30s);
    tally.left(static_cast<int>(left.size()));
    EXPECT_TRUE(gone) << left.size() << " processes of " << appId << " still run after it ended";
  }

  // Runs after the cluster is stopped: nothing of it may be left (bounded wait for processes
  // that are already on their way out).
  void expectNothingLeft() {
    if (cluster) cluster->stop();
    appId.clear();  // nothing to kill in TearDown: its cluster is gone
    std::vector<pid_t> left;
    eventually(
        [&] {
          left = processesUnder(dir.path());
          return left.empty();
        },
        15s);
    tally.left(static_cast<int>(left.size()));
    for (pid_t pid : left) {
      ADD_FAILURE() << "process " << pid << " ("
                    << testing_support::readFile("/proc/" + std::to_string(pid) + "/cmdline")
                    << ") is left";
      ::kill(pid, SIGKILL);
    }
  }

  // A stage whose tasks write "task <i> attempt <a>" into part-0 and then leave a marker in
  // ran/ (test instrumentation: which attempts ran to the end, committed or not).
  std::string writingJob(const std::string& name, int tasks, const std::string& before) {
    fs::create_directories(dir.path() / "ran");
    const std::string ran = (dir.path() / "ran").string();
    return R"({"name": ")" + name + R"(", "output": ")" + (dir.path() / "out").string() +
           R"(", "stages": [{"id": "write", "tasks": )" + std::to_string(tasks) +
           R"(, "command": ["sh", "-c", ")" + before +
           R"( echo task {task} attempt {attempt} > \"$TIDE_OUTPUT_DIR/part-0\"; touch )" + ran +
           R"(/{task}-{attempt}"]}]})";
  }

  // Submits writingJob(name, tasks, before) to an AM of at most `maxExecutors` executors that
  // lets idle ones go after 30 s; `more` settings come after those.
  void submitWritingJob(const std::string& name, int tasks, const std::string& before,
                        int maxExecutors, bool session, const Conf& more = {}) {
    Conf conf{{"dynamicAllocation.maxExecutors", std::to_string(maxExecutors)},
              {"dynamicAllocation.executorIdleTimeout", "30s"}};
    conf.insert(conf.end(), more.begin(), more.end());
    submit(writingJob(name, tasks, before), conf, session);
  }

  // The detail of the ended job `jobId`: whether it succeeded goes to the tally, and it is
  // expected to have.
  rapidjson::Document checkedJob(const std::string& jobId) {
    rapidjson::Document detail = job(jobId);
    tally.jobChecked(std::string(detail["state"].GetString()) == "SUCCEEDED");
    EXPECT_STREQ(detail["state"].GetString(), "SUCCEEDED") << detail["message"].GetString();
    return detail;
  }

  // A failed attempt a job's detail lists.
  struct Failure {
    int index = 0;
    int attempt = 0;
    std::string reason;
  };
  static std::vector<Failure> failuresOf(const rapidjson::Value& detail) {
    std::vector<Failure> failures;
    for (const auto& f : detail["failures"].GetArray()) {
      failures.push_back({f["index"].GetInt(), f["attempt"].GetInt(), f["reason"].GetString()});
    }
    return failures;
  }
  // Their reasons, each followed by "; " (for failure messages).
  static std::string reasonsOf(const std::vector<Failure>& failures) {
    std::string reasons;
    for (const Failure& f : failures) reasons += f.reason + "; ";
    return reasons;
  }

  // The AM's whole log (the stderr of the application's first container).
  std::string fullAmLog() {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path(), ec)) {
      const std::string path = entry.path().string();
      if (entry.path().filename() == "stderr" && path.find("_000001") != std::string::npos) {
        return testing_support::readFile(path);
      }
    }
    return "";
  }

  // What every executor logged, each after a "== container" line.
  std::string executorLogs() {
    std::string logs;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path(), ec)) {
      const std::string container = entry.path().parent_path().filename().string();
      if (entry.path().filename() == "stderr" && container.rfind("container_", 0) == 0 &&
          container.find("_000001") == std::string::npos) {
        logs += "== " + container + "\n" + testing_support::readFile(entry.path().string());
      }
    }
    return logs;
  }

  // On failure: what every executor logged, for the reader of the test's output.
  void TearDown() override {
    if (HasFailure()) std::cerr << executorLogs() << "\n";
    AmClusterTest::TearDown();
    tally.flush();
  }

  faults::FaultTally tally;

  // As startCluster(2, 5), with more settings for the node managers.
  void startClusterWith(const Conf& nmConf) {
    deploy::EmbeddedClusterOptions options;
    options.binDir = TIDE_BIN_DIR;
    options.workDir = (dir.path() / "cluster").string();
    options.nodes = 2;
    options.nmConf = {{"nm.cores", "5"}, {"nm.memory", "4g"}, {"nm.heartbeatInterval", "200ms"}};
    options.nmConf.insert(options.nmConf.end(), nmConf.begin(), nmConf.end());
    options.rmConf = {{"rm.nodeExpiry", "5s"}};
    cluster = std::make_unique<deploy::EmbeddedCluster>(options);
    client = std::make_unique<deploy::ClusterClient>(cluster->rmAddress(), cluster->adminToken());
  }

  // The node (index of the cluster's node manager) whose work dir a process runs in; -1 if none.
  int nodeOf(pid_t pid) {
    std::error_code ec;
    const std::string cwd = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec).string();
    if (ec) return -1;
    for (size_t i = 0; i < cluster->nodeCount(); ++i) {
      const std::string work =
          fs::weakly_canonical(dir.path() / "cluster" / ("nm" + std::to_string(i))).string() + "/";
      if (cwd.rfind(work, 0) == 0) return static_cast<int>(i);
    }
    return -1;
  }

  // The node running the AM (its container is the application's first, ..._000001).
  int amNode() {
    std::error_code ec;
    for (size_t i = 0; i < cluster->nodeCount(); ++i) {
      const fs::path work = dir.path() / "cluster" / ("nm" + std::to_string(i));
      for (const auto& entry : fs::recursive_directory_iterator(work, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("container_", 0) == 0 && name.find("_000001") != std::string::npos) {
          return static_cast<int>(i);
        }
      }
    }
    return -1;
  }

  // An executor running tasks on `node`, with its pid.
  bool busyExecutorOn(int node, int64_t* pid) {
    const rapidjson::Document listed = executors();  // outlives the loop
    for (const auto& e : listed["executors"].GetArray()) {
      const int64_t candidate = e["pid"].GetInt64();
      if (e["runningTasks"].GetInt() > 0 && candidate > 0 &&
          nodeOf(static_cast<pid_t>(candidate)) == node) {
        *pid = candidate;
        return true;
      }
    }
    return false;
  }

  int markers(const std::string& prefix = "") {
    int count = 0;
    for (const auto& entry : fs::directory_iterator(dir.path() / "ran")) {
      count += entry.path().filename().string().rfind(prefix, 0) == 0 ? 1 : 0;
    }
    return count;
  }
};

// 11.3 with a lost executor: kill -9 of an executor while its tasks run. Its tasks run again
// elsewhere; whatever its orphaned task processes still do stays in their private attempt
// directories (their executor cannot ask the AM to commit).
TEST_F(FaultTest, AnExecutorKilledMidTaskLeavesEveryOutputCommittedOnce) {
  startCluster(2, 5);
  const int tasks = 16;
  submitWritingJob("killed", tasks, "sleep 1;", 4, /*session=*/false);
  const std::optional<Executor> victim = waitForBusyExecutor(60s);
  ASSERT_TRUE(victim.has_value());
  ASSERT_EQ(::kill(victim->pid, SIGKILL), 0);
  tally.injected();

  const rest::ApplicationReport report = waitForEnd(120s);
  tally.jobChecked(report.finalStatus == "SUCCEEDED");
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  expectCommittedOnce(dir.path() / "out", tasks);
  EXPECT_GE(markers(), tasks);
  expectApplicationGone();
  expectNothingLeft();
}

// 11.3 with a speculative duplicate: two attempts of task 0 exit 0 together (each waits for
// the other to start), both ask to commit, the AM authorises one. The other's output is
// discarded: the job's output holds one file for task 0, from one attempt.
TEST_F(FaultTest, ASpeculativeDuplicateFinishingTogetherIsCommittedOnce) {
  startCluster(2, 5);
  const int tasks = 4;
  fs::create_directories(dir.path() / "barrier");
  const std::string barrier = (dir.path() / "barrier").string();
  // Task 0: mark this attempt, then block reading a FIFO that the test holds open. Once two
  // attempts hold it open, the test closes its end: both see the end of file at the same
  // instant and exit 0 together, so both ask to commit before the winner's success can get the
  // other killed.
  const std::string fifo = (dir.path() / "go").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int holder = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // a writer, so readers' opens go on
  ASSERT_GE(holder, 0);
  const std::string before = "if [ {task} = 0 ]; then touch " + barrier +
                             "/{attempt}; timeout 120 cat " + fifo +
                             " > /dev/null; else sleep 0.2; fi;";
  submit(writingJob("speculative", tasks, before),
         {{"dynamicAllocation.maxExecutors", "3"},
          {"dynamicAllocation.minExecutors", "2"},
          {"speculation", "true"},
          {"speculation.quantile", "0.5"},
          {"speculation.multiplier", "1.5"},
          {"log.level", "debug"},
          {"dynamicAllocation.executorIdleTimeout", "60s"}},
         // A session: the AM and the executors outlive the job, so the loser's question is
         // always answered (the AM is there) and its answer logged (its executor is there).
         /*session=*/true);
  const auto started = [&] {
    int count = 0;
    for (const auto& entry : fs::directory_iterator(barrier)) count += entry.is_regular_file();
    return count;
  };
  ASSERT_TRUE(eventually([&] { return started() >= 2; }, 60s)) << "no second attempt of task 0";
  ASSERT_TRUE(eventually([&] { return processesWithOpen(fifo) >= 2; }, 60s))
      << "the two attempts of task 0 did not both open the FIFO";
  ::close(holder);  // the last writer: both readers get the end of file now
  tally.injected();
  ASSERT_TRUE(jobEnds("job-1", 120s));
  const rapidjson::Document detail = job("job-1");
  tally.jobChecked(std::string(detail["state"].GetString()) == "SUCCEEDED");
  ASSERT_STREQ(detail["state"].GetString(), "SUCCEEDED") << detail["message"].GetString();
  EXPECT_EQ(started(), 2) << "task 0 did not run twice at once: no duplicate to test";
  // Both exited 0 and asked: the AM denied one of them (the other is committing or has
  // committed), logging it before it answers, and the denied executor reports the attempt
  // KILLED. The executor's line comes with its next report: wait for it (bounded).
  EXPECT_TRUE(eventually(
      [&] {
        return fullAmLog().find(" may not commit its output: ") != std::string::npos &&
               executorLogs().find("KILLED: commit denied: ") != std::string::npos;
      },
      30s))
      << fullAmLog() << executorLogs();
  const auto attempts = expectCommittedOnce(dir.path() / "out", tasks);
  EXPECT_TRUE(fs::exists(barrier + "/" + std::to_string(attempts.count(0) ? attempts.at(0) : -1)))
      << "task 0's output names an attempt that never ran";
  expectNothingLeft();
}

// kill -9 of a node manager while its executors run tasks, and its restart on the same port and
// work dir (as an operator or systemd would). Whether the restarted node manager re-attaches to
// the containers that outlived it (NM recovery) or stops them and the AM re-runs their tasks
// elsewhere, the job's result is right, each output is committed once, and nothing is left.
TEST_F(FaultTest, ANodeManagerKilledMidJobAndRestartedLosesNothing) {
  startCluster(2, 5);
  const int tasks = 16;
  submitWritingJob("nm-killed", tasks, "sleep 1;", 4, /*session=*/false);
  // The node that does not run the AM: its executors (and their tasks) are what is at stake.
  const int am = amNode();
  ASSERT_GE(am, 0) << "no AM container under " << dir.path();
  const int victim = 1 - am;
  int64_t executorPid = 0;
  ASSERT_TRUE(eventually([&] { return busyExecutorOn(victim, &executorPid); }, 60s))
      << "no executor ran tasks on node " << victim;
  ChildProcess& nm = cluster->nodeManager(static_cast<size_t>(victim));
  ASSERT_EQ(::kill(nm.pid(), SIGKILL), 0);
  ASSERT_TRUE(nm.waitFor(10s).has_value());
  tally.injected();
  cluster->restartNodeManager(static_cast<size_t>(victim));

  const rest::ApplicationReport report = waitForEnd(180s);
  tally.jobChecked(report.finalStatus == "SUCCEEDED");
  EXPECT_EQ(report.finalStatus, "SUCCEEDED")
      << report.diagnostics << "\n"
      << testing_support::readFile(cluster->nmLogPath(static_cast<size_t>(victim)));
  expectCommittedOnce(dir.path() / "out", tasks);
  expectApplicationGone();
  expectNothingLeft();
}

// kill -9 of a command task's own process (the child of its tide-container, found by walking
// /proc below a busy executor). The attempt fails with the signal as its reason, the task runs
// again and succeeds, the job is right, and the killed attempt's output is never committed.
TEST_F(FaultTest, ATaskProcessKilledBySigkillFailsItsAttemptAndIsRetried) {
  startCluster(2, 5);
  const int tasks = 8;
  submitWritingJob("task-killed", tasks, "sleep 2;", 2, /*session=*/true);
  const std::string supervisor = std::string(TIDE_BIN_DIR) + "/tide-container";
  pid_t victim = 0;
  int index = -1;
  int attempt = -1;
  std::vector<ProcessInfo> below;  // what the task's process had started
  ASSERT_TRUE(eventually(
      [&] {
        std::string id;
        int64_t executor = 0;
        if (!busyExecutor(&id, &executor)) return false;
        const std::vector<ProcessInfo> table = readProcessTable();
        for (const ProcessInfo& p : descendantsOf(static_cast<pid_t>(executor), table)) {
          // A task's supervisor is a tide-container below the executor (forked by its launcher,
          // itself a tide-container); the task's process is its child, with the task's
          // environment (the launcher's children, the supervisors, have the executor's).
          std::error_code ec;
          if (fs::read_symlink("/proc/" + std::to_string(p.pid) + "/exe", ec).string() !=
              supervisor) {
            continue;
          }
          for (const ProcessInfo& task : descendantsOf(p.pid, table)) {
            if (task.ppid != p.pid) continue;
            const std::string environ =
                testing_support::readFile("/proc/" + std::to_string(task.pid) + "/environ");
            const auto value = [&](const std::string& name) {
              const size_t at = environ.find(name + "=");
              if (at == std::string::npos) return -1;
              return std::atoi(environ.c_str() + at + name.size() + 1);
            };
            index = value("TIDE_TASK_INDEX");
            attempt = value("TIDE_ATTEMPT");
            if (index < 0 || attempt < 0) continue;
            victim = task.pid;
            below = descendantsOf(task.pid, table);
            return true;
          }
        }
        return false;
      },
      60s))
      << "no task process found below a busy executor";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  tally.injected();

  ASSERT_TRUE(jobEnds("job-1", 120s));
  // The killed attempt failed, saying how.
  const std::vector<Failure> failures = failuresOf(checkedJob("job-1"));
  bool failedWithSignal = false;
  for (const Failure& f : failures) {
    if (f.index == index && f.attempt == attempt) {
      failedWithSignal = f.reason.find("killed by signal 9") == 0;
    }
  }
  EXPECT_TRUE(failedWithSignal) << "task " << index << " attempt " << attempt
                                << " is not among the failures with its signal: "
                                << reasonsOf(failures);
  const auto attempts = expectCommittedOnce(dir.path() / "out", tasks);
  ASSERT_EQ(attempts.count(index), 1u);
  EXPECT_NE(attempts.at(index), attempt) << "the killed attempt's output was committed";
  EXPECT_FALSE(
      fs::exists(dir.path() / "ran" / (std::to_string(index) + "-" + std::to_string(attempt))))
      << "the killed attempt ran on";
  // What the killed process had started went with its attempt.
  for (const ProcessInfo& p : below) {
    const std::optional<ProcessInfo> now = tide::readProcess(p.pid);
    EXPECT_TRUE(!now || now->startTimeTicks != p.startTimeTicks || now->state == 'Z')
        << "process " << p.pid << " of the killed task is still running";
  }
  expectNothingLeft();
}

// SIGSTOP of a busy executor past network.timeout, SIGCONT after the AM gave up on it: its
// tasks ran again elsewhere, and the stopped executor's attempts, killed with their container,
// never commit.
TEST_F(FaultTest, AnExecutorStoppedPastTheNetworkTimeoutAndContinuedCommitsNothing) {
  startCluster(2, 5);
  const int tasks = 12;
  submitWritingJob("stopped", tasks, "sleep 1;", 4, /*session=*/true, {{"network.timeout", "3s"}});
  const std::optional<Executor> victim = waitForBusyExecutor(60s);
  ASSERT_TRUE(victim.has_value());
  ASSERT_EQ(::kill(victim->pid, SIGSTOP), 0);
  tally.injected();
  // Past network.timeout the AM counts it lost (and releases its container).
  const bool lost = eventually(
      [&] {
        const rapidjson::Document listed = executors();  // outlives the loop
        for (const auto& e : listed["executors"].GetArray()) {
          if (victim->id == e["id"].GetString()) return false;
        }
        return true;
      },
      60s);
  ::kill(victim->pid, SIGCONT);
  EXPECT_TRUE(lost) << victim->id << " was not given up on";

  ASSERT_TRUE(jobEnds("job-1", 120s));
  const rapidjson::Document detail = checkedJob("job-1");
  expectCommittedOnce(dir.path() / "out", tasks);
  expectNothingLeft();
}

// A task over its executor's memory (the first attempt of task 0 holds 700 MB in a 256 MB
// executor): the node manager kills the container whole with YARN's reason, which reaches the
// AM's failures of the task. The loss is the application's (Spark's exitCausedByApp), so it is
// a failure of the task toward task.maxFailures (2 here: one more try); the task runs again on
// a new executor, and the job succeeds with each output committed once.
TEST_F(FaultTest, ATaskOverItsMemoryLosesItsExecutorWithTheReasonAndRunsAgain) {
  startClusterWith({{"nm.memoryEnforcement", "watchdog"}});
  const int tasks = 4;
  const std::string first = (dir.path() / "first").string();
  submitWritingJob("hungry", tasks,
                   "if [ {task} = 0 ] && mkdir " + first +
                       " 2>/dev/null; then head -c 700M /dev/zero | tail; fi;",
                   2, /*session=*/true, {{"task.maxFailures", "2"}});
  tally.injected();
  ASSERT_TRUE(jobEnds("job-1", 120s));
  const std::vector<Failure> failures = failuresOf(checkedJob("job-1"));
  bool memoryReason = false;
  for (const Failure& f : failures) {
    memoryReason =
        memoryReason ||
        (f.index == 0 && f.reason.find("is running beyond physical "
                                       "memory limits. Current usage: ") != std::string::npos);
  }
  EXPECT_TRUE(memoryReason) << "no failure of task 0 names the memory kill: "
                            << reasonsOf(failures);
  expectCommittedOnce(dir.path() / "out", tasks);
  expectNothingLeft();
}

// Spark's exitCausedByApp end to end: every attempt of the task holds 700 MB in a 256 MB
// executor, so each kill of its container for memory is a failure of the task; with
// task.maxFailures=2 the job fails after the second, naming the memory kill (before
// executor.maxNumFailures, 10 here, would end the application). Before, it retried forever.
TEST_F(FaultTest, ATaskThatKeepsBlowingItsContainerFailsItsJobAfterTaskMaxFailures) {
  startClusterWith({{"nm.memoryEnforcement", "watchdog"}});
  submit(writingJob("hog", 1, "head -c 700M /dev/zero | tail;"),
         {{"dynamicAllocation.maxExecutors", "1"},
          {"task.maxFailures", "2"},
          {"executor.maxNumFailures", "10"}},
         /*session=*/true);
  tally.injected();
  ASSERT_TRUE(jobEnds("job-1", 120s));
  const rapidjson::Document detail = job("job-1");
  const std::string state = detail["state"].GetString();
  const std::string message = detail["message"].GetString();
  tally.jobChecked(state == "FAILED");
  EXPECT_EQ(state, "FAILED") << message;
  EXPECT_NE(message.find("task write[0] failed 2 times; most recent failure: executor "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("is running beyond physical memory limits"), std::string::npos) << message;
  expectNothingLeft();
}

// 11.6: 20 applications of 4 tasks submitted at once to one 8-core node all finish: AM
// containers hold at most rm.maxAmShare (0.5) of the cores, so executors always have room.
TEST_F(FaultTest, TwentyApplicationsOnOneEightCoreNodeAllFinish) {
  startCluster(1, 8);
  const std::string jobFile = dir.writeFile(
      "small.json",
      R"({"name": "small", "stages": [{"id": "s", "tasks": 4, "command": ["sh", "-c", "sleep 0.2"]}]})");
  Properties props;
  const Conf conf = {{"executor.memory", "256m"},
                     {"am.memory", "256m"},
                     {"ui.port", "0"},
                     {"am.heartbeatInterval", "300ms"},
                     {"dynamicAllocation.schedulerBacklogTimeout", "200ms"},
                     {"dynamicAllocation.maxExecutors", "2"}};
  for (const auto& [key, value] : conf) props.set(key, value);
  std::vector<std::string> apps;
  for (int i = 0; i < 20; ++i) {
    AmSubmission submission;
    submission.jobFile = jobFile;
    submission.jobName = "small-" + std::to_string(i);
    submission.conf = conf;
    submission.binDir = TIDE_BIN_DIR;
    apps.push_back(submitApplicationMaster(*client, submission, props));
  }
  int mostRunning = 0;
  bool sawShareDiagnostic = false;
  std::map<std::string, rest::ApplicationReport> reports;
  const bool allEnded = eventually(
      [&] {
        int running = 0;
        bool all = true;
        for (const std::string& app : apps) {
          rest::ApplicationReport report = client->application(app);
          if (report.state == "RUNNING") ++running;
          if (report.state == "ACCEPTED" &&
              report.diagnostics.find("rm.maxAmShare=0.5") != std::string::npos) {
            sawShareDiagnostic = true;
          }
          all = all && isFinal(report);
          reports[app] = std::move(report);
        }
        mostRunning = std::max(mostRunning, running);
        return all;
      },
      400s);
  EXPECT_TRUE(allEnded) << "not every application ended";
  int succeeded = 0;
  for (const auto& [app, report] : reports) {
    EXPECT_EQ(report.finalStatus, "SUCCEEDED") << app << ": " << report.diagnostics;
    succeeded += report.finalStatus == "SUCCEEDED" ? 1 : 0;
    tally.jobChecked(report.finalStatus == "SUCCEEDED");
  }
  EXPECT_EQ(succeeded, 20);
  // 8 cores: 4 AMs of one core at most; the others waited, saying why.
  EXPECT_LE(mostRunning, 4);
  EXPECT_TRUE(sawShareDiagnostic);
  expectNothingLeft();
  appId.clear();
}

// 11.7: impossible requests fail at once, exit status 2, with the key, the value asked and
// the largest available; nothing hangs (each run is bounded).
class ImpossibleRequestTest : public ::testing::Test {
 protected:
  testing_support::CommandResult tideRun(const std::vector<std::string>& conf, int cpus = 4) {
    const std::string job = dir.writeFile(
        "job.json", R"({"name": "big", "stages": [{"id": "wide", "tasks": 1, "cpus": )" +
                        std::to_string(cpus) + R"(, "command": ["true"]}]})");
    std::vector<std::string> argv = {std::string(TIDE_BIN_DIR) + "/tide", "run", job, "--work-dir",
                                     (dir.path() / "run").string()};
    for (const char* setting : {"nm.cores=2", "nm.memory=2g", "am.memory=256m",
                                "executor.memory=256m", "executor.cores=4"}) {
      argv.push_back("--conf");
      argv.push_back(setting);
    }
    for (const std::string& setting : conf) {
      argv.push_back("--conf");
      argv.push_back(setting);
    }
    tally.injected();
    return testing_support::runCommand(argv, (dir.path() / "tide-run.log").string(), 60s);
  }
  // Correct = refused at once with the message the test expects.
  void TearDown() override {
    const std::vector<pid_t> left = processesUnder(dir.path());
    tally.left(static_cast<int>(left.size()));
    EXPECT_TRUE(left.empty()) << left.size() << " processes left";
    tally.jobChecked(!HasFailure());
    tally.flush();
  }
  testing_support::TempDir dir;
  faults::FaultTally tally;
};

TEST_F(ImpossibleRequestTest, ATaskWiderThanAnExecutor) {
  const auto result = tideRun({"executor.cores=1"});
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("stages[0].cpus: stage 'wide' asks for 4 cores per task, "
                                       "more than an executor has (executor.cores=1)"));
}

TEST_F(ImpossibleRequestTest, AnExecutorLargerThanEveryNode) {
  auto result = tideRun({"executor.memory=99999t"});
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("executor.memory=99999t"));
  EXPECT_THAT(result.output,
              HasSubstr("asks for 104856551424 MB, above the largest node's 2048 MB"));
  // executor.cores=4 on 2-core nodes: the cores are checked too.
  result = tideRun({});
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("executor.cores=4"));
  EXPECT_THAT(result.output, HasSubstr("asks for 4 vCores, above the largest node's 2 vCores"));
}

TEST_F(ImpossibleRequestTest, AnAmLargerThanEveryNode) {
  const auto result = tideRun({"executor.cores=1", "am.memory=64g"}, /*cpus=*/1);
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("am.memory=64g"));
  EXPECT_THAT(result.output, HasSubstr("the AM container asks for 65536 MB, above the largest "
                                       "node's 2048 MB"));
}

}  // namespace
}  // namespace tide::deploy
