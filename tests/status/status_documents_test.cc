// The JSON shape of what the status page draws (issue 14): the cluster's capacity next to the
// target, every job's and stage's times and progress (bounded, with how many were left out),
// the removed executors with why, and the decision log's runs. Rendered by StatusHandlers
// from a snapshot a fake MasterControl hands it, as the real AM's loop publishes one.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <utility>

#include "am/status_handlers.h"
#include "rest/http_server.h"
#include "rest/json.h"
#include "tests/support/files.h"
#include "tests/support/headless_chromium.h"
#include "tests/support/stand_in_master.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;

constexpr TimeMs kStartedAt = 50000;  // clock time the AM started; the API says uptime

// Each (key, value) of the table is an integer member `key` of `object` equal to `value`.
void expectIntegers(const rapidjson::Value& object,
                    std::initializer_list<std::pair<const char*, int64_t>> expected) {
  for (const auto& [key, value] : expected) {
    ASSERT_TRUE(object.HasMember(key) && object[key].IsInt64()) << key;
    EXPECT_EQ(object[key].GetInt64(), value) << key;
  }
}

class FakeMaster : public testing_support::StandInMasterControl {
 public:
  FakeMaster() {
    info_.startedAt = kStartedAt;
    info_.executorCores = 2;
    info_.executorMemoryMb = 1024;
    snapshot_->takenAt = kStartedAt + 9000;
    snapshot_->removed = std::make_shared<const std::vector<RemovedExecutor>>();
  }
  TimeMs nowMs() const override { return kStartedAt + 9000; }
  std::shared_ptr<const StatusSnapshot> status() override { return snapshot_; }
  std::vector<JobSummary> jobs() override { return snapshot_->jobs; }
  std::vector<DecisionRecord> decisions(size_t limit) override { return log.newest(limit); }

  StatusSnapshot& snapshot() { return *snapshot_; }
  DecisionLog log;

 private:
  std::shared_ptr<StatusSnapshot> snapshot_ = std::make_shared<StatusSnapshot>();
};

StageSummary stage(const std::string& id, StageState state, TimeMs submitted, TimeMs completed) {
  StageSummary s;
  s.id = id;
  s.state = state;
  s.numTasks = 10;
  s.succeeded = state == StageState::kSucceeded ? 10 : 4;
  s.running = state == StageState::kRunning ? 3 : 0;
  s.pending = state == StageState::kRunning ? 3 : 0;
  s.failedAttempts = state == StageState::kRunning ? 1 : 0;
  s.submittedMs = submitted;
  s.completedMs = completed;
  return s;
}

TEST(StatusDocumentsTest, CapacityIsNumbersFromTheBackendOrNullWhenUnknown) {
  FakeMaster master;
  StatusHandlers handlers(master);
  master.snapshot().capacity = {3, 12, "tide-rm allocate response (per live node)"};
  rapidjson::Document s = rest::parseJson(handlers.statusJson());
  const auto& c = s["capacity"];
  EXPECT_TRUE(c["known"].GetBool());
  EXPECT_EQ(c["executorsFitNow"].GetInt(), 3);
  EXPECT_EQ(c["executorsFitTotal"].GetInt(), 12);
  EXPECT_EQ(c["executorMemoryMb"].GetInt64(), 1024);
  EXPECT_EQ(c["executorCores"].GetInt(), 2);
  EXPECT_THAT(c["source"].GetString(), HasSubstr("tide-rm"));

  // Slurm does not say: null numbers and the reason, never a made-up 0.
  master.snapshot().capacity = {-1, -1, "unknown: Slurm does not say"};
  s = rest::parseJson(handlers.statusJson());
  EXPECT_FALSE(s["capacity"]["known"].GetBool());
  EXPECT_TRUE(s["capacity"]["executorsFitNow"].IsNull());
  EXPECT_TRUE(s["capacity"]["executorsFitTotal"].IsNull());
  EXPECT_THAT(s["capacity"]["source"].GetString(), HasSubstr("Slurm"));
}

TEST(StatusDocumentsTest, JobsAndStagesCarryTheirTimesAsUptimeAndTheirProgress) {
  FakeMaster master;
  StatusHandlers handlers(master);
  JobSummary job;
  job.jobId = "job-1";
  job.name = "etl";
  job.submittedMs = kStartedAt + 1000;
  job.completedMs = -1;
  job.stages = {stage("map", StageState::kSucceeded, kStartedAt + 1000, kStartedAt + 4000),
                stage("reduce", StageState::kRunning, kStartedAt + 4000, -1),
                stage("write", StageState::kWaiting, -1, -1)};
  master.snapshot().jobs = {job};
  const rapidjson::Document s = rest::parseJson(handlers.statusJson());
  EXPECT_EQ(s["jobs"][0]["submittedMs"].GetInt64(), 1000);
  EXPECT_EQ(s["jobs"][0]["completedMs"].GetInt64(), -1);
  ASSERT_EQ(s["stages"].Size(), 3u);
  EXPECT_EQ(s["stagesOmitted"].GetInt64(), 0);
  const auto& map = s["stages"][0];
  EXPECT_EQ(std::string(map["job"].GetString()), "job-1");
  EXPECT_EQ(std::string(map["id"].GetString()), "map");
  EXPECT_EQ(std::string(map["state"].GetString()), "SUCCEEDED");
  EXPECT_EQ(map["submittedMs"].GetInt64(), 1000);
  EXPECT_EQ(map["completedMs"].GetInt64(), 4000);
  expectIntegers(s["stages"][1], {{"tasks", 10},
                                  {"succeeded", 4},
                                  {"running", 3},
                                  {"pending", 3},
                                  {"failedAttempts", 1},
                                  {"completedMs", -1}});
  EXPECT_EQ(std::string(s["stages"][2]["state"].GetString()), "WAITING");
  EXPECT_EQ(s["stages"][2]["submittedMs"].GetInt64(), -1);
}

