// History after the end (issue 14 item 4): the AM's event log in history.dir, `tide history`
// serving it, `tide status APP` once the application has ended, and the RM's tracking URL
// pointing at the history. Real processes on 127.0.0.1 (tide-rm, tide-nm, tide-am,
// tide-executor, `tide history`, `tide run`, headless Chromium); every wait is a bounded poll.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "am/config.h"
#include "am/status/event_log.h"
#include "am/status/event_log_replay.h"
#include "common/child_process.h"
#include "common/config.h"
#include "deploy/history_server.h"
#include "tests/integration/am_cluster_test.h"
#include "tests/support/certificates.h"
#include "tests/support/child_processes.h"
#include "tests/support/errors.h"
#include "tests/support/headless_chromium.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;
using testing_support::readFile;

constexpr char kToken[] = "history-test-token";

std::string tide() {
  return std::string(TIDE_BIN_DIR) + "/tide";
}

// `tide history` on an ephemeral port, as a process, with the client token kToken; `conf` are
// --conf pairs, and with `caFile` it is reached over HTTPS trusting that CA (tls.certFile).
class HistoryProcess {
 public:
  HistoryProcess(const std::filesystem::path& dir, const std::filesystem::path& work,
                 const std::vector<std::string>& conf = {}, const std::string& caFile = "") {
    const std::string portFile = (work / "history.port").string();
    std::vector<std::string> argv = {"/usr/bin/env", std::string("TIDE_RM_TOKEN=") + kToken,
                                     tide(),         "history",
                                     "--port",       "0",
                                     "--port-file",  portFile,
                                     "--dir",        dir.string()};
    for (const std::string& pair : conf) argv.insert(argv.end(), {"--conf", pair});
    pid_ = children_.start(argv, (work / "history.log").string());
    EXPECT_TRUE(eventually([&] { return std::filesystem::exists(portFile); }, 30s))
        << children_.logs();
    url_ = std::string(caFile.empty() ? "http" : "https") +
           "://127.0.0.1:" + std::to_string(std::stoi(readFile(portFile)));
    rest::HttpClientOptions options;
    options.defaultHeaders = {{"Authorization", std::string("Bearer ") + kToken}};
    options.caFile = caFile;
    client_ = std::make_unique<rest::HttpClient>(url_, options);
  }
  const std::string& url() const { return url_; }
  rest::HttpClient& client() { return *client_; }
  rest::HttpResponse get(const std::string& path) { return client_->request("GET", path); }
  std::string logs() const { return children_.logs(); }

 private:
  testing_support::ChildProcesses children_;
  pid_t pid_ = 0;
  std::string url_;
  std::unique_ptr<rest::HttpClient> client_;
};

am::EventLogApplication sampleApplication(const std::string& id) {
  return {id, "appattempt_1_0001_000001", "someone", 1700000000000};
}

