// The attacks of issue 17, tried with real tide-rm, tide-nm, tide-am and tide-executor
// processes on 127.0.0.1, as anyone on the machine could with curl: each test is named for
// what it defends, and checks both the refusal and that nothing changed.

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "am_cluster_test.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"
#include "tests/support/headless_chromium.h"
#include "tests/support/jobs.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::eventually;
using testing_support::readFile;

const std::string kQuickJob = testing_support::sleepJob("quick", 2, 50, "s");

class AuthIntegrationTest : public testing_support::AmClusterTest {
 protected:
  // A session AM: it stays up after its job and would accept more.
  void startSession(Conf conf = {}) {
    startCluster(1, 4);
    submit(kQuickJob, std::move(conf), /*session=*/true);
    // The AM serves its status before it submits its job file's job: counts start after it.
    ASSERT_TRUE(eventually([&] { return jobCount() >= 1; }, std::chrono::seconds(30)));
  }

  // A client of the AM's status port with exactly these headers, nothing else.
  rest::HttpResponse amCall(const std::string& method, const std::string& path,
                            const std::string& body, const rest::HttpHeaders& headers) {
    rest::HttpClient bare(trackingUrl);
    return bare.request(method, path, body, headers);
  }
  // A client of tide-rm with exactly these headers.
  rest::HttpResponse rmCall(const std::string& method, const std::string& path,
                            const std::string& body, const rest::HttpHeaders& headers) {
    rest::HttpClient bare(cluster->rmAddress());
    return bare.request(method, path, body, headers);
  }

  size_t jobCount() { return am->getJson("api/v1/jobs")["jobs"].Size(); }
  int maxExecutors() { return status()["allocation"]["max"].GetInt(); }

  std::string bearer(const std::string& token) { return "Bearer " + token; }
  // The page's own origin, as a browser on it would send it.
  std::string ownOrigin() {
    std::string origin = trackingUrl;
    if (!origin.empty() && origin.back() == '/') origin.pop_back();
    return origin;
  }

  static std::string markerJob(const std::string& marker) {
    return R"({"name": "evil", "stages": [{"id": "x", "tasks": 1, "command": ["sh", "-c", "touch )" +
           marker + R"("]}]})";
  }
};

// Attack: anyone on the machine POSTs a job (any command) to a session AM's status port.
TEST_F(AuthIntegrationTest, SessionAmRefusesJobsWithoutTheControlToken) {
  startSession();
  const size_t before = jobCount();
  const std::string marker = (dir.path() / "pwned-1").string();
  const auto anonymous =
      amCall("POST", "api/v1/jobs", markerJob(marker), {{"Content-Type", "application/json"}});
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  EXPECT_THAT(anonymous.body, HasSubstr("control token"));
  const auto wrong = amCall(
      "POST", "api/v1/jobs", markerJob(marker),
      {{"Content-Type", "application/json"}, {"Authorization", bearer(std::string(64, 'a'))}});
  EXPECT_EQ(wrong.status, 401) << wrong.body;
  EXPECT_EQ(jobCount(), before);
  EXPECT_FALSE(std::filesystem::exists(marker));

  // The submitter's token works.
  const auto allowed =
      amCall("POST", "api/v1/jobs",
             R"({"name": "ok", "stages": [{"id": "s", "tasks": 1, "builtin": "noop"}]})",
             {{"Content-Type", "application/json"}, {"Authorization", bearer(controlToken)}});
  EXPECT_EQ(allowed.status, 201) << allowed.body;
  EXPECT_EQ(jobCount(), before + 1);
}