TEST(StatusDocumentsTest, ThousandsOfStagesAreCappedKeepingTheRunningOnes) {
  FakeMaster master;
  StatusHandlers handlers(master);
  JobSummary job;
  job.jobId = "job-1";
  for (int i = 0; i < 3000; ++i) {
    job.stages.push_back(
        stage("s" + std::to_string(i), StageState::kSucceeded, kStartedAt + i, kStartedAt + i + 1));
  }
  job.stages[7] = stage("s7", StageState::kRunning, kStartedAt + 7, -1);  // old, still running
  master.snapshot().jobs = {job};
  const rapidjson::Document s = rest::parseJson(handlers.statusJson());
  ASSERT_EQ(s["stages"].Size(), 200u);
  EXPECT_EQ(s["stagesOmitted"].GetInt64(), 2800);
  EXPECT_EQ(std::string(s["stages"][0]["id"].GetString()), "s7") << "running, listed first in time";
  EXPECT_EQ(std::string(s["stages"][199]["id"].GetString()), "s2999") << "then the newest";
}

TEST(StatusDocumentsTest, RemovedExecutorsWithTheirReasonNewestFirstAndBounded) {
  FakeMaster master;
  StatusHandlers handlers(master);
  master.snapshot().removed = nullptr;  // a snapshot made without them
  EXPECT_EQ(rest::parseJson(handlers.executorsJson(100))["removed"].Size(), 0u);
  RemovedExecutors removed(3);
  removed.add({"e1", "127.0.0.1", "container_1_0001_01_000002", kStartedAt + 500, kStartedAt + 6000,
               "idle_timeout", "removing e1: idle for 2.0s"});
  removed.add({"e2", "127.0.0.1", "container_1_0001_01_000003", kStartedAt + 700, kStartedAt + 7000,
               "memory", "executor e2 killed for exceeding its memory"});
  for (int i = 3; i <= 6; ++i) {
    removed.add({"e" + std::to_string(i), "h", "c", -1, kStartedAt + 8000, "exit", "exited"});
  }
  master.snapshot().removed = removed.newest();
  master.snapshot().removedTotal = removed.total();
  rapidjson::Document doc = rest::parseJson(handlers.executorsJson(100));
  ASSERT_EQ(doc["removed"].Size(), 3u) << "the AM keeps the newest `capacity`";
  EXPECT_EQ(doc["removedTotal"].GetInt64(), 6);
  EXPECT_EQ(std::string(doc["removed"][0]["id"].GetString()), "e6");
  EXPECT_EQ(doc["removed"][0]["registeredAtMs"].GetInt64(), -1) << "never registered";
  EXPECT_EQ(doc["removed"][0]["removedAtMs"].GetInt64(), 8000);
  EXPECT_EQ(std::string(doc["removed"][2]["reason"].GetString()), "exit");

  RemovedExecutors two;
  two.add({"e1", "127.0.0.1", "container_1_0001_01_000002", kStartedAt + 500, kStartedAt + 6000,
           "idle_timeout", "removing e1: idle for 2.0s"});
  two.add({"e2", "127.0.0.1", "container_1_0001_01_000003", kStartedAt + 700, kStartedAt + 7000,
           "memory", "executor e2 killed for exceeding its memory"});
  master.snapshot().removed = two.newest();
  master.snapshot().removedTotal = two.total();
  doc = rest::parseJson(handlers.executorsJson(1));
  ASSERT_EQ(doc["removed"].Size(), 1u) << "?removed= limits the list";
  const auto& e2 = doc["removed"][0];
  EXPECT_EQ(std::string(e2["reason"].GetString()), "memory");
  EXPECT_THAT(e2["why"].GetString(), HasSubstr("memory"));
  EXPECT_EQ(e2["registeredAtMs"].GetInt64(), 700);
  EXPECT_EQ(e2["removedAtMs"].GetInt64(), 7000);
  EXPECT_EQ(std::string(e2["container"].GetString()), "container_1_0001_01_000003");
  EXPECT_TRUE(doc["executors"].IsArray());
}

