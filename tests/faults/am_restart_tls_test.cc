// Work-preserving AM restarts on a TLS cluster: every server speaks HTTPS only, so the address a
// new attempt leaves for the old attempt's executors, and the block servers it records for them
// when they register again, must be https:// too. Otherwise the executors cannot find the new
// attempt (they are lost, and their outputs with them), or readers cannot fetch their blocks.
// Real tide-rm, tide-nm, tide-am and tide-executor processes on 127.0.0.1; the AM is killed with
// SIGKILL.

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/faults/am_restart_fixture.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::StartsWith;
using testing_support::eventually;

class AmRestartTlsTest : public AmRestartTest {
 protected:
  void SetUp() override { serveTls(); }
};

// The map outputs are committed on the two executors and a gate task keeps the reduce from
// starting until the AM has been killed and its next attempt has adopted both executors; the
// reduce then reads every map output from the adopted executors' block servers.
TEST_F(AmRestartTlsTest, TheNextAttemptAdoptsTheExecutorsAndReadsTheirBlocksOverHttps) {
  startCluster(/*nodes=*/2, /*coresPerNode=*/5);
  ASSERT_THAT(cluster->rmAddress(), StartsWith("https://"));
  const int tasks = 4;
  const fs::path runs = dir.path() / "runs";
  fs::create_directories(runs);
  const fs::path gate = dir.path() / "gate";
  const fs::path out = dir.path() / "out";
  const std::string job =
      R"({"name": "tls-restart", "output": ")" + out.string() + R"(", "stages": [)" +
      R"({"id": "map", "tasks": )" + std::to_string(tasks) +
      R"(, "command": ["sh", "-c", "echo {attempt} >> )" + runs.string() +
      R"(/{task}; echo map {task} > \"$TIDE_OUTPUT_DIR/part-0\""]},)" +
      R"( {"id": "wait", "tasks": 1, "command": ["sh", "-c", "while [ ! -e )" + gate.string() +
      R"( ]; do sleep 0.1; done"]},)" +
      R"( {"id": "reduce", "depends_on": ["map", "wait"], "tasks": 1, "command": ["sh", "-c",)" +
      R"( "cat \"$TIDE_INPUT_DIR\"/map/part-* | sort > \"$TIDE_OUTPUT_DIR/part-0\""]}]})";
  submit(job, restartConf(), /*session=*/false);
  ASSERT_THAT(trackingUrl, StartsWith("https://127.0.0.1:"));
  ASSERT_TRUE(eventually([&] { return mapTasksSucceeded("job-1") == tasks; }, 60s));
  std::map<std::string, std::string> before;
  // (The executor list is served from the status snapshot, published a moment later.)
  ASSERT_TRUE(eventually(
      [&] {
        before = executorContainers();
        return before.size() == 2;
      },
      30s));

  killAmAndWaitForNextAttempt();
  // Both executors found the new attempt through its address file and registered again.
  std::map<std::string, std::string> after;
  ASSERT_TRUE(eventually(
      [&] {
        after = executorContainers();
        return after == before && status()["containers"]["starting"].GetInt() == 0;
      },
      30s))
      << "the previous attempt's executors did not register with the new one; AM log:\n"
      << amLog();

  std::ofstream(gate.string()) << "open\n";
  const rest::ApplicationReport report = waitForEnd(90s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  std::string expected;
  for (int i = 0; i < tasks; ++i) expected += "map " + std::to_string(i) + "\n";
  EXPECT_EQ(testing_support::readFile((out / "part-0").string()), expected);
  // Every map output was read where it was committed: no map task ran twice.
  const std::map<int, int> ran = runsByTask();
  ASSERT_EQ(ran.size(), static_cast<size_t>(tasks));
  for (const auto& [task, count] : ran) EXPECT_EQ(count, 1) << "map task " << task;
  expectNothingLeft();
}

}  // namespace
}  // namespace tide::deploy