// Attack: a web page the user visits posts text/plain (a CORS "simple request", sent without a
// preflight) to the AM on 127.0.0.1, from its own origin.
TEST_F(AuthIntegrationTest, CrossSiteTextPlainPostIsRefused) {
  startSession();
  const size_t before = jobCount();
  const std::string marker = (dir.path() / "pwned-2").string();
  const auto blind = amCall("POST", "api/v1/jobs", markerJob(marker),
                            {{"Content-Type", "text/plain"}, {"Origin", "http://evil.example"}});
  EXPECT_EQ(blind.status, 401) << blind.body;
  // Even with the token (say, the page learnt it), another origin and a non-JSON body are out.
  const auto foreign = amCall("POST", "api/v1/jobs", markerJob(marker),
                              {{"Content-Type", "application/json"},
                               {"Origin", "http://evil.example"},
                               {"Authorization", bearer(controlToken)}});
  EXPECT_EQ(foreign.status, 403) << foreign.body;
  EXPECT_THAT(foreign.body, HasSubstr("evil.example"));
  const auto textPlain =
      amCall("POST", "api/v1/jobs", markerJob(marker),
             {{"Content-Type", "text/plain"}, {"Authorization", bearer(controlToken)}});
  EXPECT_EQ(textPlain.status, 415) << textPlain.body;
  const auto form = amCall("PUT", "api/v1/allocation/bounds", "max=1",
                           {{"Content-Type", "application/x-www-form-urlencoded"},
                            {"Origin", ownOrigin()},
                            {"Authorization", bearer(controlToken)}});
  EXPECT_EQ(form.status, 415) << form.body;
  EXPECT_EQ(jobCount(), before);
  EXPECT_FALSE(std::filesystem::exists(marker));

  // The page itself (same origin, JSON, token) may.
  const auto page = amCall("PUT", "api/v1/allocation/bounds", R"({"max": 3})",
                           {{"Content-Type", "application/json"},
                            {"Origin", ownOrigin()},
                            {"Authorization", bearer(controlToken)}});
  EXPECT_EQ(page.status, 200) << page.body;
}

// Attack: PUT bounds with a wrong bearer token (answered 200 and applied before).
TEST_F(AuthIntegrationTest, WrongBearerCannotChangeTheBounds) {
  startSession({{"dynamicAllocation.maxExecutors", "4"}});
  ASSERT_EQ(maxExecutors(), 4);
  for (const std::string& token :
       {std::string("wrong"), std::string(64, '0'), controlToken + "x"}) {
    const auto response =
        amCall("PUT", "api/v1/allocation/bounds", R"({"max": 1})",
               {{"Content-Type", "application/json"}, {"Authorization", bearer(token)}});
    EXPECT_EQ(response.status, 401) << token << ": " << response.body;
    EXPECT_EQ(response.header("www-authenticate"), "Bearer");
  }
  const auto missing = amCall("PUT", "api/v1/allocation/bounds", R"({"max": 1})",
                              {{"Content-Type", "application/json"}});
  EXPECT_EQ(missing.status, 401);
  const auto uncache = amCall("DELETE", "api/v1/cache/job-1/s", "", {});
  EXPECT_EQ(uncache.status, 401);
  EXPECT_EQ(maxExecutors(), 4) << "the bounds changed";
  // Reads stay open with ui.auth=writes (the default).
  EXPECT_EQ(amCall("GET", "api/v1/status", "", {}).status, 200);
  EXPECT_EQ(amCall("GET", "metrics", "", {}).status, 200);
}

// ui.auth=all: reads need the token too, the page itself does not (it carries the token in).
TEST_F(AuthIntegrationTest, UiAuthAllGuardsReadsAndMetrics) {
  startSession({{"ui.auth", "all"}});
  for (const char* path : {"api/v1/status", "api/v1/executors", "api/v1/jobs", "metrics",
                           "api/v1/allocation/history", "api/v1/allocation/decisions"}) {
    EXPECT_EQ(amCall("GET", path, "", {}).status, 401) << path;
    EXPECT_EQ(amCall("GET", path, "", {{"Authorization", bearer("nope")}}).status, 401) << path;
    EXPECT_EQ(amCall("GET", path, "", {{"Authorization", bearer(controlToken)}}).status, 200)
        << path;
  }
  const auto page = amCall("GET", "", "", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("sessionStorage"));
}