// A log written by the writer itself: one executor, three points, a snapshot, an end.
void writeSampleLog(const std::string& path, const std::string& id) {
  am::EventLog log(path, sampleApplication(id));
  am::AllocationHistory history;
  for (int i = 0; i < 3; ++i) history.record({i * 100, i, i, 0, 0, 3 - i, i, 0, 4});
  log.executorAdded({"e1", "127.0.0.1", "container_1", "node1", 42, 10, -1, ""});
  log.executorRemoved("e1", 250, "idle");
  am::LiveDocuments documents;
  documents.status = R"({"applicationId":")" + id + R"(","state":"RUNNING","allocation":{}})";
  documents.executors = R"({"nowMs":250,"executors":[]})";
  documents.jobs = R"({"jobs":[{"id":"job-1","name":"sample","state":"SUCCEEDED"}]})";
  documents.decisions =
      R"({"nowMs":250,"decisions":[{"atMs":5,"lastMs":5,"repeats":1,"source":"allocation",)"
      R"("action":"raise_target","target":1,"why":"w"}]})";
  ASSERT_TRUE(log.flush(history, documents, 300));
  ASSERT_TRUE(log.end(300, 1700000000300, "SUCCEEDED", ""));
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// ---- The log itself.

TEST(EventLog, ReadsBackWhatTheWriterWroteAndIsPrivateToItsOwner) {
  testing_support::TempDir dir;
  const std::string path = am::eventLogPath(dir.path().string() + "/h", "application_1_0001");
  writeSampleLog(path, "application_1_0001");
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const am::ReplayedApplication app = am::replayEventLog(path);
  EXPECT_TRUE(app.ended);
  EXPECT_EQ(app.state(), "SUCCEEDED");
  EXPECT_EQ(app.name(), "sample");
  EXPECT_EQ(app.application.user, "someone");
  ASSERT_EQ(app.executors.size(), 1u);
  EXPECT_EQ(app.executors[0].removedReason, "idle");
  EXPECT_EQ(app.history->size(), 3u);
  EXPECT_FALSE(app.tornTail);
}

// Another user of a shared history directory (/tmp/tide-history-<uid> without a HOME) may plant a
// symlink where the next application's log goes: the AM refuses it and the file it names is safe.
TEST(EventLog, ASymlinkInTheLogsPlaceIsRefusedAndWhatItNamesIsLeftAlone) {
  testing_support::TempDir dir;
  const std::string victim = dir.path().string() + "/precious";
  std::ofstream(victim) << "keep me\n";
  const std::string path = am::eventLogPath(dir.path().string(), "application_1_0003");
  std::filesystem::create_symlink(victim, path);
  try {
    writeSampleLog(path, "application_1_0003");
    ADD_FAILURE() << "the event log followed the symlink";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open the event log " + path));
  }
  EXPECT_EQ(testing_support::readFile(victim), "keep me\n");
}

TEST(EventLog, ATornLastLineIsLeftOutAndTheRestReads) {
  testing_support::TempDir dir;
  const std::string path = dir.path().string() + "/application_1_0002.jsonl";
  writeSampleLog(path, "application_1_0002");
  std::ofstream(path, std::ios::app) << R"({"type":"point","atMs":900,"tar)";
  const am::ReplayedApplication app = am::replayEventLog(path);
  EXPECT_TRUE(app.tornTail);
  EXPECT_EQ(app.state(), "SUCCEEDED");
  EXPECT_EQ(app.history->size(), 3u);
}

TEST(EventLog, ACorruptLineOrANewerVersionIsAnErrorNamingTheFileAndLine) {
  testing_support::TempDir dir;
  const std::string corrupt = dir.path().string() + "/application_1_0003.jsonl";
  writeSampleLog(corrupt, "application_1_0003");
  std::vector<std::string> text = lines(corrupt);
  text[2] = "{\"type\":\"point\",\"atMs\":";  // line 3 cut short, but more lines follow
  std::ofstream out(corrupt, std::ios::trunc);
  for (const auto& line : text) out << line << "\n";
  out.close();
  try {
    am::replayEventLog(corrupt);
    FAIL() << "read a corrupt log";
  } catch (const am::EventLogError& e) {
    EXPECT_THAT(e.what(), HasSubstr(corrupt + ":3: "));
  }

  const std::string future = dir.path().string() + "/application_1_0004.jsonl";
  std::ofstream(future) << R"({"type":"header","format":"tide-event-log","version":7,"tide":"9.0"})"
                        << "\n";
  try {
    am::replayEventLog(future);
    FAIL() << "read a log of a newer version";
  } catch (const am::EventLogError& e) {
    EXPECT_THAT(e.what(), HasSubstr(future + ":1: event log version 7 is not one this tide reads"));
  }
}

