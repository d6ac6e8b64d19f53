// Work-preserving AM restarts (issue 12, items 1, 2 and 5): real tide-rm, tide-nm, tide-am and
// tide-executor processes on 127.0.0.1. The AM is killed with SIGKILL in the middle of a job; the
// next attempt replays the recovery journal, adopts the executors of the dead attempt (same
// executor ids, same containers) and finishes the job without running a committed task again
// (each task appends a line to its own file when it starts: the side effect that counts runs).

#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "../integration/am_cluster_test.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;
namespace fs = std::filesystem;

class AmRestartTest : public testing_support::AmClusterTest {
 protected:
  // Map tasks append a line to runs/<task> when they start, sleep, and write one line; the
  // reduce task reads every map output (the blocks held by the executors) into the job output.
  std::string twoStageJob(int tasks, const std::string& sleep) {
    fs::create_directories(dir.path() / "runs");
    const std::string runs = (dir.path() / "runs").string();
    return R"({"name": "restart", "output": ")" + (dir.path() / "out").string() +
           R"(", "stages": [{"id": "map", "tasks": )" + std::to_string(tasks) +
           R"(, "command": ["sh", "-c", "echo {attempt} >> )" + runs + R"(/{task}; sleep )" +
           sleep + R"(; echo map {task} > \"$TIDE_OUTPUT_DIR/part-0\""]},)" +
           R"( {"id": "reduce", "depends_on": ["map"], "tasks": 1, "command": ["sh", "-c",)" +
           R"( "cat \"$TIDE_INPUT_DIR\"/map/part-* | sort > \"$TIDE_OUTPUT_DIR/part-0\""]}]})";
  }

  // Runs of each map task so far (lines in runs/<task>).
  std::map<int, int> runsByTask() {
    std::map<int, int> runs;
    for (const auto& entry : fs::directory_iterator(dir.path() / "runs")) {
      std::ifstream in(entry.path());
      std::string line;
      int count = 0;
      while (std::getline(in, line)) ++count;
      runs[std::stoi(entry.path().filename().string())] = count;
    }
    return runs;
  }

  int64_t mapTasksSucceeded(const std::string& jobId) {
    try {
      const auto doc = job(jobId);
      return (*stage(doc, "map"))["succeeded"].GetInt64();
    } catch (const std::exception&) {
      return -1;
    }
  }

  // executor id -> container id, as the AM shows them.
  std::map<std::string, std::string> executorContainers() {
    std::map<std::string, std::string> found;
    const rapidjson::Document listed = executors();  // outlives the loop
    for (const auto& e : listed["executors"].GetArray()) {
      found[e["id"].GetString()] = e["container"].GetString();
    }
    return found;
  }

  // Waits for the attempt after `attemptId` to serve its status; points `am` at it.
  bool waitForNextAttempt(const std::string& attemptId, std::chrono::milliseconds timeout) {
    return eventually(
        [&] {
          const rest::ApplicationReport report = client->application(appId);
          if (report.currentAppAttemptId == attemptId || report.state != "RUNNING" ||
              report.trackingUrl.empty()) {
            return false;
          }
          rest::HttpClientOptions withToken;
          withToken.defaultHeaders = {{"Authorization", "Bearer " + controlToken}};
          withToken.retry.maxAttempts = 1;
          am = std::make_unique<rest::HttpClient>(report.trackingUrl, withToken);
          try {
            return std::string(status()["attemptId"].GetString()) != attemptId;
          } catch (const std::exception&) {
            return false;
          }
        },
        timeout);
  }

  // Processes whose working directory is inside the test's directory.
  std::vector<pid_t> processesLeft() {
    std::vector<pid_t> found;
    const std::string prefix = fs::weakly_canonical(dir.path()).string();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::error_code linkError;
      const fs::path cwd = fs::read_symlink(entry.path() / "cwd", linkError);
      if (!linkError && cwd.string().compare(0, prefix.size(), prefix) == 0) {
        found.push_back(std::stoi(name));
      }
    }
    return found;
  }

  void expectNothingLeft() {
    if (cluster) cluster->stop();
    std::vector<pid_t> left;
    eventually(
        [&] {
          left = processesLeft();
          return left.empty();
        },
        15s);
    for (pid_t pid : left) {
      ADD_FAILURE() << "process " << pid << " ("
                    << testing_support::readFile("/proc/" + std::to_string(pid) + "/cmdline")
                    << ") is left";
      ::kill(pid, SIGKILL);
    }
  }

  Conf restartConf() {
    return {{"am.stagingDir", (dir.path() / "staging").string()},
            {"am.maxAttempts", "2"},
            {"executor.cores", "2"},
            {"dynamicAllocation.minExecutors", "2"},
            {"dynamicAllocation.maxExecutors", "2"},
            {"dynamicAllocation.executorIdleTimeout", "60s"}};
  }
};

