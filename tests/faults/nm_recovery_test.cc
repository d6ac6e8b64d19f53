// NM recovery (issue 12, items 4 and 5) with real processes: tide-rm, one tide-nm, the AM and
// its executors on 127.0.0.1. The tide-nm is killed with SIGKILL while every task runs and is
// started again on the same port and work dir (nm.recovery.enabled, the default): it
// re-attaches to its containers, so no task is run again (each execution leaves a line in a
// side-effect file of its task), the executors and their containers keep their ids and pids,
// the job succeeds, and once the cluster is stopped nothing of it is left (a walk of /proc).
// It also prints how long the restarted NM took to re-attach and report its containers.

#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "../integration/am_cluster_test.h"
#include "rest/messages/cluster.h"
#include "tests/faults/proc_walk.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;
using testing_support::readFile;
namespace fs = std::filesystem;

class NmRecoveryTest : public testing_support::AmClusterTest {
 protected:
  // A stage of `tasks` tasks that each append their attempt to runs/<task> (one line per
  // execution: the side effect the test counts), wait for the test's `release` file and then
  // write their output.
  std::string blockingJob(int tasks) {
    fs::create_directories(dir.path() / "runs");
    const std::string runs = (dir.path() / "runs").string();
    const std::string release = (dir.path() / "release").string();
    return R"({"name": "recovery", "output": ")" + (dir.path() / "out").string() +
           R"(", "stages": [{"id": "work", "tasks": )" + std::to_string(tasks) +
           R"(, "command": ["sh", "-c", "echo {attempt} >> )" + runs + R"(/{task}; while [ ! -e )" +
           release +
           R"( ]; do sleep 0.1; done; echo task {task} attempt {attempt} > \"$TIDE_OUTPUT_DIR/part-0\""]}]})";
  }

  int tasksStarted(int tasks) {
    int started = 0;
    for (int i = 0; i < tasks; ++i) {
      started += fs::exists(dir.path() / "runs" / std::to_string(i)) ? 1 : 0;
    }
    return started;
  }

  // Executor id -> "container pid".
  std::map<std::string, std::string> executorIdentities() {
    std::map<std::string, std::string> identities;
    const rapidjson::Document listed = executors();  // outlives the loop
    for (const auto& e : listed["executors"].GetArray()) {
      identities[e["id"].GetString()] =
          std::string(e["container"].GetString()) + " " + std::to_string(e["pid"].GetInt64());
    }
    return identities;
  }

  // The one node as tide-rm reports it.
  rest::NodeReport node() {
    rest::HttpClientOptions options;
    options.defaultHeaders = {{"Authorization", "Bearer " + cluster->adminToken()}};
    rest::HttpClient rm(cluster->rmAddress(), options);
    const auto nodes = rest::nodeReportsFromJson(rm.getJson("/ws/v1/cluster/nodes"));
    return nodes.empty() ? rest::NodeReport{} : nodes.front();
  }
};

TEST_F(NmRecoveryTest, AKilledAndRestartedNodeManagerRestartsNoTask) {
  constexpr int kTasks = 4;
  // One node, so the AM and every executor run below the node manager that is killed.
  startCluster(1, 5, "15s");
  submit(blockingJob(kTasks),
         {{"dynamicAllocation.minExecutors", "4"},
          {"dynamicAllocation.maxExecutors", "4"},
          {"executor.cores", "1"}},
         /*session=*/false);
  ASSERT_TRUE(eventually([&] { return tasksStarted(kTasks) == kTasks; }, 60s))
      << "not every task started; " << amLog();
  // The AM's executor list and tide-rm's node report follow a moment behind the tasks (the
  // status is a periodic snapshot; the node's containers come with its next heartbeat).
  std::map<std::string, std::string> before;
  ASSERT_TRUE(eventually(
      [&] {
        before = executorIdentities();
        return before.size() == 4u;
      },
      30s))
      << "the AM lists " << before.size() << " executors; " << amLog();
  int containersBefore = 0;
  ASSERT_TRUE(eventually(
      [&] {
        containersBefore = node().numContainers;
        return containersBefore == 5;  // the AM and 4 executors
      },
      30s))
      << "tide-rm reports " << containersBefore << " containers on the node";

  ChildProcess& nm = cluster->nodeManager(0);
  ASSERT_TRUE(nm.signal(SIGKILL));
  ASSERT_TRUE(nm.waitFor(10s).has_value());
  for (const auto& [id, identity] : before) {
    const pid_t pid = static_cast<pid_t>(std::stol(identity.substr(identity.find(' ') + 1)));
    EXPECT_EQ(::kill(pid, 0), 0) << "executor " << id << " died with its node manager";
  }

  // The old NM's last heartbeat; anything later is the restarted one's.
  const int64_t lastOfTheOld = node().lastHealthUpdate;
  const auto restartedAt = std::chrono::steady_clock::now();
  cluster->restartNodeManager(0);
  // Re-attached and reported: tide-rm got a heartbeat of the restarted NM (after its
  // registration, which also counts as contact) that still lists every container: one it did
  // not list would have been completed as lost.
  int64_t registeredAt = 0;
  ASSERT_TRUE(eventually(
      [&] {
        const rest::NodeReport report = node();
        if (registeredAt == 0 && report.lastHealthUpdate > lastOfTheOld) {
          registeredAt = report.lastHealthUpdate;
        }
        return registeredAt != 0 && report.lastHealthUpdate > registeredAt &&
               report.state == "RUNNING" && report.numContainers == containersBefore;
      },
      30s))
      << readFile(cluster->nmLogPath(0));
  const auto recoveryMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - restartedAt)
                              .count();
  std::cout << "nm recovery: " << containersBefore << " containers re-attached and reported "
            << recoveryMs << " ms after the restart (at most one heartbeat interval, 200 ms, late)"
            << std::endl;
  EXPECT_NE(readFile(cluster->nmLogPath(0)).find("re-attached to 5 running container(s)"),
            std::string::npos)
      << readFile(cluster->nmLogPath(0));
  // The same executors in the same containers: none was lost, none replaced.
  EXPECT_EQ(executorIdentities(), before);
  EXPECT_EQ(status()["allocation"]["launched"].GetInt(), 4);

  testing_support::writeFile(dir.path() / "release", "");
  const rest::ApplicationReport report = waitForEnd(120s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics << "\n" << amLog();

  // Not restarted: every task ran once, as attempt 0, and committed that attempt.
  for (int i = 0; i < kTasks; ++i) {
    EXPECT_EQ(readFile(dir.path() / "runs" / std::to_string(i)), "0\n") << "task " << i;
    EXPECT_EQ(readFile(dir.path() / "out" / ("part-" + std::to_string(i))),
              "task " + std::to_string(i) + " attempt 0\n");
  }

  cluster->stop();
  const auto left = faults::waitUntilNoneLeft(
      [&] { return faults::processesOfRun("", fs::weakly_canonical(dir.path()).string()); });
  EXPECT_TRUE(left.empty()) << left.size() << " processes left:" << faults::describe(left);
  for (const faults::WalkedProcess& process : left) ::kill(process.pid, SIGKILL);
  appId.clear();
}

}  // namespace
}  // namespace tide::deploy