// The page gets its token once in its URL (Jupyter's ?token=) and sends it on its requests: in
// a real browser, with ui.auth=all, it shows the application only when given the token.
TEST_F(AuthIntegrationTest, PageUsesTheTokenFromItsUrl) {
  const std::string chromium =
      testing_support::chromiumForTest("the page's token test needs a real browser");
  if (chromium.empty()) return;
  startSession({{"ui.auth", "all"}});
  auto dumpDom = [&](const std::string& url, const std::string& tag) {
    const std::string out = (dir.path() / ("dom-" + tag + ".html")).string();
    testing_support::runHeadlessChromium(chromium, dir.path(), tag, {"--dump-dom"}, url, 10000,
                                         out);
    return readFile(out);
  };
  const std::string withToken = dumpDom(pageUrlWithToken(trackingUrl, controlToken), "token");
  // Rendered from GET /api/v1/status, which needs the token with ui.auth=all.
  EXPECT_THAT(withToken, HasSubstr("<b>" + appId + "</b>")) << withToken.substr(0, 3000);
  EXPECT_THAT(withToken, Not(HasSubstr("HTTP 401")));
  // Without it the page shows nothing of the application. (Its last error may be a fetch that
  // chromium cut off when its time budget ran out rather than the 401: the status port serves
  // at nice 19, slowly on a loaded machine, so only "not reachable" is certain.)
  const std::string without = dumpDom(trackingUrl, "none");
  EXPECT_THAT(without, Not(HasSubstr("<b>" + appId + "</b>")));
  EXPECT_THAT(without, HasSubstr("not reachable (")) << without.substr(0, 3000);
}

// Attack: POST /ws/v1/cluster/apps runs any command on a node without a credential.
TEST_F(AuthIntegrationTest, RmRefusesSubmissionsWithoutACredential) {
  startCluster(1, 4);
  const int before = client->metrics().appsSubmitted;
  const std::string marker = (dir.path() / "pwned-rm").string();
  rest::ApplicationSubmission submission;
  submission.applicationId = "application_1_0099";
  submission.applicationName = "evil";
  submission.command = "touch " + marker;
  submission.resource = {128, 1};
  const std::string body = rest::toJson(submission);
  const rest::HttpHeaders json = {{"Content-Type", "application/json"}};
  EXPECT_EQ(rmCall("POST", "/ws/v1/cluster/apps/new-application", "{}", json).status, 401);
  const auto anonymous = rmCall("POST", "/ws/v1/cluster/apps", body, json);
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  const auto wrong = rmCall(
      "POST", "/ws/v1/cluster/apps", body,
      {{"Content-Type", "application/json"}, {"Authorization", bearer(std::string(64, 'f'))}});
  EXPECT_EQ(wrong.status, 401) << wrong.body;
  // A node's credential is not a client's.
  const std::string secret = cluster->adminToken();
  const auto asNode = rmCall("POST", "/ws/v1/cluster/apps", body,
                             {{"Content-Type", "application/json"},
                              {"Authorization", bearer(rest::nodeCredentialOf(secret))}});
  EXPECT_EQ(asNode.status, 401) << asNode.body;
  EXPECT_EQ(rmCall("GET", "/ws/v1/cluster/apps", "", {}).status, 401);
  EXPECT_EQ(
      rmCall("PUT", "/ws/v1/cluster/apps/application_1_0001/state", R"({"state":"KILLED"})", json)
          .status,
      401);
  EXPECT_EQ(client->metrics().appsSubmitted, before);
  EXPECT_FALSE(std::filesystem::exists(marker));

  // A client token derived from the secret may use the client API.
  const auto listed = rmCall("GET", "/ws/v1/cluster/apps", "",
                             {{"Authorization", bearer(rest::clientTokenOf(secret))}});
  EXPECT_EQ(listed.status, 200) << listed.body;
}