TEST(StatusDocumentsTest, DecisionsCarryTheirRunsFirstValuesAndSummary) {
  FakeMaster master;
  StatusHandlers handlers(master);
  for (int step = 0; step < 5; ++step) {
    master.log.add(1000 + step * 100, "allocation", "lower_target", 9 - step, "lowered", "",
                   10 - step);
  }
  const rapidjson::Document doc = rest::parseJson(handlers.decisionsJson(10));
  ASSERT_EQ(doc["decisions"].Size(), 1u);
  const auto& d = doc["decisions"][0];
  expectIntegers(
      d, {{"repeats", 5}, {"firstTarget", 10}, {"target", 5}, {"atMs", 1000}, {"lastMs", 1400}});
  EXPECT_EQ(std::string(d["firstWhy"].GetString()), "lowered");
  EXPECT_EQ(std::string(d["summary"].GetString()),
            "lowered target 10 \u2192 5 in 5 steps over 400 ms");
}

// Thousands of executors and stages: the page draws at most 50 live executor rows, 60 timeline
// bars, 4 stage lanes, 25 stage rows and 40 removed rows, and says how many more there are.
TEST(StatusDocumentsTest, ThePageStaysBoundedWithThousandsOfExecutorsAndStages) {
  const std::string chromium =
      testing_support::chromiumForTest("the page's bounds need a real browser");
  if (chromium.empty()) return;
  FakeMaster master;
  StatusSnapshot& snapshot = master.snapshot();
  for (int i = 1; i <= 1000; ++i) {
    ExecutorStatus e;
    e.id = "e" + std::to_string(i);
    e.host = "127.0.0.1";
    e.container = "container_1_0001_01_" + std::to_string(i);
    e.registeredAt = kStartedAt + i;
    snapshot.executors.push_back(e);
  }
  RemovedExecutors removed;  // keeps 500 of them
  for (int i = 1001; i <= 4000; ++i) {
    removed.add({"e" + std::to_string(i), "127.0.0.1", "c", kStartedAt + 100, kStartedAt + 5000,
                 "idle_timeout", "removing: idle"});
  }
  snapshot.removed = removed.newest();
  snapshot.removedTotal = removed.total();
  JobSummary job;
  job.jobId = "job-1";
  job.submittedMs = kStartedAt;
  for (int i = 0; i < 3000; ++i) {
    job.stages.push_back(stage("s" + std::to_string(i), StageState::kSucceeded, kStartedAt + i * 2,
                               kStartedAt + i * 2 + 1000));
  }
  snapshot.jobs = {job};
  for (int i = 0; i < 2000; ++i) master.log.add(i, "allocation", "lower_target", 1, "x", "", 2);
  snapshot.capacity = {-1, -1, "unknown: Slurm does not say"};

  StatusHandlers handlers(master);
  rest::HttpServer server;
  handlers.registerStatusRoutes(server);
  server.start();
  testing_support::TempDir dir;
  const std::string domFile = (dir.path() / "dom.html").string();
  testing_support::runHeadlessChromium(chromium, dir.path(), "bounded", {"--dump-dom"},
                                       server.baseUrl() + "/", 5000, domFile);
  const std::string dom = testing_support::readFile(domFile);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = dom.find(needle); at != std::string::npos; at = dom.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"ebar"), 60u) << dom.substr(0, 3000);
  EXPECT_EQ(count("<tr data-executor-id="), 50u + 40u) << "50 live rows, 40 removed ones";
  EXPECT_THAT(dom, HasSubstr("950 more live executors"));
  // A live AM: its executors live now, and the form that changes its bounds (an ended
  // application's page has neither: tests/integration/history_integration_test.cc).
  EXPECT_THAT(dom, HasSubstr(R"(id="execCount">1000 live<)"));
  EXPECT_THAT(dom, HasSubstr(R"(id="boundsForm")"));
  EXPECT_THAT(dom, HasSubstr("3940 more executors not shown"));  // 1000 live + 3000 removed
  EXPECT_EQ(count("class=\"sbar"), 4u) << "back to back, 4 lanes hold 4 of them at a time";
  EXPECT_THAT(dom, HasSubstr("2996 more stages not shown"));  // 200 sent, of which 196 not drawn
  EXPECT_EQ(count("<tr data-stage="), 25u);
  EXPECT_THAT(dom, HasSubstr("2975 more stages"));
  EXPECT_EQ(count("data-reason=\"idle_timeout\""), 40u);
  EXPECT_THAT(dom, HasSubstr("2960 more removed"));
  EXPECT_EQ(count("<tr data-repeats="), 1u) << "2000 lowered targets in a row are one row";
  EXPECT_THAT(dom, HasSubstr("lowered target 2 \u2192 1 in 2000 steps"));
  // A backend that cannot say: unknown, with why.
  EXPECT_THAT(dom, HasSubstr(R"(id="capacity" data-fit-now="unknown" data-fit-total="unknown")"));
  EXPECT_THAT(dom, HasSubstr("<b>unknown</b> (unknown: Slurm does not say)"));
  // No screenshot of this page: Chromium's --screenshot of thousands of rows at 1280x2400 hung
  // past its bound in about half the runs (the --dump-dom run above never did); the page test
  // of a real run (status_integration_test.cc) keeps one for people to look at.
  server.stop();
}

}  // namespace
}  // namespace tide::am
