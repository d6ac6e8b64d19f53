#pragma once

// The fixture of the work-preserving AM restart tests (issue 12): a cluster of real tide-rm and
// tide-nm processes, an AM with a recovery journal and two attempts, jobs whose tasks count
// their runs (each appends a line to runs/<task> when it starts), and the helpers to kill the
// AM and find its next attempt.

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/am_cluster_test.h"
#include "tests/support/processes.h"

namespace tide::deploy {

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
  std::map<int, int> runsByTask() { return runsIn(dir.path() / "runs"); }

  // Runs of each task counting its runs in `folder` (lines in <folder>/<index>); none yet when
  // the folder is not there yet.
  static std::map<int, int> runsIn(const fs::path& folder) {
    std::map<int, int> runs;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      std::ifstream in(entry.path());
      std::string line;
      int count = 0;
      while (std::getline(in, line)) ++count;
      runs[std::stoi(entry.path().filename().string())] = count;
    }
    return runs;
  }

  int64_t mapTasksSucceeded(const std::string& jobId, const std::string& stageId = "map") {
    try {
      const auto doc = job(jobId);
      return (*stage(doc, stageId))["succeeded"].GetInt64();
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
    return testing_support::eventually(
        [&] {
          const rest::ApplicationReport report = client->application(appId);
          if (report.currentAppAttemptId == attemptId || report.state != "RUNNING" ||
              report.trackingUrl.empty()) {
            return false;
          }
          rest::HttpClientOptions withToken;
          withToken.defaultHeaders = {{"Authorization", "Bearer " + controlToken}};
          withToken.retry.maxAttempts = 1;
          tls.applyTo(withToken);
          am = std::make_unique<rest::HttpClient>(report.trackingUrl, withToken);
          try {
            return std::string(status()["attemptId"].GetString()) != attemptId;
          } catch (const std::exception&) {
            return false;
          }
        },
        timeout);
  }

  // Kills the current attempt's AM with SIGKILL and waits for the next attempt to serve its
  // status (`am` then points at it).
  void killAmAndWaitForNextAttempt() {
    const auto current = status();
    const std::string attempt = current["attemptId"].GetString();
    ASSERT_EQ(::kill(static_cast<pid_t>(current["pid"].GetInt64()), SIGKILL), 0);
    ASSERT_TRUE(waitForNextAttempt(attempt, std::chrono::seconds(60)))
        << "no next attempt; RM log:\n"
        << testing_support::readFile(cluster->rmLogPath());
  }

  void expectNothingLeft() {
    if (cluster) cluster->stop();
    appId.clear();  // nothing left to kill at the tear-down
    std::vector<pid_t> left;
    testing_support::eventually(
        [&] {
          left = testing_support::processesUnder(dir.path());
          return left.empty();
        },
        std::chrono::seconds(15));
    for (pid_t pid : left) {
      ADD_FAILURE() << "process " << pid << " ("
                    << testing_support::readFile("/proc/" + std::to_string(pid) + "/cmdline")
                    << ") is left";
      ::kill(pid, SIGKILL);
    }
  }

  // Starts a cluster of `nodes` node managers of `cores` cores each, submits twoStageJob(tasks,
  // sleep) to an AM of restartConf(), and waits until `mapsDone` map tasks have succeeded.
  void runUntilMapsDone(int nodes, int cores, int tasks, const std::string& sleep,
                        int64_t mapsDone) {
    startCluster(nodes, cores);
    submit(twoStageJob(tasks, sleep), restartConf(), /*session=*/false);
    ASSERT_TRUE(testing_support::eventually([&] { return mapTasksSucceeded("job-1") >= mapsDone; },
                                            std::chrono::seconds(60)))
        << "the map stage did not get going";
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

}  // namespace tide::deploy
