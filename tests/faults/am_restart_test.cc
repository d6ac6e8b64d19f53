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

#include "am/status/event_log_replay.h"
#include "tests/faults/am_restart_fixture.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;

TEST_F(AmRestartTest, AnAmKilledMidJobResumesWithTheSameExecutorsAndRerunsNoCommittedTask) {
  const int tasks = 16;
  ASSERT_NO_FATAL_FAILURE(runUntilMapsDone(2, 5, tasks, "1", 5));
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
  // The same executors (ids and containers) ran the rest: none was started anew. The event
  // log both attempts wrote says so: it ends with the second attempt's SUCCEEDED and knows no
  // executor but the first attempt's two.
  const am::ReplayedApplication history =
      am::replayEventLog(am::eventLogPath((dir.path() / "history").string(), appId));
  EXPECT_EQ(history.state(), "SUCCEEDED");
  EXPECT_NE(history.application.attemptId, firstAttempt);
  std::set<std::string> logged, adopted;
  for (const am::ExecutorLifetime& e : history.executors) logged.insert(e.id);
  for (const auto& [id, container] : before) adopted.insert(id);
  EXPECT_EQ(logged, adopted);
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

// Another cluster's application with the same id (tide-rm started in the same millisecond, or
// Slurm and tide-rm) left its staging directory where this application's would be. The AM
// neither replays, writes into nor removes that one: it stages in a directory of its own, which
// its next attempt finds again, and resumes from as any restart does.
TEST_F(AmRestartTest, AnotherApplicationsStagingDirectoryWithTheSameIdIsLeftAlone) {
  startCluster(2, 5);
  const std::string predictedId =
      "application_" + std::to_string(client->info().id) + "_0001";  // the cluster's first
  const fs::path theirs = dir.path() / "staging" / predictedId;
  fs::create_directories(theirs);
  const std::string theirJournal = "not this application's journal\n";
  std::ofstream(theirs / "owner") << "another application\n";
  std::ofstream(theirs / "am-journal") << theirJournal;

  submit(twoStageJob(8, "1"), restartConf(), /*session=*/false);
  ASSERT_EQ(appId, predictedId);
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1") >= 3; }, 60s)) << amLog();
  std::set<int> committed;
  for (const auto& [task, runs] : runsByTask()) committed.insert(task);
  ASSERT_NO_FATAL_FAILURE(killAmAndWaitForNextAttempt());
  EXPECT_EQ(status()["recoveredFromAttempt"].GetInt(), 1) << amLog();

  const rest::ApplicationReport report = waitForEnd(120s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  EXPECT_THAT(amLog(), HasSubstr(theirs.string() + " belongs to another application"));
  EXPECT_EQ(testing_support::readFile((theirs / "am-journal").string()), theirJournal);
  EXPECT_EQ(testing_support::readFile((theirs / "owner").string()), "another application\n");
  for (const auto& [task, count] : runsByTask()) {
    if (committed.count(task) != 0) {
      EXPECT_EQ(count, 1) << "map task " << task;
    }
  }
  expectNothingLeft();
}

TEST_F(AmRestartTest, TheNewAttemptAdoptsTheExecutorsOfTheOldOne) {
  ASSERT_NO_FATAL_FAILURE(runUntilMapsDone(2, 5, 16, "4", 2));
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
  const rapidjson::Document decisions = am->getJson("api/v1/allocation/decisions?limit=100");
  for (const auto& d : decisions["decisions"].GetArray()) {
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
  ASSERT_NO_FATAL_FAILURE(runUntilMapsDone(1, 6, 12, "2", 1));
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

// Issue 16: a journal compacted while the job runs (am.journalCompactionSize) brings the next
// attempt to the same place as the whole journal would.
TEST_F(AmRestartTest, AnAmKilledAfterItsJournalWasCompactedKeepsEveryCommittedTask) {
  const int tasks = 12000;  // noop: about 2.8 MB of journal uncompacted
  startCluster(1, 5);
  Conf conf = restartConf();
  conf.push_back({"am.journalCompactionSize", "1m"});
  submit(R"({"name": "many", "stages": [{"id": "all", "tasks": )" + std::to_string(tasks) +
             R"(, "builtin": "noop"}]})",
         conf, /*session=*/false);
  const fs::path journal = dir.path() / "staging" / appId / "am-journal";
  // Compacted, with more commits than an uncompacted journal of its size could hold (about 235
  // bytes a task).
  ASSERT_TRUE(eventually(
      [&] {
        std::error_code ec;
        const auto bytes = fs::file_size(journal, ec);
        const int64_t succeeded = mapTasksSucceeded("job-1", "all");
        return !ec && succeeded >= 5000 && succeeded < tasks &&
               bytes < static_cast<uintmax_t>(succeeded) * 200;
      },
      90s))
      << "succeeded " << mapTasksSucceeded("job-1", "all") << "\n"
      << amLog();
  EXPECT_THAT(amLog(), HasSubstr("compacted the recovery journal"));
  // Killed with every commit up to here journaled: the next attempt keeps them all.
  const int64_t committedBefore = mapTasksSucceeded("job-1", "all");
  ASSERT_NO_FATAL_FAILURE(killAmAndWaitForNextAttempt());
  const auto second = status();
  EXPECT_EQ(second["recoveredFromAttempt"].GetInt(), 1);
  EXPECT_GE(mapTasksSucceeded("job-1", "all"), committedBefore);
  const rapidjson::Document decisions = am->getJson("api/v1/allocation/decisions?limit=1000");
  int64_t kept = -1;
  for (const auto& d : decisions["decisions"].GetArray()) {
    const std::string reason = d["why"].GetString();
    if (reason.rfind("recovered from attempt 1", 0) == 0) {
      kept = std::stoll(reason.substr(reason.find("1 job, ") + 7));
    }
  }
  EXPECT_GE(kept, committedBefore) << "the decision log says what was kept";
  const rest::ApplicationReport report = waitForEnd(120s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  expectNothingLeft();
}

}  // namespace
}  // namespace tide::deploy
