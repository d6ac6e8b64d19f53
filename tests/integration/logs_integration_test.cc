// Issue 14.3, logs like YARN's: the stdout and stderr of every container and task attempt are
// kept after the application ends (nm.logDir), served by tide-nm to the cluster's client token
// (GET /api/v1/logs/...), and printed by `tide logs APP` from every node, or, after a `tide
// run`, from the directory it kept them in. Real tide-rm, tide-nm, tide-am and tide-executor.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "am_cluster_test.h"
#include "rest/messages/credentials.h"
#include "tests/support/headless_chromium.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;
using testing_support::readFile;
namespace fs = std::filesystem;

// Task 1 of stage "bad" fails every attempt, saying so on stderr; task 0 succeeds.
constexpr char kFailingJob[] = R"({"name": "logs", "stages": [{"id": "bad", "tasks": 2,
    "command": ["sh", "-c", "echo out-{task}-$TIDE_ATTEMPT; if [ {task} = 1 ]; then echo \"task {task} attempt $TIDE_ATTEMPT failed\" >&2; exit 3; fi"]}]})";

testing_support::CommandResult tide(const testing_support::TempDir& dir,
                                    std::vector<std::string> args, const std::string& cwd,
                                    const std::string& logName) {
  args.insert(args.begin(), std::string(TIDE_BIN_DIR) + "/tide");
  const std::string log = (dir.path() / logName).string();
  fs::remove(log);
  return testing_support::runCommand(args, log, 120s, cwd);
}

// The "Container: ... on NODE" header lines of `tide logs` output.
std::vector<std::string> containerHeaders(const std::string& output) {
  std::vector<std::string> headers;
  const std::regex header("(^|\n)(Container: [^\n]*)");
  for (std::sregex_iterator it(output.begin(), output.end(), header), end; it != end; ++it) {
    headers.push_back((*it)[2]);
  }
  return headers;
}

TEST(TideLogs, AfterTideRunEndsTheFailedTasksStderrIsPrintedFromTheKeptLogs) {
  testing_support::TempDir dir;
  const std::string cwd = (dir.path() / "here").string();
  fs::create_directories(cwd);
  const std::string job = dir.writeFile("job.json", kFailingJob);
  const auto run =
      tide(dir,
           {"run", job, "--conf", "task.maxFailures=2", "--conf", "nm.cores=2", "--conf",
            "nm.memory=2g", "--conf", "executor.memory=256m", "--conf", "am.memory=256m"},
           cwd, "run.log");
  ASSERT_NE(run.status, 0) << run.output;  // the job failed: task 1 failed twice
  std::smatch match;
  ASSERT_TRUE(std::regex_search(run.output, match, std::regex("submitted (application_[0-9_]+)")))
      << run.output;
  const std::string appId = match[1];
  // The cluster is gone (no --work-dir, and its work dir may be removed); the logs are here.
  EXPECT_TRUE(fs::is_directory(cwd + "/.tide/logs/" + appId)) << run.output;
  // Only this user may read them.
  EXPECT_EQ(
      fs::status(cwd + "/.tide").permissions() & (fs::perms::group_all | fs::perms::others_all),
      fs::perms::none);
  EXPECT_THAT(run.output, HasSubstr("`tide logs " + appId + "` in this directory"));

  const auto task = tide(dir, {"logs", appId, "--task", "bad:1"}, cwd, "task.log");
  EXPECT_EQ(task.status, 0) << task.output;
  EXPECT_THAT(task.output, HasSubstr("LogType: tasks/bad-1-0/stderr\n"));
  EXPECT_THAT(task.output, HasSubstr("task 1 attempt 0 failed\n"));
  EXPECT_THAT(task.output, HasSubstr("task 1 attempt 1 failed\n"));
  EXPECT_THAT(task.output, HasSubstr("out-1-0\n"));  // its stdout too
  EXPECT_THAT(task.output, Not(HasSubstr("tasks/bad-0-")));
  EXPECT_THAT(task.output, Not(HasSubstr("LogType: stderr\n")));  // no container's own log

  const auto attempt =
      tide(dir, {"logs", appId, "--task", "bad:1", "--attempt", "1"}, cwd, "attempt.log");
  EXPECT_EQ(attempt.status, 0) << attempt.output;
  EXPECT_THAT(attempt.output, HasSubstr("task 1 attempt 1 failed\n"));
  EXPECT_THAT(attempt.output, Not(HasSubstr("attempt 0 failed")));

  const auto executor = tide(dir, {"logs", appId, "--executor", "e1"}, cwd, "executor.log");
  EXPECT_EQ(executor.status, 0) << executor.output;
  const std::vector<std::string> headers = containerHeaders(executor.output);
  ASSERT_FALSE(headers.empty()) << executor.output;
  for (const std::string& header : headers) EXPECT_THAT(header, HasSubstr("(executor e1)"));
  EXPECT_THAT(executor.output, HasSubstr("LogType: stderr\n"));  // the executor's own log

  // Everything: the AM's container too, which is no executor.
  const auto all = tide(dir, {"logs", appId}, cwd, "all.log");
  EXPECT_EQ(all.status, 0) << all.output;
  EXPECT_GT(containerHeaders(all.output).size(), headers.size()) << all.output;

  const auto none = tide(dir, {"logs", appId, "--task", "nosuch:0"}, cwd, "none.log");
  EXPECT_EQ(none.status, 1);
  EXPECT_THAT(none.output, HasSubstr("no log of " + appId));
  const auto badTask = tide(dir, {"logs", appId, "--task", "bad"}, cwd, "badtask.log");
  EXPECT_EQ(badTask.status, 2);
  EXPECT_THAT(badTask.output, HasSubstr("--task bad: expected STAGE:INDEX"));
  const auto help = tide(dir, {"logs", "--help"}, cwd, "help.log");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.output, HasSubstr("--task STAGE:INDEX"));
}