TEST_F(AmRestartTest, AnAmKilledMidJobResumesWithTheSameExecutorsAndRerunsNoCommittedTask) {
  startCluster(2, 5);
  const int tasks = 16;
  submit(twoStageJob(tasks, "1"), restartConf(), /*session=*/false);
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1") >= 5; }, 60s))
      << "the map stage did not get going";
  const auto firstStatus = status();
  const std::string firstAttempt = firstStatus["attemptId"].GetString();
  const pid_t amPid = static_cast<pid_t>(firstStatus["pid"].GetInt64());
  const std::map<std::string, std::string> before = executorContainers();
  ASSERT_EQ(before.size(), 2u);
  // What is committed now must never run again.
  const int64_t committedBefore = mapTasksSucceeded("job-1");
  std::set<int> committed;
  for (const auto& [task, runs] : runsByTask()) committed.insert(task);

  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(amPid, SIGKILL), 0);
  ASSERT_TRUE(waitForNextAttempt(firstAttempt, 60s))
      << "no second attempt; RM log:\n"
      << testing_support::readFile(cluster->rmLogPath());
  // Running tasks again: the adopted executors registered and the job goes on.
  ASSERT_TRUE(eventually(
      [&] {
        return status()["tasks"]["running"].GetInt64() > 0 ||
               mapTasksSucceeded("job-1") > committedBefore;
      },
      60s));
  const double recoverySeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
  std::cout << "AM recovery: kill -9 to the new attempt running tasks in " << recoverySeconds
            << " s" << std::endl;
  const auto second = status();
  EXPECT_EQ(second["recoveredFromAttempt"].GetInt(), 1);
  EXPECT_EQ(mapTasksSucceeded("job-1") >= committedBefore, true);

  const rest::ApplicationReport report = waitForEnd(120s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  // The same executors (ids and containers) ran the rest: none was started anew.
  // (Checked through the report's decision trail is not possible once the AM is gone, so the
  // executors seen by the second attempt were recorded above.)
  std::string expected;
  for (int i = 0; i < tasks; ++i) expected += "map " + std::to_string(i) + "\n";
  std::set<std::string> lines;
  EXPECT_EQ(testing_support::readFile((dir.path() / "out" / "part-0").string()).size(),
            expected.size());
  const std::map<int, int> runs = runsByTask();
  ASSERT_EQ(runs.size(), static_cast<size_t>(tasks));
  for (const auto& [task, count] : runs) {
    if (committed.count(task) != 0 && count != 1) {
      // Started before the kill: committed or running on an adopted executor; neither reruns.
      ADD_FAILURE() << "map task " << task << " ran " << count << " times";
    }
  }
  expectNothingLeft();
}

TEST_F(AmRestartTest, TheNewAttemptAdoptsTheExecutorsOfTheOldOne) {
  startCluster(2, 5);
  submit(twoStageJob(16, "4"), restartConf(), /*session=*/false);
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1") >= 2; }, 60s));
  const auto firstStatus = status();
  const std::string firstAttempt = firstStatus["attemptId"].GetString();
  const std::map<std::string, std::string> before = executorContainers();
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(::kill(static_cast<pid_t>(firstStatus["pid"].GetInt64()), SIGKILL), 0);
  ASSERT_TRUE(waitForNextAttempt(firstAttempt, 60s));
  std::map<std::string, std::string> after;
  int starting = -1;
  ASSERT_TRUE(eventually(
      [&] {
        after = executorContainers();
        starting = status()["containers"]["starting"].GetInt();
        return after == before && starting == 0;
      },
      30s))
      << "executors before the kill and after differ, or are not all registered again (" << starting
      << " starting)";
  EXPECT_EQ(status()["containers"]["requested"].GetInt(), 0);
  bool recovered = false;
  for (const auto& d :
       am->getJson("api/v1/allocation/decisions?limit=100")["decisions"].GetArray()) {
    if (std::string(d["why"].GetString()).find("recovered from attempt 1") != std::string::npos) {
      recovered = true;
    }
  }
  EXPECT_TRUE(recovered) << "no 'recovered from attempt 1' in the decision log";
  EXPECT_THAT(rest::toJsonString(am->getJson("api/v1/allocation/history")),
              HasSubstr("recovered from attempt 1"));
  const rest::ApplicationReport report = waitForEnd(120s);
  EXPECT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  expectNothingLeft();
}

TEST_F(AmRestartTest, AnAmKilledTwiceWithTwoAttemptsFailsTheApplication) {
  startCluster(1, 6);
  submit(twoStageJob(12, "2"), restartConf(), /*session=*/false);
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1") >= 1; }, 60s));
  const auto first = status();
  const std::string firstAttempt = first["attemptId"].GetString();
  ASSERT_EQ(::kill(static_cast<pid_t>(first["pid"].GetInt64()), SIGKILL), 0);
  ASSERT_TRUE(waitForNextAttempt(firstAttempt, 60s));
  ASSERT_EQ(::kill(static_cast<pid_t>(status()["pid"].GetInt64()), SIGKILL), 0);
  const rest::ApplicationReport report = waitForEnd(60s);
  EXPECT_EQ(report.state, "FAILED");
  EXPECT_EQ(report.finalStatus, "FAILED");
  EXPECT_THAT(report.diagnostics, HasSubstr("without unregistering"));
  EXPECT_THAT(report.diagnostics, HasSubstr("attempt 2 of 2"));
  expectNothingLeft();
}

}  // namespace
}  // namespace tide::deploy