// Attack: forging a node registration: the id of a running node (which failed the
// application on it) and a fake node with a huge capacity (which got the next AM, with its
// secrets in the environment).
TEST_F(AuthIntegrationTest, RmRefusesForgedNodeRegistrations) {
  startCluster(1, 4);
  submit(kQuickJob, {}, /*session=*/true);
  const std::string realNode = "127.0.0.1:" + std::to_string(cluster->nodeManagerPort(0));
  const rest::HttpHeaders json = {{"Content-Type", "application/json"}};
  const auto existing = rmCall(
      "POST", "/ws/v1/nm/register",
      rest::toJson(rest::NodeRegistration{"127.0.0.1", cluster->nodeManagerPort(0), {1, 1}}), json);
  EXPECT_EQ(existing.status, 401) << existing.body;
  EXPECT_THAT(existing.body, HasSubstr("node credential"));
  const auto big = rmCall("POST", "/ws/v1/nm/register",
                          rest::toJson(rest::NodeRegistration{"127.0.0.1", 1, {1 << 30, 4096}}),
                          {{"Content-Type", "application/json"},
                           {"Authorization", bearer(rest::clientTokenOf(cluster->adminToken()))}});
  EXPECT_EQ(big.status, 401) << big.body;

  // Nothing changed: one node, still running the application.
  const auto nodes = rest::parseJson(
      rmCall("GET", "/ws/v1/cluster/nodes", "", {{"Authorization", bearer(cluster->adminToken())}})
          .body);
  EXPECT_EQ(client->metrics().activeNodes, 1);
  EXPECT_THAT(rest::toJsonString(nodes), HasSubstr(realNode));
  EXPECT_THAT(rest::toJsonString(nodes), Not(HasSubstr("127.0.0.1:1\"")));
  EXPECT_EQ(client->application(appId).state, "RUNNING");
  EXPECT_EQ(status()["state"].GetString(), std::string("RUNNING"));
}

std::vector<std::string> allFilesUnder(const std::filesystem::path& root) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec)) files.push_back(it->path().string());
  }
  return files;
}

// The cluster secret, the AM token, the application secret and the control token appear in no
// process's command line (ps), in no log, and in no status answer.
TEST_F(AuthIntegrationTest, SecretsStayOutOfPsLogsAndStatus) {
  startCluster(1, 4);
  submit(kQuickJob, {}, /*session=*/true);
  ASSERT_TRUE(eventually([&] { return jobState("job-1") == "SUCCEEDED"; }, 60s));

  // The cluster secret: a file of its own, mode 0600, its path logged but not its content.
  struct stat info {};
  ASSERT_EQ(::stat(cluster->secretFile().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  const std::string rmLog = readFile(cluster->rmLogPath());
  EXPECT_THAT(rmLog, HasSubstr(cluster->secretFile()));

  // The AM's own secrets, from its environment (readable by its owner only).
  const pid_t amPid = testing_support::findProcess("tide-am", "TIDE_APPLICATION_ID", appId);
  ASSERT_GT(amPid, 0);
  std::map<std::string, std::string> secrets = {{"cluster secret", cluster->adminToken()},
                                                {"control token", controlToken}};
  const std::string environ = readFile("/proc/" + std::to_string(amPid) + "/environ");
  for (const char* name : {"TIDE_APP_SECRET", "TIDE_AM_TOKEN"}) {
    const size_t at = environ.find(std::string(name) + "=");
    ASSERT_NE(at, std::string::npos) << name;
    const size_t start = at + std::strlen(name) + 1;
    secrets[name] = environ.substr(start, environ.find('\0', start) - start);
    ASSERT_GE(secrets[name].size(), 32u) << name;
  }
  secrets["node credential"] = rest::nodeCredentialOf(cluster->adminToken());
  secrets["client token"] = rest::clientTokenOf(cluster->adminToken());

  // ps: every process's command line.
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = readFile(entry.path().string() + "/cmdline");
    for (const auto& [what, value] : secrets) {
      EXPECT_EQ(cmdline.find(value), std::string::npos)
          << what << " in the command line of " << pid;
    }
  }
  // Logs: everything the cluster wrote (the secret file itself aside).
  for (const std::string& file : allFilesUnder(dir.path())) {
    if (file == cluster->secretFile()) continue;
    const std::string text = readFile(file);
    for (const auto& [what, value] : secrets) {
      EXPECT_EQ(text.find(value), std::string::npos) << what << " in " << file;
    }
  }
  // Status: every read endpoint of the AM and of tide-rm.
  std::string answers;
  for (const char* path : {"api/v1/status", "api/v1/executors", "api/v1/jobs", "metrics",
                           "api/v1/allocation/history", "api/v1/allocation/decisions", ""}) {
    answers += am->request("GET", path).body;
  }
  const rest::HttpHeaders admin = {{"Authorization", bearer(cluster->adminToken())}};
  const std::vector<std::string> rmPaths = {"/ws/v1/cluster/apps", "/ws/v1/cluster/apps/" + appId,
                                            "/ws/v1/cluster/nodes", "/ws/v1/cluster/metrics",
                                            "/ws/v1/cluster/info"};
  for (const std::string& path : rmPaths) {
    answers += rmCall("GET", path, "", admin).body;
  }
  for (const auto& [what, value] : secrets) {
    EXPECT_EQ(answers.find(value), std::string::npos) << what << " in a status answer";
  }
}

// The listening TCP sockets of process `pid` as "ADDR:PORT" in /proc/net/tcp's hex notation
// (0100007F is 127.0.0.1, 00000000 is every interface).
std::vector<std::string> listeningSockets(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fds, ec)) {
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> listening;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream lines(readFile("/proc/" + std::to_string(pid) + table));
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && inodes.count(inode) != 0) listening.push_back(local);
    }
  }
  return listening;
}