TEST(EventLog, StaysBoundedByCompactingWhatAReaderWouldMakeOfIt) {
  testing_support::TempDir dir;
  const std::string path = dir.path().string() + "/application_1_0005.jsonl";
  constexpr uint64_t kCompactAt = 64 << 10;
  am::EventLog log(path, sampleApplication("application_1_0005"), kCompactAt, 0);
  am::AllocationHistory history(200);  // the AM's history is bounded: so is what is kept of it
  am::LiveDocuments documents;
  documents.executors = R"({"nowMs":0,"executors":[]})";
  documents.jobs = R"({"jobs":[]})";
  documents.decisions = R"({"nowMs":0,"decisions":[]})";
  uint64_t largest = 0;
  for (int i = 0; i < 5000; ++i) {
    history.record({i, i % 7, 0, 0, 0, i, 0, 0, 10});
    if (i % 50 == 0) log.executorAdded({"e" + std::to_string(i), "h", "c", "n", i, i, -1, ""});
    documents.status = R"({"applicationId":"application_1_0005","uptimeMs":)" + std::to_string(i) +
                       R"(,"allocation":{}})";
    ASSERT_TRUE(log.flush(history, documents, i)) << log.error();
    largest = std::max<uint64_t>(largest, std::filesystem::file_size(path));
  }
  EXPECT_GT(log.compactions(), 0);
  EXPECT_LT(largest, 2 * kCompactAt);
  const am::ReplayedApplication app = am::replayEventLog(path);
  EXPECT_EQ(app.executors.size(), 100u);  // every lifetime survives compaction
  EXPECT_THAT(app.last.status, HasSubstr("\"uptimeMs\":4999"));
  EXPECT_FALSE(app.ended);
  EXPECT_EQ(app.state(), "INCOMPLETE");
}

// Spark's event log carries the resource profile on SparkListenerStageSubmitted (StageInfo's
// resourceProfileId) and SparkListenerExecutorAdded (ExecutorInfo's resourceProfileId); the
// history server replays them. So does tide's, through compaction too.
TEST(EventLog, StagesAndExecutorsKeepTheirResourceProfileThroughReplayAndCompaction) {
  testing_support::TempDir dir;
  for (const uint64_t compactAt : {am::EventLog::kCompactAtBytes, uint64_t{1}}) {
    const std::string id = compactAt == 1 ? "application_1_0007" : "application_1_0006";
    const std::string path = dir.path().string() + "/" + id + ".jsonl";
    {
      am::EventLog log(path, sampleApplication(id), compactAt, 0);
      am::AllocationHistory history;
      log.stageSubmitted({"job-1/narrow", 4, 1, 0, 1, 256, 5});
      log.stageSubmitted({"job-1/wide", 4, 2, 1, 4, 2048, 6});
      log.executorAdded({"e1", "h", "c1", "n1", 1, 10, -1, "", 0, 1, 256});
      log.executorAdded({"e2", "h", "c2", "n1", 2, 11, -1, "", 1, 4, 2048});
      am::LiveDocuments documents;
      documents.status = R"({"applicationId":")" + id + R"(","allocation":{}})";
      documents.executors = R"({"nowMs":20,"executors":[{"id":"e1","cores":1}]})";
      documents.jobs = R"({"jobs":[{"id":"job-1","name":"shapes","stages":[)"
                       R"({"id":"narrow","state":"SUCCEEDED"},{"id":"wide","state":"RUNNING"}]}]})";
      documents.decisions = R"({"nowMs":20,"decisions":[]})";
      ASSERT_TRUE(log.flush(history, documents, 20)) << log.error();
      // A re-run of the wide stage (lost outputs): its latest submission is what replays.
      log.stageSubmitted({"job-1/wide", 1, 2, 1, 4, 2048, 30});
      ASSERT_TRUE(log.flush(history, documents, 30)) << log.error();
      if (compactAt == 1) {
        EXPECT_GT(log.compactions(), 0);
      }
    }
    const am::ReplayedApplication app = am::replayEventLog(path);
    ASSERT_EQ(app.stages.size(), 2u) << path;
    EXPECT_EQ(app.stages[0].stageId, "job-1/narrow");
    EXPECT_EQ(app.stages[0].resourceProfileId, 0);
    EXPECT_EQ(app.stages[1].resourceProfileId, 1);
    EXPECT_EQ(app.stages[1].executorCores, 4);
    EXPECT_EQ(app.stages[1].executorMemoryMb, 2048);
    EXPECT_EQ(app.stages[1].numTasks, 1) << "the re-run's submission";
    ASSERT_EQ(app.executors.size(), 2u);
    EXPECT_EQ(app.executors[1].resourceProfileId, 1);

    // The history's documents: each executor with its own profile and shape (not the default
    // executors' cores for all), each stage with its profile.
    const rapidjson::Document executors = rest::parseJson(am::replayedExecutorsDocument(app));
    const auto& listed = executors["executors"];
    ASSERT_EQ(listed.Size(), 2u);
    EXPECT_EQ(listed[0]["resourceProfileId"].GetInt(), 0);
    EXPECT_EQ(listed[0]["cores"].GetInt(), 1);
    EXPECT_EQ(listed[1]["resourceProfileId"].GetInt(), 1);
    EXPECT_EQ(listed[1]["cores"].GetInt(), 4);
    EXPECT_EQ(listed[1]["memoryMb"].GetInt64(), 2048);
    const rapidjson::Document jobs = rest::parseJson(am::replayedJobsDocument(app));
    const auto& stages = jobs["jobs"][0]["stages"];
    EXPECT_EQ(stages[0]["resourceProfileId"].GetInt(), 0);
    EXPECT_EQ(stages[1]["resourceProfileId"].GetInt(), 1);
  }
}