class LogsIntegrationTest : public testing_support::AmClusterTest {
 protected:
  // The node managers' log dirs (nm.logDir's default, <nm.workDir>/logs).
  fs::path nodeLogDir(size_t node) const {
    return dir.path() / "cluster" / ("nm" + std::to_string(node)) / "work" / "logs";
  }
  std::string nodeUrl(size_t node) const {
    return "http://127.0.0.1:" + std::to_string(cluster->nodeManagerPort(node));
  }
  rest::HttpResponse nodeGet(size_t node, const std::string& path,
                             const std::optional<std::string>& token) {
    rest::HttpClientOptions options;
    options.retry.maxAttempts = 1;
    if (token) options.defaultHeaders = {{"Authorization", "Bearer " + *token}};
    return rest::HttpClient(nodeUrl(node), options).request("GET", path);
  }
  std::string clientToken() const { return rest::clientTokenOf(cluster->adminToken()); }

  // Runs the failing job to its end.
  void runFailingJob() {
    submit(kFailingJob, {{"task.maxFailures", "2"}, {"executor.cores", "1"}}, false);
    const rest::ApplicationReport report = waitForEnd(90s);
    ASSERT_EQ(report.finalStatus, "FAILED");
  }
};

TEST_F(LogsIntegrationTest, NodeManagersServeTheLogsToTheClientTokenOnlyAndInsideTheirDirs) {
  // An application's logs untouched for 30 days: deleted when tide-nm starts (nm.logRetention
  // 7d); one of yesterday stays.
  const int64_t nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const std::vector<std::pair<std::string, int>> kept = {{"application_1_0001", 30},
                                                         {"application_1_0002", 1}};
  for (const auto& [app, ageDays] : kept) {
    const fs::path stderrFile = nodeLogDir(0) / app / "container_1" / "stderr";
    fs::create_directories(stderrFile.parent_path());
    testing_support::writeFile(stderrFile, "old\n");
    const struct timespec when = {static_cast<time_t>(nowMs / 1000 - ageDays * 86400), 0};
    const struct timespec times[2] = {when, when};
    for (const fs::path& path : {stderrFile, stderrFile.parent_path(), nodeLogDir(0) / app}) {
      ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    }
  }
  startCluster(/*nodes=*/2, /*coresPerNode=*/3);
  // A log dir tide-nm creates is private to its user.
  EXPECT_EQ(fs::status(nodeLogDir(1)).permissions(), fs::perms::owner_all);
  EXPECT_FALSE(fs::exists(nodeLogDir(0) / "application_1_0001"));
  EXPECT_TRUE(fs::exists(nodeLogDir(0) / "application_1_0002"));

  runFailingJob();
  // The node that ran the failed task's first attempt, and that container.
  size_t node = 0;
  std::string container;
  std::error_code ec;
  for (size_t i = 0; i < 2 && container.empty(); ++i) {
    for (const auto& entry : fs::directory_iterator(nodeLogDir(i) / appId, ec)) {
      if (fs::exists(entry.path() / "tasks" / "bad-1-0" / "stderr")) {
        node = i;
        container = entry.path().filename().string();
      }
    }
  }
  ASSERT_FALSE(container.empty()) << "no node kept tasks/bad-1-0/stderr";
  const std::string file = "/api/v1/logs/" + appId + "/" + container + "/";

  // No credential, or not the client token: 401 naming what is needed.
  const rest::HttpResponse anonymous = nodeGet(node, "/api/v1/logs/" + appId, std::nullopt);
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_THAT(anonymous.body, HasSubstr("client token"));
  EXPECT_EQ(nodeGet(node, file + "tasks/bad-1-0/stderr", std::nullopt).status, 401);
  EXPECT_EQ(nodeGet(node, file + "tasks/bad-1-0/stderr", "not-the-token").status, 401);

  // The client token (and the cluster secret, which derives it) reads them.
  const rest::HttpResponse listing = nodeGet(node, "/api/v1/logs/" + appId, clientToken());
  ASSERT_EQ(listing.status, 200) << listing.body;
  EXPECT_THAT(listing.body, HasSubstr(R"("path":"tasks/bad-1-0/stderr","size":24)"));
  EXPECT_THAT(listing.body, HasSubstr(R"("executorId":"e)"));
  const rest::HttpResponse stderrFile = nodeGet(node, file + "tasks/bad-1-0/stderr", clientToken());
  EXPECT_EQ(stderrFile.status, 200);
  EXPECT_EQ(stderrFile.body, "task 1 attempt 0 failed\n");
  EXPECT_EQ(nodeGet(node, file + "tasks/bad-1-0/stderr?tail=7", cluster->adminToken()).body,
            "failed\n");

  // Hostile paths: a clear 4xx naming the problem, never a file outside the container's dir.
  fs::create_symlink(dir.path() / "cluster" / "rm.secret",
                     nodeLogDir(node) / appId / container / "evil");
  for (const std::string& bad :
       {file + "..%2F..%2F..%2F..%2Frm.secret", file + "%2Fetc%2Fpasswd",
        file + "tasks/..%2F..%2Fstderr", file + "evil", file + ".executor-id"}) {
    const rest::HttpResponse refused = nodeGet(node, bad, clientToken());
    EXPECT_EQ(refused.status, 400) << bad << ": " << refused.body;
    EXPECT_THAT(refused.body, HasSubstr("log path")) << bad;
    EXPECT_THAT(refused.body, Not(HasSubstr(cluster->adminToken())));
  }
  const rest::HttpResponse badApp =
      nodeGet(node, "/api/v1/logs/bad%24app/" + container + "/stderr", clientToken());
  EXPECT_EQ(badApp.status, 400);
  EXPECT_THAT(badApp.body, HasSubstr("bad application id 'bad$app'"));
  const rest::HttpResponse missing = nodeGet(node, file + "tasks/bad-9-0/stderr", clientToken());
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.body, HasSubstr("no file 'tasks/bad-9-0/stderr'"));
  EXPECT_EQ(nodeGet(node, file + "stderr?tail=x", clientToken()).status, 400);
  EXPECT_EQ(nodeGet(node, "/api/v1/logs/application_9_9", clientToken()).status, 404);

  // `tide logs` through tide-rm, from a directory without kept logs: every node is asked.
  const std::string cwd = (dir.path() / "elsewhere").string();
  fs::create_directories(cwd);
  const std::vector<std::string> viaRm = {std::string(TIDE_BIN_DIR) + "/tide",
                                          "logs",
                                          appId,
                                          "--task",
                                          "bad:1",
                                          "--master",
                                          cluster->rmAddress(),
                                          "--conf",
                                          "rm.secretFile=" + cluster->secretFile()};
  const auto printed =
      testing_support::runCommand(viaRm, (dir.path() / "logs.log").string(), 60s, cwd);
  EXPECT_EQ(printed.status, 0) << printed.output;
  EXPECT_THAT(printed.output, HasSubstr("Container: " + container + " on 127.0.0.1:" +
                                        std::to_string(cluster->nodeManagerPort(node))));
  EXPECT_THAT(printed.output, HasSubstr("task 1 attempt 0 failed\n"));

  const auto unknown = testing_support::runCommand(
      {viaRm[0], "logs", "application_9_9", "--master", cluster->rmAddress(), "--conf",
       "rm.secretFile=" + cluster->secretFile()},
      (dir.path() / "unknown.log").string(), 60s, cwd);
  EXPECT_NE(unknown.status, 0);
  EXPECT_THAT(unknown.output, HasSubstr("application_9_9"));

  // A node that cannot be reached is named; the other's logs are still printed.
  const size_t other = 1 - node;
  cluster->nodeManager(other).stop();
  const auto partial =
      testing_support::runCommand(viaRm, (dir.path() / "partial.log").string(), 60s, cwd);
  EXPECT_EQ(partial.status, 1) << partial.output;
  EXPECT_THAT(partial.output,
              HasSubstr("node 127.0.0.1:" + std::to_string(cluster->nodeManagerPort(other)) +
                        " cannot be reached"));
  EXPECT_THAT(partial.output, HasSubstr("task 1 attempt 0 failed\n"));
}