// Every server binds the host it is configured with (127.0.0.1 here), not every interface:
// tide-rm, tide-nm, and both ports of the AM. (The executor's block server is issue 17's
// remaining listener.)
TEST_F(AuthIntegrationTest, EveryListenerBindsTheConfiguredHost) {
  startSession();
  std::map<std::string, pid_t> processes = {
      {"tide-rm", cluster->resourceManager().pid()},
      {"tide-nm", cluster->nodeManager(0).pid()},
      {"tide-am", testing_support::findProcess("tide-am", "TIDE_APPLICATION_ID", appId)}};
  for (const auto& [name, pid] : processes) {
    ASSERT_GT(pid, 0) << name;
    const std::vector<std::string> sockets = listeningSockets(pid);
    EXPECT_FALSE(sockets.empty()) << name << " listens nowhere";
    for (const std::string& local : sockets) {
      EXPECT_EQ(local.substr(0, 9), "0100007F:") << name << " listens on " << local;
    }
  }
  EXPECT_EQ(listeningSockets(processes["tide-am"]).size(), 2u) << "the status and executor ports";
}

// rm.authentication=none is for a closed test network: it says so at start, and lets anyone in.
TEST_F(AuthIntegrationTest, AuthenticationNoneWarnsAndLetsAnyoneIn) {
  deploy::EmbeddedClusterOptions options;
  options.binDir = TIDE_BIN_DIR;
  options.workDir = (dir.path() / "open").string();
  options.nodes = 1;
  options.nmConf = {{"nm.cores", "2"}, {"nm.memory", "1g"}};
  options.rmConf = {{"rm.authentication", "none"}};
  cluster = std::make_unique<deploy::EmbeddedCluster>(options);
  EXPECT_THAT(readFile(cluster->rmLogPath()), HasSubstr("rm.authentication=none"));
  EXPECT_FALSE(std::filesystem::exists(cluster->secretFile()));
  EXPECT_EQ(rmCall("GET", "/ws/v1/cluster/metrics", "", {}).status, 200);
}

}  // namespace
}  // namespace tide::deploy