// An executorAdded record of a tide before profiles (no resourceProfileId, cores, memoryMb)
// reads as the default profile's, with the cores the last executors document showed.
TEST(EventLog, AnExecutorRecordWithoutAProfileReadsAsTheDefaultOne) {
  std::istringstream in(
      R"({"type":"header","format":"tide-event-log","version":1,"tide":"0.1.0"})"
      "\n"
      R"({"type":"application","applicationId":"application_1_0008","attemptId":"a",)"
      R"("startedAtEpochMs":1})"
      "\n"
      R"({"type":"executorAdded","id":"e1","atMs":3})"
      "\n");
  const am::ReplayedApplication app = am::replayEventLog(in, "old.jsonl");
  ASSERT_EQ(app.executors.size(), 1u);
  EXPECT_EQ(app.executors[0].resourceProfileId, 0);
  const rapidjson::Document executors = rest::parseJson(am::replayedExecutorsDocument(app));
  EXPECT_EQ(executors["executors"][0]["resourceProfileId"].GetInt(), 0);
  EXPECT_FALSE(executors["executors"][0].HasMember("memoryMb"));
  EXPECT_EQ(rest::parseJson(am::replayedJobsDocument(app))["jobs"].Size(), 0u);
}

// ---- The keys.

TEST(HistoryKeys, TheDirDefaultsUnderHomeNoneTurnsItOffAndBadValuesNameTheKey) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  Properties props;
  EXPECT_EQ(am::historyDirOf(props), std::string(home) + "/.tide/history");
  props.set("history.dir", "none");
  EXPECT_EQ(am::historyDirOf(props), "");
  props.set("history.dir", "relative/dir");
  const std::string relative =
      testing_support::expectedMessageOf<ConfigError>([&] { am::historyDirOf(props); });
  EXPECT_THAT(relative, HasSubstr("history.dir"));
  EXPECT_THAT(relative, HasSubstr("expected an absolute path or 'none'"));
  Properties address;
  address.set("history.address", "history-host:18080");
  std::vector<std::string> warnings;
  const std::string noScheme = testing_support::expectedMessageOf<ConfigError>(
      [&] { am::AmConfig::fromProperties(address, &warnings); });
  EXPECT_THAT(noScheme, HasSubstr("history.address"));
  EXPECT_THAT(noScheme, HasSubstr("http(s)://HOST:PORT"));
}

// ---- `tide history` with logs of every kind.

