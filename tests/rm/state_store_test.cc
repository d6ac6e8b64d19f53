// tide-rm's state store: the pure encoding, replay and compaction of its log (round trips, a
// torn last record, corrupt and future-version logs), then the files (modes, fsync'd appends,
// reopening, compaction, the lock), then ClusterState's recovery from what it stored.

#include "deploy/rm/state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "deploy/rm/cluster_state.h"
#include "deploy/rm/rm_error.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace tide::rm {
namespace {

using ::testing::HasSubstr;
using testing_support::TempDir;
namespace fs = std::filesystem;

StoredApplication application(int number, const std::string& state = "RUNNING") {
  StoredApplication app;
  app.number = number;
  app.id = "application_1700000000000_000" + std::to_string(number);
  app.submission.applicationId = app.id;
  app.submission.applicationName = "app " + std::to_string(number);
  app.submission.command = "tide-am --job demo";
  app.submission.environment = {{"TIDE_APP_SECRET", "s3cret"}, {"JOB", "wordcount"}};
  app.submission.resource = {512, 1};
  app.state = state;
  app.finalStatus = "UNDEFINED";
  app.diagnostics = "line one\nline \"two\"";
  app.startedTime = 1700000000100;
  app.attempts.push_back({1, "appattempt_1700000000000_000" + std::to_string(number) + "_000001",
                          "token", "REGISTERED", "container_x_000001"});
  return app;
}

StoredCounters counters(int next) {
  StoredCounters c;
  c.clusterTimestamp = 1700000000000;
  c.epoch = 2;
  c.nextApplicationNumber = next;
  c.appsSubmitted = next - 1;
  c.forgottenFailed = 1;
  return c;
}

std::string sampleLog() {
  std::string text = encodeHeader();
  text += encodeRecord(StoreRecord::ofCounters(counters(2)));
  text += encodeRecord(StoreRecord::ofApplication(application(1, "ACCEPTED")));
  text += encodeRecord(StoreRecord::ofCounters(counters(3)));
  text += encodeRecord(StoreRecord::ofApplication(application(2)));
  text += encodeRecord(StoreRecord::ofApplication(application(1, "RUNNING")));
  text += encodeRecord(StoreRecord::forget(application(2).id));
  return text;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(StateStoreCodecTest, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
}

TEST(StateStoreCodecTest, ReplayAppliesRecordsInOrderLastOneWins) {
  const ReplayResult result = replay(sampleLog(), "state.log");
  EXPECT_FALSE(result.tornTail);
  EXPECT_EQ(result.records, 6u);
  EXPECT_EQ(result.validBytes, sampleLog().size());
  EXPECT_FALSE(result.state.empty);
  EXPECT_EQ(result.state.counters, counters(3));
  ASSERT_EQ(result.state.applications.size(), 1u);
  const StoredApplication& app = result.state.applications.at(application(1).id);
  EXPECT_EQ(app, application(1, "RUNNING"));
  EXPECT_EQ(app.submission.environment, application(1).submission.environment);
}

TEST(StateStoreCodecTest, AnEmptyLogIsAFreshStore) {
  const ReplayResult result = replay("", "state.log");
  EXPECT_TRUE(result.state.empty);
  EXPECT_EQ(result.records, 0u);
}

TEST(StateStoreCodecTest, ATornLastRecordIsDropped) {
  const std::string full = sampleLog();
  // Cut inside the last record, as a crash while appending leaves it.
  const std::string torn = full.substr(0, full.size() - 7);
  const ReplayResult result = replay(torn, "state.log");
  EXPECT_TRUE(result.tornTail);
  EXPECT_EQ(result.records, 5u);
  EXPECT_EQ(result.state.applications.size(), 2u);  // the forget was lost with the tail
  EXPECT_EQ(torn.substr(0, result.validBytes).back(), '\n');
  // A complete last line with a bad checksum (a half-written block) is a torn tail too.
  std::string flipped = full;
  flipped[flipped.size() - 3] = flipped[flipped.size() - 3] == 'a' ? 'b' : 'a';
  EXPECT_TRUE(replay(flipped, "state.log").tornTail);
}

// The message of the StateStoreError replaying `text` throws; a test failure when it throws none.
std::string replayError(const std::string& text, const std::string& file) {
  return testing_support::expectedMessageOf<StateStoreError>([&] { replay(text, file); });
}

TEST(StateStoreCodecTest, ACorruptRecordBeforeTheLastIsAnErrorNamingFileAndLine) {
  std::string text = sampleLog();
  const size_t third = text.find('\n', text.find('\n', text.find('\n') + 1) + 1);
  text[third + 20] = 'X';  // inside line 4
  const std::string error = replayError(text, "/var/lib/tide/state.log");
  EXPECT_THAT(error, HasSubstr("/var/lib/tide/state.log: line 4 is corrupt"));
  EXPECT_THAT(error, HasSubstr("checksum"));
}

TEST(StateStoreCodecTest, AFutureVersionIsAnError) {
  const std::string text = "tide-rm-state 2\n" + sampleLog().substr(encodeHeader().size());
  const std::string error = replayError(text, "/x/state.log");
  EXPECT_THAT(error, HasSubstr("/x/state.log was written by a newer tide-rm"));
  EXPECT_THAT(error, HasSubstr("format version 2"));
}

TEST(StateStoreCodecTest, AFileThatIsNotAStoreIsAnError) {
  EXPECT_THROW(replay("hello world\n", "f"), StateStoreError);
  EXPECT_THROW(replay("tide-rm-state one\n", "f"), StateStoreError);
  // A record whose checksum is right but whose JSON is not a record, before the last line.
  std::string bad = encodeHeader();
  char line[64];
  std::snprintf(line, sizeof(line), "%08x {}\n", crc32("{}"));
  bad += line;
  bad += encodeRecord(StoreRecord::ofCounters(counters(2)));
  EXPECT_THROW(replay(bad, "f"), StateStoreError);
}

TEST(StateStoreCodecTest, CompactionReplaysToTheSameState) {
  const StoredState state = replay(sampleLog(), "f").state;
  const std::string compacted = compact(state);
  const ReplayResult again = replay(compacted, "f");
  EXPECT_EQ(again.records, 1u + state.applications.size());
  EXPECT_EQ(again.state.counters, state.counters);
  EXPECT_EQ(again.state.applications, state.applications);
  EXPECT_LT(compacted.size(), sampleLog().size());
}

TEST(StateStoreFileTest, CreatesPrivateFilesAndReloadsWhatWasAppended) {
  TempDir temp;
  const std::string dir = (temp.path() / "store").string();
  {
    StateStore store(dir);
    EXPECT_TRUE(store.state().empty);
    store.append(
        {StoreRecord::ofCounters(counters(2)), StoreRecord::ofApplication(application(1))});
    struct stat info {};
    ASSERT_EQ(::stat(store.logPath().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(dir.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
  }
  StateStore reopened(dir);
  EXPECT_FALSE(reopened.state().empty);
  EXPECT_EQ(reopened.state().counters, counters(2));
  EXPECT_EQ(reopened.state().applications.at(application(1).id), application(1));
  EXPECT_EQ(reopened.recordsAtOpen(), 2u);
}

TEST(StateStoreFileTest, ASecondOpenOfALockedStoreFails) {
  TempDir temp;
  StateStore first(temp.path().string());
  try {
    StateStore second(temp.path().string());
    FAIL() << "two stores on one directory";
  } catch (const StateStoreError& error) {
    EXPECT_THAT(error.what(), HasSubstr("in use by another tide-rm"));
  }
}

TEST(StateStoreFileTest, ATornTailIsCutOffAtOpenAndAppendsFollowTheValidRecords) {
  TempDir temp;
  const std::string dir = temp.path().string();
  {
    StateStore store(dir);
    store.append({StoreRecord::ofCounters(counters(2))});
  }
  {
    std::ofstream out((temp.path() / kStateLogName), std::ios::app);
    out << "1234abcd {\"type\":\"appl";  // a crash mid-append
  }
  {
    StateStore store(dir);
    EXPECT_TRUE(store.tornTailAtOpen());
    store.append({StoreRecord::ofApplication(application(1))});
  }
  StateStore store(dir);
  EXPECT_FALSE(store.tornTailAtOpen());
  EXPECT_EQ(store.state().applications.size(), 1u);
}

TEST(StateStoreFileTest, CompactsWhenTheLogOutgrowsTheLiveRecords) {
  TempDir temp;
  StateStore store(temp.path().string());
  store.compactAfter = 10;
  for (int i = 0; i < 25; ++i) {
    store.append({StoreRecord::ofCounters(counters(2 + i)),
                  StoreRecord::ofApplication(application(1, i % 2 ? "RUNNING" : "ACCEPTED"))});
  }
  EXPECT_GE(store.compactions(), 2u);
  EXPECT_LE(store.recordsInLog(), 12u);
  const ReplayResult result = replay(readAll(store.logPath()), store.logPath());
  EXPECT_EQ(result.state.counters, counters(26));
  EXPECT_EQ(result.state.applications.at(application(1).id).state, "ACCEPTED");
  EXPECT_FALSE(fs::exists(store.logPath() + ".tmp"));
}

TEST(StateStoreFileTest, ACorruptStoreFailsToOpen) {
  TempDir temp;
  {
    std::ofstream out(temp.path() / kStateLogName);
    out << "tide-rm-state 9\n";
  }
  try {
    StateStore store(temp.path().string());
    FAIL() << "opened a future-version store";
  } catch (const StateStoreError& error) {
    EXPECT_THAT(error.what(), HasSubstr((temp.path() / kStateLogName).string()));
  }
}

// ---------------------------------------------------------------------------------------------
// ClusterState's side: what it records, and what it makes of it after a restart.

class RecoveryTest : public ::testing::Test {
 protected:
  std::unique_ptr<ClusterState> makeState(uint64_t seed) {
    ClusterStateOptions options;
    options.clusterTimestamp = 1700000000000 + static_cast<int64_t>(seed);
    options.placementSeed = seed;
    options.stateStore = true;
    auto state = std::make_unique<ClusterState>(options, clock_, seededSecretGenerator(seed));
    state->setRmAddress("http://127.0.0.1:8088");
    return state;
  }

  // A node manager on 127.0.0.1:9000 (4 GB, 4 cores), ready for containers.
  static void addReadyNode(ClusterState& state) {
    const auto node = state.registerNode({"127.0.0.1", 9000, Resource{4096, 4}});
    state.nodeHeartbeat(node.nodeId, {});
  }

  // The application `appId` with an AM of 512 MB and one core running "run-am".
  static rest::ApplicationSubmission amSubmission(const std::string& appId) {
    rest::ApplicationSubmission submission;
    submission.applicationId = appId;
    submission.command = "run-am";
    submission.resource = Resource{512, 1};
    return submission;
  }

  // What the REST layer does after each call: write the queued records.
  void persist(ClusterState& state) {
    for (const StoreRecord& record : state.takeStoreRecords()) applyRecord(stored_, record);
  }

  ManualClock clock_{1000};
  StoredState stored_;
};

TEST_F(RecoveryTest, ARestartedStateKeepsApplicationsAdoptsContainersAndAsksAmsToReRegister) {
  auto first = makeState(1);
  first->recover(stored_);  // a fresh store: only the counters
  persist(*first);
  EXPECT_EQ(stored_.counters.clusterTimestamp, 1700000000001);
  EXPECT_EQ(stored_.counters.epoch, 0);

  addReadyNode(*first);
  const std::string appId = first->newApplication().applicationId;
  rest::ApplicationSubmission submission = amSubmission(appId);
  submission.applicationName = "demo";
  submission.environment = {{"TIDE_APP_SECRET", "app-secret"}};
  first->submitApplication(submission);
  persist(*first);
  ASSERT_EQ(stored_.applications.count(appId), 1u);
  EXPECT_EQ(stored_.applications.at(appId).attempts.at(0).state, "LAUNCHED");
  const Outbox outbox = first->takeOutbox();
  ASSERT_EQ(outbox.launches.size(), 1u);
  const std::string amContainer = outbox.launches[0].request.containerId;
  const std::string attemptId = outbox.launches[0].request.environment.at("TIDE_APP_ATTEMPT_ID");
  const std::string token = outbox.launches[0].request.environment.at("TIDE_AM_TOKEN");
  first->registerApplicationMaster(attemptId, {"127.0.0.1", 4040, "http://am"});
  persist(*first);
  EXPECT_EQ(stored_.applications.at(appId).attempts.at(0).state, "REGISTERED");
  rest::AllocateRequest ask;
  ask.asks.push_back({1, Resource{1024, 1}, 1, "*", true});
  const rest::AllocateResponse granted = first->allocate(attemptId, ask);
  ASSERT_EQ(granted.allocatedContainers.size(), 1u);
  const std::string executor = granted.allocatedContainers[0].id;
  persist(*first);  // an allocate that changes no application writes nothing
  first.reset();    // kill -9

  auto second = makeState(2);
  second->recover(stored_);
  persist(*second);
  EXPECT_EQ(second->epoch(), 1);
  EXPECT_EQ(stored_.counters.epoch, 1);
  EXPECT_EQ(stored_.counters.clusterTimestamp, 1700000000001);  // ids stay unique
  EXPECT_EQ(second->applicationReport(appId).state, "RUNNING");
  EXPECT_EQ(second->amToken(attemptId), token);
  EXPECT_EQ(second->applicationSecret(appId), "app-secret");
  EXPECT_NE(second->newApplication().applicationId, appId);

  // The AM's next heartbeat: register again.
  second->authenticateAttempt(attemptId, token);
  rest::AllocateRequest beat;
  beat.responseId = 7;
  EXPECT_TRUE(second->allocate(attemptId, beat).reRegister);
  second->registerApplicationMaster(attemptId, {"127.0.0.1", 4040, "http://am"});
  beat.responseId = 0;
  EXPECT_FALSE(second->allocate(attemptId, beat).reRegister);

  // The node manager registers again and reports what still runs: kept, not stopped.
  const auto again = second->registerNode({"127.0.0.1", 9000, Resource{4096, 4}});
  rest::NodeHeartbeat report;
  report.containers.push_back({amContainer, "RUNNING", 0, "", Resource{512, 1}});
  report.containers.push_back({executor, "RUNNING", 0, "", Resource{1024, 1}});
  report.containers.push_back(
      {"container_e1_1700000000001_0001_01_000009", "RUNNING", 0, "", Resource{1, 1}});
  const rest::NodeHeartbeatResponse answer = second->nodeHeartbeat(again.nodeId, report);
  EXPECT_EQ(answer.containersToStop,
            std::vector<std::string>{"container_e1_1700000000001_0001_01_000009"});
  ASSERT_TRUE(second->container(amContainer).has_value());
  EXPECT_TRUE(second->container(amContainer)->amContainer);
  ASSERT_TRUE(second->container(executor).has_value());
  EXPECT_EQ(second->container(executor)->state, "RUNNING");
  EXPECT_EQ(second->metrics().allocatedMB, 1536);

  // New containers after the restart carry the epoch: no id of the first run comes back.
  beat.responseId = 1;
  beat.asks.push_back({1, Resource{1024, 1}, 1, "*", true});
  const rest::AllocateResponse more = second->allocate(attemptId, beat);
  ASSERT_EQ(more.allocatedContainers.size(), 1u);
  EXPECT_THAT(more.allocatedContainers[0].id, HasSubstr("container_e1_1700000000001_0001_01_"));

  // The executor ends: its AM hears of it as before.
  report.containers[1].state = "COMPLETE";
  report.containers[1].exitStatus = 0;
  report.containers.pop_back();
  second->nodeHeartbeat(again.nodeId, report);
  beat.responseId = 2;
  beat.asks.clear();
  const rest::AllocateResponse done = second->allocate(attemptId, beat);
  ASSERT_EQ(done.completedContainers.size(), 1u);
  EXPECT_EQ(done.completedContainers[0].containerId, executor);

  rest::FinishApplicationMasterRequest finish;
  finish.finalStatus = "SUCCEEDED";
  second->finishApplicationMaster(attemptId, finish);
  persist(*second);
  EXPECT_EQ(stored_.applications.at(appId).state, "FINISHED");
  EXPECT_EQ(stored_.applications.at(appId).finalStatus, "SUCCEEDED");
}

TEST_F(RecoveryTest, AnAmContainerThatEndedDuringTheOutageFailsItsAttempt) {
  auto first = makeState(3);
  first->recover(stored_);
  addReadyNode(*first);
  const std::string appId = first->newApplication().applicationId;
  rest::ApplicationSubmission submission = amSubmission(appId);
  submission.maxAppAttempts = 2;
  first->submitApplication(submission);
  const Outbox outbox = first->takeOutbox();
  const std::string amContainer = outbox.launches.at(0).request.containerId;
  first->registerApplicationMaster(
      outbox.launches.at(0).request.environment.at("TIDE_APP_ATTEMPT_ID"), {"h", 1, ""});
  persist(*first);
  first.reset();

  auto second = makeState(4);
  second->recover(stored_);
  const auto again = second->registerNode({"127.0.0.1", 9000, Resource{4096, 4}});
  rest::NodeHeartbeat report;
  report.containers.push_back({amContainer, "COMPLETE", 137, "killed", Resource{512, 1}});
  second->nodeHeartbeat(again.nodeId, report);
  const rest::ApplicationReport app = second->applicationReport(appId);
  EXPECT_EQ(app.state, "ACCEPTED");
  EXPECT_THAT(app.diagnostics, HasSubstr("while the resource manager was down; attempt 1 of 2"));
  EXPECT_THAT(app.currentAppAttemptId, HasSubstr("_000002"));
}

TEST_F(RecoveryTest, WithoutAStoreNothingIsRecorded) {
  ClusterStateOptions options;
  options.clusterTimestamp = 1700000000000;
  ClusterState state(options, clock_, seededSecretGenerator(1));
  state.recover(StoredState{});
  state.newApplication();
  EXPECT_TRUE(state.takeStoreRecords().empty());
}

}  // namespace
}  // namespace tide::rm