TEST_F(LogsIntegrationTest, WhatTheTasksOfAKilledApplicationWroteIsKept) {
  startCluster(/*nodes=*/1, /*coresPerNode=*/3);
  const fs::path started = dir.path() / "started";
  submit(R"({"name": "killed", "stages": [{"id": "long", "tasks": 1, "command": ["sh", "-c",
      "echo before the kill; echo on stderr too >&2; touch )" +
             started.string() + R"(; sleep 60"]}]})",
         {}, /*session=*/false);
  ASSERT_TRUE(testing_support::eventually([&] { return fs::exists(started); }, 60s));
  client->kill(appId);
  EXPECT_EQ(waitForEnd(60s).finalStatus, "KILLED");

  // Its executor and task were killed with it; their files stay, complete.
  std::error_code ec;
  fs::path taskDir;
  for (const auto& entry : fs::directory_iterator(nodeLogDir(0) / appId, ec)) {
    if (fs::exists(entry.path() / "tasks" / "long-0-0"))
      taskDir = entry.path() / "tasks" / "long-0-0";
  }
  ASSERT_FALSE(taskDir.empty()) << "no container kept tasks/long-0-0";
  EXPECT_EQ(readFile(taskDir / "stdout"), "before the kill\n");
  EXPECT_EQ(readFile(taskDir / "stderr"), "on stderr too\n");
  EXPECT_GT(fs::file_size(taskDir.parent_path().parent_path() / "stderr"), 0u);  // the executor's
}