TEST(TideHistory, ListsTheReadableLogsAndNamesTheFileAndLineOfTheOthers) {
  testing_support::TempDir dir;
  const std::filesystem::path logs = dir.path() / "h";
  writeSampleLog(am::eventLogPath(logs.string(), "application_1_0001"), "application_1_0001");
  std::ofstream(logs / "application_1_0002.jsonl")
      << R"({"type":"header","format":"tide-event-log","version":2})"
      << "\n";
  std::ofstream(logs / "application_1_0003.jsonl") << "not json\n";
  HistoryProcess history(logs, dir.path());

  const auto list = history.get("/api/v1/applications");
  ASSERT_EQ(list.status, 200) << list.body << history.logs();
  const rapidjson::Document doc = rest::parseJson(list.body);
  ASSERT_EQ(doc["applications"].Size(), 1u) << list.body;
  EXPECT_STREQ(doc["applications"][0]["id"].GetString(), "application_1_0001");
  EXPECT_STREQ(doc["applications"][0]["state"].GetString(), "SUCCEEDED");
  ASSERT_EQ(doc["errors"].Size(), 2u) << list.body;
  EXPECT_THAT(list.body, HasSubstr("application_1_0002.jsonl:1: event log version 2"));
  EXPECT_THAT(list.body, HasSubstr("application_1_0003.jsonl:1: "));

  // The broken one's own API says why; the good one serves its documents.
  const auto broken = history.get("/history/application_1_0003/api/v1/status");
  EXPECT_EQ(broken.status, 500);
  EXPECT_THAT(broken.body, HasSubstr("application_1_0003.jsonl:1:"));
  const auto status = history.get("/history/application_1_0001/api/v1/status");
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_STREQ(rest::parseJson(status.body)["state"].GetString(), "SUCCEEDED");
  const auto job = history.get("/history/application_1_0001/api/v1/jobs/job-1");
  EXPECT_EQ(job.status, 200) << job.body;
  EXPECT_EQ(history.get("/history/application_1_0001/api/v1/jobs/job-9").status, 404);
}

TEST(TideHistory, ReadsNeedTheTokenAndHostileIdsAndWritesGetA4xx) {
  testing_support::TempDir dir;
  const std::filesystem::path logs = dir.path() / "h";
  writeSampleLog(am::eventLogPath(logs.string(), "application_1_0001"), "application_1_0001");
  std::ofstream(dir.path() / "secret.jsonl") << "outside history.dir\n";
  HistoryProcess history(logs, dir.path());

  rest::HttpClient anonymous(history.url(), {});
  EXPECT_EQ(anonymous.request("GET", "/api/v1/applications").status, 401);
  EXPECT_EQ(anonymous.request("GET", "/history/application_1_0001/api/v1/status").status, 401);
  // The pages hold no data: they read the API with the token given in their address.
  EXPECT_EQ(anonymous.request("GET", "/").status, 200);
  EXPECT_EQ(anonymous.request("GET", "/history/application_1_0001/").status, 200);

  for (const std::string hostile :
       {"/history/..%2Fsecret/api/v1/status", "/history/.hidden/api/v1/status",
        "/history/a%20b/api/v1/status"}) {
    const auto response = history.get(hostile);
    EXPECT_GE(response.status, 400) << hostile;
    EXPECT_LT(response.status, 500) << hostile << ": " << response.body;
    EXPECT_THAT(response.body, ::testing::Not(HasSubstr("outside history.dir")));
  }
  EXPECT_THAT(history.get("/history/.hidden/api/v1/status").body, HasSubstr("bad application id"));
  EXPECT_EQ(history.get("/history/application_1_0404/api/v1/status").status, 404);
  EXPECT_EQ(history.get("/history/application_1_0001/api/v1/allocation/decisions?limit=x").status,
            400);
  const auto put =
      history.client().request("PUT", "/history/application_1_0001/api/v1/allocation/bounds",
                               R"({"max": 3})", {{"Content-Type", "application/json"}});
  EXPECT_EQ(put.status, 405) << put.body;
}

// TLS is cluster-wide (docs/security.md): given tls.certFile and tls.keyFile, `tide history`
// serves HTTPS only, as tide-rm and the AM do.
TEST(TideHistory, WithACertificateItServesHttpsOnly) {
  testing_support::TempDir dir;
  const std::filesystem::path logs = dir.path() / "h";
  writeSampleLog(am::eventLogPath(logs.string(), "application_1_0001"), "application_1_0001");
  std::filesystem::create_directories(dir.path() / "tls");
  const testing_support::TestCertificates certificates(dir.path() / "tls");
  HistoryProcess history(
      logs, dir.path(),
      {"tls.certFile=" + certificates.certFile(), "tls.keyFile=" + certificates.keyFile()},
      certificates.caFile());
  EXPECT_TRUE(eventually(
      [&] { return history.logs().find("at https://127.0.0.1:") != std::string::npos; }, 10s))
      << history.logs();

  const auto status = history.get("/history/application_1_0001/api/v1/status");
  ASSERT_EQ(status.status, 200) << status.body << history.logs();
  EXPECT_STREQ(rest::parseJson(status.body)["state"].GetString(), "SUCCEEDED");
  EXPECT_EQ(history.get("/history/application_1_0001/").status, 200);

  rest::HttpClientOptions options;
  options.retry.maxAttempts = 1;
  options.requestTimeout = 10s;
  const std::string plain = "http://" + history.url().substr(std::string("https://").size());
  try {
    const rest::HttpResponse answer = rest::HttpClient(plain, options).request("GET", "/");
    ADD_FAILURE() << "plain HTTP answered with HTTP " << answer.status;
  } catch (const rest::HttpError& error) {
    EXPECT_TRUE(error.isTransportError()) << error.what();
  }
}

// ---- With an application on a real cluster.

class HistoryOnACluster : public testing_support::AmClusterTest {
 protected:
  std::filesystem::path historyDir() const { return dir.path() / "history"; }
};

constexpr char kJob[] = R"({"name": "counted", "stages": [
    {"id": "work", "tasks": 6, "command": ["sh", "-c", "sleep 0.3"]}]})";