TEST_F(LogsIntegrationTest, TheAmServesAFailedTasksAndAnExecutorsLogsAndItsPageLinksThem) {
  startCluster(/*nodes=*/1, /*coresPerNode=*/4);
  // A session AM stays up after its job failed, with its page.
  submit(kFailingJob, {{"task.maxFailures", "2"}, {"executor.cores", "1"}}, /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 90s));
  ASSERT_EQ(jobState("job-1"), "FAILED");

  // With the AM's own token only (what the page holds): the AM fetches them from the node.
  rest::HttpResponse task = am->request("GET", "api/v1/tasks/bad/1/1/logs/stderr");
  ASSERT_EQ(task.status, 200) << task.body;
  EXPECT_EQ(task.body, "task 1 attempt 1 failed\n");
  EXPECT_EQ(am->request("GET", "api/v1/tasks/bad/1/0/logs/stdout").body, "out-1-0\n");
  EXPECT_EQ(am->request("GET", "api/v1/tasks/bad/1/0/logs/stderr?tail=7").body, "failed\n");
  const std::string executor = job("job-1")["failures"][0]["executor"].GetString();
  const rest::HttpResponse executorLog =
      am->request("GET", "api/v1/executors/" + executor + "/logs/stderr");
  EXPECT_EQ(executorLog.status, 200);
  EXPECT_FALSE(executorLog.body.empty());  // tide-executor logs to its stderr
  const rest::HttpResponse succeeded = am->request("GET", "api/v1/tasks/bad/0/0/logs/stderr");
  EXPECT_EQ(succeeded.status, 404);
  EXPECT_THAT(succeeded.body, HasSubstr("only failed attempts"));
  const rest::HttpResponse unknown = am->request("GET", "api/v1/executors/e99/logs/stderr");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(unknown.body, HasSubstr("no executor e99"));
  EXPECT_EQ(am->request("GET", "api/v1/executors/" + executor + "/logs/secret").status, 404);

  // The page links each executor and each failed attempt to its logs.
  const std::string chromium =
      testing_support::chromiumForTest("the page's log links need a real browser");
  if (chromium.empty()) return;
  const std::string domFile = (dir.path() / "dom.html").string();
  testing_support::runHeadlessChromium(chromium, dir.path(), "logs", {"--dump-dom"}, trackingUrl,
                                       5000, domFile);
  const std::string dom = readFile(domFile);
  EXPECT_THAT(dom, HasSubstr(R"(data-task="bad:1:1")")) << dom.substr(0, 3000);
  EXPECT_THAT(dom, HasSubstr(R"(href="api/v1/tasks/bad/1/1/logs/stderr")"));
  EXPECT_THAT(dom, HasSubstr(R"(href="api/v1/executors/)" + executor + R"(/logs/stdout")"));
}

}  // namespace
}  // namespace tide::deploy