TEST_F(HistoryOnACluster, AfterTheEndTheTrackingUrlStatusAndPageComeFromTheHistory) {
  const std::string chromium =
      testing_support::chromiumForTest("the history page test needs a real browser");
  HistoryProcess history(historyDir(), dir.path());
  startCluster(1, 4);
  submit(kJob,
         {{"history.dir", historyDir().string()},
          {"history.address", history.url() + "/"},
          {"dynamicAllocation.maxExecutors", "2"}},
         false);
  // While it runs the tracking URL is the AM's own page.
  EXPECT_THAT(trackingUrl, ::testing::Not(HasSubstr("/history/")));
  // `tide status --watch` follows it to its end, and ends by printing its final status.
  const std::string watchLog = (dir.path() / "watch.log").string();
  std::unique_ptr<ChildProcess> watch;
  {
    ChildSpec spec;
    spec.argv = {tide(),     "status",
                 appId,      "--watch",
                 "--master", cluster->rmAddress(),
                 "--conf",   "history.dir=" + historyDir().string()};
    spec.environment = {{"TIDE_RM_TOKEN", cluster->adminToken()}};
    spec.logPath = watchLog;
    watch = std::make_unique<ChildProcess>(spec);
  }
  const rest::ApplicationReport end = waitForEnd(90s);
  ASSERT_EQ(end.finalStatus, "SUCCEEDED") << end.diagnostics;

  const auto watched = watch->waitFor(60s);
  ASSERT_TRUE(watched.has_value()) << readFile(watchLog);
  EXPECT_EQ(*watched, 0) << readFile(watchLog);
  EXPECT_THAT(readFile(watchLog), HasSubstr("ended      SUCCEEDED")) << readFile(watchLog);

  // 1. The event log is there and parses.
  const std::string logPath = am::eventLogPath(historyDir().string(), appId);
  const am::ReplayedApplication replayed = am::replayEventLog(logPath);
  EXPECT_TRUE(replayed.ended);
  EXPECT_EQ(replayed.finalStatus, "SUCCEEDED");
  EXPECT_GE(replayed.executors.size(), 1u);

  // 2. The RM's tracking URL now points at the history.
  EXPECT_EQ(end.trackingUrl, history.url() + "/history/" + appId);

  // 3. `tide history` serves the application's API with its final status, executors, decisions.
  const std::string base = "/history/" + appId + "/api/v1/";
  const rapidjson::Document status = history.client().getJson(base + "status");
  EXPECT_STREQ(status["state"].GetString(), "SUCCEEDED");
  EXPECT_STREQ(status["jobs"][0]["state"].GetString(), "SUCCEEDED");
  EXPECT_EQ(status["tasks"]["succeeded"].GetInt64(), 6);
  const rapidjson::Document executors = history.client().getJson(base + "executors");
  EXPECT_EQ(executors["executors"].Size(), replayed.executors.size());
  EXPECT_STREQ(executors["executors"][0]["state"].GetString(), "REMOVED");
  EXPECT_GE(executors["executors"][0]["cores"].GetInt(), 1);
  const rapidjson::Document decisions = history.client().getJson(base + "allocation/decisions");
  EXPECT_GE(decisions["decisions"].Size(), 1u);
  EXPECT_GE(history.client().getJson(base + "allocation/history")["points"].Size(), 2u);
  EXPECT_EQ(history.client().getJson(base + "jobs")["jobs"][0]["stages"][0]["succeeded"].GetInt64(),
            6);

  // 4. `tide status APP` prints the final status (from the history; from the RM without one).
  const std::string master = cluster->rmAddress();
  auto tideStatus = [&](const std::string& historyConf, const std::string& log) {
    return testing_support::runCommand(
        {"/usr/bin/env", "TIDE_RM_TOKEN=" + cluster->adminToken(), tide(), "status", appId,
         "--master", master, "--conf", "history.dir=" + historyConf},
        (dir.path() / log).string(), 60s);
  };
  const auto fromHistory = tideStatus(historyDir().string(), "status-history.log");
  EXPECT_EQ(fromHistory.status, 0) << fromHistory.output;
  EXPECT_THAT(fromHistory.output, HasSubstr(appId));
  EXPECT_THAT(fromHistory.output, HasSubstr("ended      SUCCEEDED"));
  EXPECT_THAT(fromHistory.output, HasSubstr("job        job-1 counted  SUCCEEDED  6/6 tasks"));
  const auto fromRm = tideStatus("none", "status-rm.log");
  EXPECT_EQ(fromRm.status, 0) << fromRm.output;
  EXPECT_THAT(fromRm.output, HasSubstr(appId + "  FINISHED (SUCCEEDED)"));
  EXPECT_THAT(fromRm.output, HasSubstr("no event log"));

  // 5. The page at the tracking URL renders the application in a real browser.
  if (chromium.empty()) return;
  const std::string domFile = (dir.path() / "history-dom.html").string();
  testing_support::runHeadlessChromium(chromium, dir.path(), "history", {"--dump-dom"},
                                       end.trackingUrl + "?token=" + kToken, 5000, domFile);
  const std::string dom = readFile(domFile);
  EXPECT_THAT(dom, HasSubstr(appId)) << dom.substr(0, 3000);
  EXPECT_THAT(dom, HasSubstr("succeeded"));
  EXPECT_TRUE(std::regex_search(dom, std::regex(R"re(data-executor-id="e1")re")))
      << dom.substr(0, 4000);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"re(<span id="points">(\d+)</span>)re")));
  EXPECT_GT(std::stoi(m[1]), 0);
  // Nothing can change an ended application: no bounds form (its PUT would get 405), no log
  // links (the AM served them); its executors are what it had, not "N live".
  EXPECT_THAT(dom, ::testing::Not(HasSubstr("id=\"boundsForm\""))) << dom.substr(0, 4000);
  EXPECT_THAT(dom, ::testing::Not(HasSubstr("data-log=")));
  EXPECT_THAT(dom, HasSubstr("ended · as its event log last recorded it"));
  ASSERT_TRUE(std::regex_search(
      dom, m, std::regex(R"re(id="execCount">0 live at the end · (\d+) ran · peak (\d+) live<)re")))
      << dom.substr(0, 4000);
  EXPECT_EQ(std::stoul(m[1]), replayed.executors.size() + replayed.executorsDropped);
  EXPECT_GE(std::stoi(m[2]), 1);
  // The timeline draws every executor as it was: each bar ends where it was removed.
  EXPECT_TRUE(std::regex_search(dom, std::regex(R"re(data-executor-id="e1" data-ended="true")re")))
      << dom.substr(0, 4000);
  EXPECT_FALSE(std::regex_search(dom, std::regex(R"re(data-ended="false")re")));
  // And the list at / shows it.
  const std::string listFile = (dir.path() / "history-list.html").string();
  testing_support::runHeadlessChromium(chromium, dir.path(), "history-list", {"--dump-dom"},
                                       history.url() + "/?token=" + kToken, 5000, listFile);
  EXPECT_THAT(readFile(listFile), HasSubstr("data-app-id=\"" + appId + "\""));
}

constexpr char kSleepingJob[] = R"({"name": "sleeper", "stages": [
    {"id": "s", "tasks": 2, "command": ["sleep", "120"]}]})";

TEST_F(HistoryOnACluster, AKilledAmLeavesALogThatLoadsUpToItsLastEvent) {
  startCluster(1, 4);
  submit(kSleepingJob, {{"history.dir", historyDir().string()}}, false);
  const std::string logPath = am::eventLogPath(historyDir().string(), appId);
  // Once the log has the running executors and a snapshot of the job...
  ASSERT_TRUE(eventually(
      [&] {
        try {
          const am::ReplayedApplication app = am::replayEventLog(logPath);
          return !app.executors.empty() &&
                 app.last.status.find("\"running\":2") != std::string::npos;
        } catch (const std::exception&) {
          return false;
        }
      },
      60s))
      << amLog();
  // ... the AM is killed (-9): it writes nothing more.
  const pid_t amPid = testing_support::findProcess("tide-am", "TIDE_APPLICATION_ID", appId);
  ASSERT_GT(amPid, 0);
  ASSERT_EQ(::kill(amPid, SIGKILL), 0);
  ASSERT_TRUE(eventually([&] { return testing_support::processGone(amPid); }, 30s));
  // A write the kill cut short, at the end.
  std::ofstream(logPath, std::ios::app) << R"({"type":"snapshot","atMs":99999,"status":{"appl)";

  const am::ReplayedApplication app = am::replayEventLog(logPath);
  EXPECT_FALSE(app.ended);
  EXPECT_TRUE(app.tornTail);
  EXPECT_EQ(app.state(), "INCOMPLETE");
  EXPECT_GE(app.executors.size(), 1u);
  EXPECT_THAT(app.last.jobs, HasSubstr("\"name\":\"sleeper\""));
  HistoryProcess history(historyDir(), dir.path());
  const rapidjson::Document status =
      history.client().getJson("/history/" + appId + "/api/v1/status");
  EXPECT_STREQ(status["state"].GetString(), "INCOMPLETE");
  EXPECT_TRUE(status["tornTail"].GetBool());
  EXPECT_EQ(status["tasks"]["running"].GetInt64(), 2);
}

// ---- `tide run`, then its history.

TEST(TideRunHistory, ARunLeavesAHistoryThatStatusAndHistoryShowAfterwards) {
  testing_support::TempDir dir;
  const std::string historyDir = (dir.path() / "history").string();
  const std::string job = dir.writeFile(
      "job.json", R"({"name": "quick", "stages": [{"id": "s", "tasks": 3, "builtin": "noop"}]})");
  const auto run = testing_support::runCommand(
      {tide(), "run", job, "--conf", "history.dir=" + historyDir, "--conf", "nm.cores=2", "--conf",
       "nm.memory=2g", "--conf", "executor.memory=256m", "--conf", "am.memory=256m"},
      (dir.path() / "run.log").string(), 120s);
  ASSERT_EQ(run.status, 0) << run.output;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(run.output, m, std::regex(R"re(tide: (application_[0-9_]+) FINISHED)re")))
      << run.output;
  const std::string appId = m[1];
  const am::ReplayedApplication app = am::replayEventLog(am::eventLogPath(historyDir, appId));
  EXPECT_EQ(app.state(), "SUCCEEDED");
  EXPECT_EQ(app.name(), "quick");

  // Its cluster has gone with it; `tide status APP` still answers, from the history.
  const auto status =
      testing_support::runCommand({tide(), "status", appId, "--conf", "history.dir=" + historyDir},
                                  (dir.path() / "status.log").string(), 60s);
  EXPECT_EQ(status.status, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr("ended      SUCCEEDED"));
  EXPECT_THAT(status.output, HasSubstr("job        job-1 quick  SUCCEEDED  3/3 tasks"));
}

}  // namespace
}  // namespace tide
