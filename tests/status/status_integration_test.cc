// Watching and steering allocation end to end (issue 5's "must show"): real tide-rm, tide-nm,
// tide-am and tide-executor processes on 127.0.0.1; every endpoint of the AM's status port
// during a real job, bounds changed through PUT and SIGHUP, the decision log explaining a
// scale-up, a cap at max, a wait for containers and an idle removal, /metrics as Prometheus
// text, the status page in headless Chromium, and `tide status`. Every wait is bounded.

#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "../integration/am_cluster_test.h"
#include "prometheus_text.h"
#include "tests/support/headless_chromium.h"
#include "tests/support/jobs.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing_support::eventually;

class StatusIntegrationTest : public testing_support::AmClusterTest {
 protected:
  // The AM runs in session mode in every test here: it stays up after its job to be watched.
  void submit(const std::string& jobJson, Conf conf,
              std::optional<std::string> propertiesFile = std::nullopt) {
    AmClusterTest::submit(jobJson, std::move(conf), /*session=*/true, std::move(propertiesFile));
  }

  rest::HttpResponse get(const std::string& path) { return am->request("GET", path); }
  rest::HttpResponse putBounds(const std::string& body) {
    return am->request("PUT", "api/v1/allocation/bounds", body,
                       {{"Content-Type", "application/json"}});
  }

  std::vector<std::string> decisionTexts(const std::string& action) {
    auto doc = am->getJson("api/v1/allocation/decisions?limit=1000");
    std::vector<std::string> texts;
    for (const auto& d : doc["decisions"].GetArray()) {
      if (!action.empty() && action != d["action"].GetString()) continue;
      texts.push_back(d["why"].GetString());
      // A run of events keeps its first reason too.
      if (d["repeats"].GetInt64() > 1) texts.push_back(d["firstWhy"].GetString());
    }
    return texts;
  }
  bool hasDecision(const std::string& action, const std::string& fragment) {
    for (const auto& why : decisionTexts(action)) {
      if (why.find(fragment) != std::string::npos) return true;
    }
    return false;
  }
  std::set<std::string> liveExecutorIds() {
    std::set<std::string> ids;
    const rapidjson::Document listed = am->getJson("api/v1/executors");  // outlives the loop
    for (const auto& e : listed["executors"].GetArray()) {
      ids.insert(e["id"].GetString());
    }
    return ids;
  }

  testing_support::CommandResult tide(std::vector<std::string> args, const std::string& logName) {
    args.insert(args.begin(), std::string(TIDE_BIN_DIR) + "/tide");
    return testing_support::runCommand(args, (dir.path() / logName).string(), 30s);
  }
};

// 60 tasks of 300ms on at most 3 executors: a ramp 1 -> 3, a cap at max=3, then idle removal.
const std::string kRampJob = testing_support::sleepJob("ramp", 60, 300);

TEST_F(StatusIntegrationTest, EveryEndpointDuringAndAfterARealJob) {
  startCluster();
  submit(kRampJob, {{"dynamicAllocation.minExecutors", "0"},
                    {"dynamicAllocation.maxExecutors", "3"},
                    {"dynamicAllocation.schedulerBacklogTimeout", "200ms"},
                    {"dynamicAllocation.sustainedSchedulerBacklogTimeout", "200ms"},
                    {"dynamicAllocation.executorIdleTimeout", "2s"}});

  // During the job: status fields present and consistent.
  ASSERT_TRUE(eventually([&] { return status()["allocation"]["busy"].GetInt() > 0; }, 30s));
  {
    auto s = status();
    EXPECT_EQ(std::string(s["applicationId"].GetString()), appId);
    EXPECT_THAT(std::string(s["attemptId"].GetString()), HasSubstr("appattempt_"));
    EXPECT_EQ(std::string(s["state"].GetString()), "RUNNING");
    EXPECT_GT(s["uptimeMs"].GetInt64(), 0);
    EXPECT_GT(s["pid"].GetInt64(), 0);
    const auto& a = s["allocation"];
    for (const char* field : {"target", "live", "pending", "pendingRemoval", "busy", "idle", "min",
                              "initial", "max", "maxNeeded", "numExecutorsToAdd"}) {
      ASSERT_TRUE(a.HasMember(field) && a[field].IsInt()) << field;
    }
    EXPECT_TRUE(a["initializing"].IsBool());
    EXPECT_EQ(a["busy"].GetInt() + a["idle"].GetInt(), a["live"].GetInt());
    EXPECT_EQ(a["min"].GetInt(), 0);
    EXPECT_EQ(a["max"].GetInt(), 3);
    EXPECT_LE(a["target"].GetInt(), 3);
    EXPECT_LE(a["live"].GetInt(), 3);
    const auto& t = s["tasks"];
    for (const char* field : {"pending", "running", "succeeded", "failed"}) {
      ASSERT_TRUE(t.HasMember(field) && t[field].IsInt64()) << field;
    }
    EXPECT_GT(t["running"].GetInt64(), 0);
    ASSERT_EQ(s["jobs"].Size(), 1u);
    EXPECT_EQ(std::string(s["jobs"][0]["id"].GetString()), "job-1");
    EXPECT_EQ(s["jobs"][0]["tasks"].GetInt64(), 60);
  }
  // Executors: one row per live executor, with the fields the table shows.
  {
    auto doc = am->getJson("api/v1/executors");
    ASSERT_GT(doc["executors"].Size(), 0u);
    const auto& e = doc["executors"][0];
    EXPECT_THAT(std::string(e["id"].GetString()), ::testing::StartsWith("e"));
    EXPECT_NE(std::string(e["host"].GetString()), "");
    EXPECT_THAT(std::string(e["container"].GetString()), HasSubstr("container_"));
    EXPECT_THAT(std::string(e["state"].GetString()), ::testing::AnyOf("BUSY", "IDLE"));
    EXPECT_EQ(e["cores"].GetInt(), 1);
    EXPECT_TRUE(e["runningTasks"].IsInt());
    EXPECT_TRUE(e["idleSinceMs"].IsInt64());
    EXPECT_TRUE(e["holdsCachedData"].IsBool());
    EXPECT_TRUE(e["holdsShuffleData"].IsBool());
    EXPECT_TRUE(e["expiresInMs"].IsNull() || e["expiresInMs"].IsInt64());
    EXPECT_TRUE(e["expiry"].IsString());
  }
  // The allocation history has points, and `since` returns only newer ones.
  {
    auto history = am->getJson("api/v1/allocation/history");
    ASSERT_GT(history["points"].Size(), 1u);
    const auto& first = history["points"][0];
    for (const char* field : {"atMs", "target", "live", "busy", "pendingExecutors", "pendingTasks",
                              "runningTasks", "min", "max"}) {
      EXPECT_TRUE(first.HasMember(field)) << field;
    }
    const int64_t firstAt = first["atMs"].GetInt64();
    auto newer = am->getJson("api/v1/allocation/history?since=" + std::to_string(firstAt));
    // The job runs on, so more points may have come meanwhile.
    EXPECT_GE(newer["points"].Size(), history["points"].Size() - 1);
    for (const auto& p : newer["points"].GetArray()) EXPECT_GT(p["atMs"].GetInt64(), firstAt);
    EXPECT_EQ(get("api/v1/allocation/history?since=soon").status, 400);
  }

  // The job ends; the decision log explains the ramp and the cap at max.
  ASSERT_TRUE(jobEnds("job-1", 60s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  EXPECT_TRUE(hasDecision("raise_target", "added 1 (backlog of"));
  EXPECT_TRUE(hasDecision("raise_target", "target 3 (maxExecutors)"));
  EXPECT_TRUE(hasDecision("not_adding", "not adding: at maxExecutors=3"))
      << ::testing::PrintToString(decisionTexts(""));
  // Idle timeout 2s: the executors are removed, each with its reason.
  EXPECT_TRUE(eventually([&] { return status()["allocation"]["live"].GetInt() == 0; }, 15s));
  EXPECT_TRUE(hasDecision("remove", "idle for 2"))
      << ::testing::PrintToString(decisionTexts("remove"));
  {
    auto decisions = am->getJson("api/v1/allocation/decisions?limit=2");
    EXPECT_EQ(decisions["decisions"].Size(), 2u);
    EXPECT_EQ(get("api/v1/allocation/decisions?limit=-1").status, 400);
  }

  // Jobs: stages with task counts and durations.
  {
    auto job = am->getJson("api/v1/jobs/job-1");
    EXPECT_EQ(job["succeeded"].GetInt64(), 60);
    ASSERT_EQ(job["stages"].Size(), 1u);
    const auto& stage = job["stages"][0];
    EXPECT_EQ(stage["tasks"].GetInt64(), 60);
    EXPECT_EQ(stage["succeeded"].GetInt64(), 60);
    EXPECT_GE(stage["durationMs"].GetInt64(), 300);
    EXPECT_GE(stage["taskDurationMs"]["min"].GetInt64(), 250);
    EXPECT_TRUE(job["failures"].IsArray());
    EXPECT_EQ(am->getJson("api/v1/jobs")["jobs"].Size(), 1u);
    auto missing = get("api/v1/jobs/job-99");
    EXPECT_EQ(missing.status, 404);
    EXPECT_THAT(missing.body, HasSubstr("\"error\""));
  }

  // /metrics: valid Prometheus text with every family, agreeing with the status.
  {
    auto response = get("metrics");
    ASSERT_EQ(response.status, 200);
    EXPECT_THAT(response.header("content-type"), HasSubstr("text/plain"));
    const auto metrics = testing_support::parsePrometheusText(response.body);
    ASSERT_EQ(metrics.error, "") << response.body;
    for (const std::string& family : testing_support::tideAmMetricFamilies()) {
      EXPECT_TRUE(metrics.types.count(family)) << family;
    }
    EXPECT_EQ(metrics.at("tide_tasks_completed_total{outcome=\"succeeded\"}"), 60);
    EXPECT_GE(metrics.at("tide_task_duration_seconds_count"), 60);
    EXPECT_GE(metrics.at("tide_task_duration_seconds_sum"), 60 * 0.25);
    EXPECT_GT(metrics.at("tide_allocation_tick_duration_seconds_count"), 10);
    EXPECT_GT(metrics.at("tide_rm_requests_total{call=\"allocate\",outcome=\"ok\"}"), 0);
    EXPECT_EQ(metrics.at("tide_rm_requests_total{call=\"register\",outcome=\"ok\"}"), 1);
    EXPECT_GE(metrics.at("tide_rm_requests_total{call=\"launch\",outcome=\"ok\"}"), 3);
    EXPECT_GT(metrics.at("tide_rm_request_duration_seconds_count{call=\"allocate\"}"), 0);
    EXPECT_TRUE(metrics.has("tide_executors{state=\"busy\"}"));
    EXPECT_EQ(metrics.at("tide_tasks{state=\"pending\"}"), 0);
    // The memory gauges are the AM's own: its resident size as /proc shows it (the two reads
    // are apart by a request, so within a factor of two, not equal).
    const std::string amProc = "/proc/" + std::to_string(status()["pid"].GetInt64());
    const std::string procStatus = testing_support::readFile(amProc + "/status");
    std::smatch vmRss;
    ASSERT_TRUE(std::regex_search(procStatus, vmRss, std::regex(R"(VmRSS:\s+(\d+) kB)")));
    const double procResident = std::stod(vmRss[1]) * 1024;
    const double resident = metrics.at("tide_application_master_memory_bytes{kind=\"resident\"}");
    EXPECT_GT(resident, procResident / 2);
    EXPECT_LT(resident, procResident * 2);
    // It restarted itself at start with malloc's per-thread caches off (common/process_memory.h),
    // the same process under the same pid.
    EXPECT_THAT(testing_support::readFile(amProc + "/environ"),
                HasSubstr("glibc.malloc.tcache_count=0"));
    EXPECT_EQ(testing_support::readFile(amProc + "/comm"), "tide-am\n")
        << "ps and pgrep name it as before";
  }

  // The page, unknown paths, errors as JSON.
  {
    auto page = get("");
    ASSERT_EQ(page.status, 200);
    EXPECT_THAT(page.header("content-type"), HasSubstr("text/html"));
    EXPECT_THAT(page.body, HasSubstr("<canvas id=\"chart\""));
    EXPECT_THAT(page.body, ::testing::Not(HasSubstr("http://")))  // nothing from elsewhere
        << "the page must not load anything from the network";
    auto unknown = get("api/v1/nothing-here");
    EXPECT_EQ(unknown.status, 404);
    auto body = rest::parseJson(unknown.body);
    EXPECT_EQ(body["error"]["code"].GetInt(), 404);
  }

  // `tide status`: by URL as JSON, and by application id through the RM.
  {
    auto json = tide({"status", trackingUrl, "--json"}, "status-json.log");
    ASSERT_EQ(json.status, 0) << json.output;
    auto doc = rest::parseJson(json.output);
    EXPECT_EQ(std::string(doc["applicationId"].GetString()), appId);
    EXPECT_TRUE(doc["allocation"].HasMember("target"));

    auto view = tide({"status", appId, "--master", cluster->rmAddress(), "--conf",
                      "rm.secretFile=" + cluster->secretFile()},
                     "status-view.log");
    ASSERT_EQ(view.status, 0) << view.output;
    EXPECT_THAT(view.output, HasSubstr(appId));
    EXPECT_THAT(view.output, HasSubstr("executors  target 0  live 0"));
    EXPECT_THAT(view.output, HasSubstr("max 3"));
    // 2 nodes of 5 cores: ten executors of 1 core (and 9 more now, the AM's core taken, once
    // the released containers are gone).
    EXPECT_THAT(view.output, HasSubstr("cluster    fits 10 executors in all, "));
    EXPECT_THAT(view.output, HasSubstr("succeeded 60"));
    EXPECT_THAT(view.output, HasSubstr("removing e"));  // the last decisions

    auto bad = tide({"status", "no-such-thing"}, "status-bad.log");
    EXPECT_EQ(bad.status, 2);
    EXPECT_THAT(bad.output, HasSubstr("expected the AM's URL"));
  }
}

// 400 sleeping tasks: a deep backlog that drives the target to max and keeps it there.
const std::string kLongJob = testing_support::sleepJob("long", 400, 300);

TEST_F(StatusIntegrationTest, PutBoundsMovesTheTargetWithinATickAndRejectsBadBounds) {
  startCluster();
  submit(kLongJob, {{"dynamicAllocation.maxExecutors", "8"},
                    {"dynamicAllocation.schedulerBacklogTimeout", "100ms"},
                    {"dynamicAllocation.sustainedSchedulerBacklogTimeout", "100ms"}});
  ASSERT_TRUE(eventually([&] { return status()["allocation"]["target"].GetInt() == 8; }, 30s));

  auto reply = putBounds(R"({"max": 2})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  auto applied = rest::parseJson(reply.body);
  EXPECT_EQ(applied["max"].GetInt(), 2);
  EXPECT_EQ(applied["min"].GetInt(), 0);
  EXPECT_LE(applied["initial"].GetInt(), 2);
  // The policy clips its target at once; one tick is 100ms.
  EXPECT_TRUE(eventually(
      [&] {
        auto a = status()["allocation"].GetObject();
        return a["target"].GetInt() <= 2 && a["max"].GetInt() == 2;
      },
      300ms));
  EXPECT_TRUE(eventually([&] { return hasDecision("bounds_changed", "target 8 -> 2"); }, 1s));
  EXPECT_TRUE(eventually(
      [&] {
        auto m = testing_support::parsePrometheusText(get("metrics").body);
        return m.at("tide_allocation_target_executors") <= 2 &&
               m.at("tide_allocation_max_executors") == 2;
      },
      1s));

  // Raising max lets it grow again, by the backlog rule.
  ASSERT_EQ(putBounds(R"({"min": 1, "max": 4})").status, 200);
  EXPECT_TRUE(eventually([&] { return status()["allocation"]["target"].GetInt() == 4; }, 5s));
  EXPECT_EQ(status()["allocation"]["min"].GetInt(), 1);

  // Invalid bounds change nothing and name the field.
  auto check400 = [&](const std::string& body, const std::string& field) {
    auto response = putBounds(body);
    EXPECT_EQ(response.status, 400) << body << " -> " << response.body;
    auto error = rest::parseJson(response.body);
    ASSERT_TRUE(error.IsObject() && error.HasMember("error")) << response.body;
    EXPECT_EQ(std::string(error["error"]["field"].GetString()), field) << response.body;
    EXPECT_THAT(std::string(error["error"]["message"].GetString()), HasSubstr(field));
  };
  check400(R"({"min": 5})", "min");  // min > max=4
  check400(R"({"min": 2, "max": 1})", "min");
  // initial above max is accepted and clipped to max, as Spark accepts it.
  EXPECT_EQ(putBounds(R"({"initial": 9})").status, 200);
  check400(R"({"max": 0})", "max");
  check400(R"({"max": -3})", "max");
  check400(R"({"max": "eight"})", "max");
  check400(R"({"max": 2.5})", "max");
  check400(R"({"maxExecutors": 3})", "maxExecutors");
  EXPECT_EQ(putBounds("{}").status, 400);
  EXPECT_EQ(putBounds("not json").status, 400);
  auto a = status()["allocation"].GetObject();
  EXPECT_EQ(a["min"].GetInt(), 1);
  EXPECT_EQ(a["max"].GetInt(), 4);
  EXPECT_TRUE(hasDecision("bounds_rejected", "min=5 is greater than max=4"));
}

TEST_F(StatusIntegrationTest, SighupReappliesThePropertiesFileWithTheConfOverridesOnTop) {
  startCluster();
  const std::string file =
      dir.writeFile("tide.conf",
                    "dynamicAllocation.maxExecutors 8\n"
                    "dynamicAllocation.schedulerBacklogTimeout 100ms\n"
                    "dynamicAllocation.sustainedSchedulerBacklogTimeout 100ms\n"
                    "dynamicAllocation.executorIdleTimeout 30s\n");
  // A --conf value outranks the file, at start and on every reload.
  submit(kLongJob, {{"dynamicAllocation.executorIdleTimeout", "45s"}}, file);
  ASSERT_TRUE(eventually([&] { return status()["allocation"]["target"].GetInt() == 8; }, 30s));
  const pid_t amPid = static_cast<pid_t>(status()["pid"].GetInt64());
  ASSERT_GT(amPid, 1);
  // Rewrites the properties file and has the AM read it again (0 when the signal went).
  const auto reloadWith = [&](const std::string& properties) {
    dir.writeFile("tide.conf", properties);
    return ::kill(amPid, SIGHUP);
  };

  ASSERT_EQ(reloadWith("dynamicAllocation.maxExecutors 3\n"
                       "dynamicAllocation.schedulerBacklogTimeout 100ms\n"
                       "dynamicAllocation.sustainedSchedulerBacklogTimeout 100ms\n"
                       "dynamicAllocation.executorIdleTimeout 30s\n"),
            0);
  EXPECT_TRUE(eventually(
      [&] {
        auto a = status()["allocation"].GetObject();
        return a["max"].GetInt() == 3 && a["target"].GetInt() <= 3;
      },
      1s))
      << amLog();

  // An invalid file changes nothing, says why in the decision log, and the AM carries on.
  ASSERT_EQ(reloadWith("dynamicAllocation.minExecutors 5\n"
                       "dynamicAllocation.maxExecutors 2\n"),
            0);
  EXPECT_TRUE(eventually(
      [&] { return hasDecision("bounds_rejected", "dynamicAllocation.minExecutors"); }, 2s))
      << ::testing::PrintToString(decisionTexts(""));
  EXPECT_EQ(status()["allocation"]["max"].GetInt(), 3);
  EXPECT_EQ(std::string(status()["state"].GetString()), "RUNNING");

  ASSERT_EQ(reloadWith("dynamicAllocation.minExecutors 1\n"
                       "dynamicAllocation.maxExecutors 5\n"),
            0);
  EXPECT_TRUE(eventually(
      [&] {
        const rapidjson::Document now = status();
        return now["allocation"]["max"].GetInt() == 5 && now["allocation"]["min"].GetInt() == 1;
      },
      2s));
}

TEST_F(StatusIntegrationTest, ContainersThatAreNeverGrantedAreExplainedAsWaiting) {
  // One node with 3 cores: the AM and two executors; max 4 leaves two requests unanswered.
  startCluster(/*nodes=*/1, /*coresPerNode=*/3);
  submit(kLongJob, {{"dynamicAllocation.maxExecutors", "4"},
                    {"dynamicAllocation.schedulerBacklogTimeout", "100ms"},
                    {"dynamicAllocation.sustainedSchedulerBacklogTimeout", "100ms"}});
  ASSERT_TRUE(eventually([&] { return status()["allocation"]["target"].GetInt() == 4; }, 30s));
  // Reported once requests have waited 10s.
  EXPECT_TRUE(eventually([&] { return hasDecision("waiting", "2 containers requested 1"); }, 20s))
      << ::testing::PrintToString(decisionTexts(""));
  EXPECT_TRUE(hasDecision("waiting", "ago, none granted"));
  auto s = status();
  EXPECT_EQ(s["allocation"]["live"].GetInt(), 2);
  EXPECT_EQ(s["allocation"]["pending"].GetInt(), 2);
  EXPECT_GE(s["containers"]["waitingMs"].GetInt64(), 10000);
  // Why: the cluster holds 3 such executors in all and has room for none more now (the AM
  // and two executors take its 3 cores), next to the target of 4.
  EXPECT_TRUE(s["capacity"]["known"].GetBool());
  EXPECT_EQ(s["capacity"]["executorsFitTotal"].GetInt(), 3);
  EXPECT_EQ(s["capacity"]["executorsFitNow"].GetInt(), 0);
  auto metrics = testing_support::parsePrometheusText(get("metrics").body);
  EXPECT_EQ(metrics.at("tide_executors{state=\"pending\"}"), 2);
}

// --- The status page in a real browser ---------------------------------------------------

TEST_F(StatusIntegrationTest, StatusPageInHeadlessChromiumShowsTheChartAndTheLiveExecutors) {
  const std::string chromium =
      testing_support::chromiumForTest("the status page test needs a real browser");
  if (chromium.empty()) return;

  startCluster();
  submit(kLongJob, {{"dynamicAllocation.maxExecutors", "4"},
                    {"dynamicAllocation.schedulerBacklogTimeout", "100ms"},
                    {"dynamicAllocation.sustainedSchedulerBacklogTimeout", "100ms"}});
  ASSERT_TRUE(eventually(
      [&] {
        return status()["allocation"]["busy"].GetInt() >= 2 &&
               am->getJson("api/v1/allocation/history")["points"].Size() >= 3;
      },
      30s));

  // Runs chromium to its end on the page; its stdout goes to `outFile`.
  auto runChromium = [&](const std::vector<std::string>& extra, const std::string& outFile,
                         const std::string& tag) {
    testing_support::runHeadlessChromium(chromium, dir.path(), tag, extra, trackingUrl, 5000,
                                         outFile);
  };

  const std::set<std::string> before = liveExecutorIds();
  const std::string domFile = (dir.path() / "dom.html").string();
  runChromium({"--dump-dom"}, domFile, "dom");
  const std::set<std::string> after = liveExecutorIds();
  const std::string dom = testing_support::readFile(domFile);
  ASSERT_THAT(dom, HasSubstr("id=\"chart\"")) << dom.substr(0, 2000);

  // The chart plotted the history's points.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"re(<span id="points">(\d+)</span>)re")))
      << dom.substr(0, 3000);
  EXPECT_GT(std::stoi(m[1]), 0);
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"re(data-points="(\d+)")re")));
  EXPECT_GT(std::stoi(m[1]), 0);

  // The executor table lists the live executors (the set may change while the page loads,
  // so at least one executor live before or after must be there, and none that never was).
  std::set<std::string> shown;
  const std::regex row(R"re(data-executor-id="([^"]+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), row); it != std::sregex_iterator();
       ++it) {
    shown.insert((*it)[1]);
  }
  std::set<std::string> live = before;
  live.insert(after.begin(), after.end());
  ASSERT_FALSE(shown.empty()) << dom.substr(0, 3000);
  int matching = 0;
  for (const auto& id : shown) {
    if (live.count(id)) ++matching;
  }
  EXPECT_GT(matching, 0) << "page shows " << ::testing::PrintToString(shown) << ", live "
                         << ::testing::PrintToString(live);
  // The decision log made it too.
  EXPECT_THAT(dom, HasSubstr("raise_target"));
  // A live AM's page has the form that changes its bounds (an ended one's does not).
  EXPECT_THAT(dom, HasSubstr("id=\"boundsForm\""));

  // A screenshot for people (and CI artifacts) to look at.
  const std::string screenshot = TIDE_STATUS_PAGE_SCREENSHOT;
  std::filesystem::create_directories(std::filesystem::path(screenshot).parent_path());
  std::filesystem::remove(screenshot);
  runChromium({"--screenshot=" + screenshot, "--window-size=1280,900", "--hide-scrollbars"},
              (dir.path() / "screenshot.out").string(), "shot");
  EXPECT_TRUE(std::filesystem::exists(screenshot) && std::filesystem::file_size(screenshot) > 10000)
      << screenshot;
}

// Issue 14 (Spark's and Dask's pages): capacity next to the target, the executor timeline with
// job and stage marks, stage progress, removed executors with why, and coalesced decisions,
// all from a real run: two stages, one executor killed (SIGKILL) mid-stage, the rest idling
// out to minExecutors=1.
TEST_F(StatusIntegrationTest, StatusPageShowsCapacityTimelineStagesRemovedExecutorsAndRuns) {
  const std::string chromium =
      testing_support::chromiumForTest("the status page test needs a real browser");
  if (chromium.empty()) return;

  startCluster();  // 2 nodes of 5 cores and 4 GB: ten executors of 256 MB and 1 core in all
  const std::string job =
      R"({"name": "etl", "stages": [)"
      R"({"id": "map", "tasks": 60, "builtin": "sleep", "sleep_ms": 250},)"
      R"({"id": "reduce", "tasks": 6, "builtin": "sleep", "sleep_ms": 200, "depends_on": ["map"]}]})";
  submit(job, {{"dynamicAllocation.minExecutors", "1"},
               {"dynamicAllocation.maxExecutors", "4"},
               {"dynamicAllocation.schedulerBacklogTimeout", "100ms"},
               {"dynamicAllocation.sustainedSchedulerBacklogTimeout", "100ms"},
               {"dynamicAllocation.executorIdleTimeout", "1s"}});

  // Mid-stage, one executor dies the hard way: its container ends, its task is retried.
  std::string killed;
  ASSERT_TRUE(eventually(
      [&] {
        const rapidjson::Document listed = am->getJson("api/v1/executors");
        for (const auto& e : listed["executors"].GetArray()) {
          if (e["runningTasks"].GetInt() > 0 && listed["executors"].Size() >= 2) {
            killed = e["id"].GetString();
            return ::kill(static_cast<pid_t>(e["pid"].GetInt64()), SIGKILL) == 0;
          }
        }
        return false;
      },
      30s));
  ASSERT_TRUE(jobEnds("job-1", 90s));
  EXPECT_EQ(jobState("job-1"), "SUCCEEDED");
  // The others idle out, down to one.
  ASSERT_TRUE(eventually(
      [&] {
        const rapidjson::Document listed = am->getJson("api/v1/executors");
        bool killedGone = false, idledOut = false;
        for (const auto& r : listed["removed"].GetArray()) {
          killedGone = killedGone || r["id"].GetString() == killed;
          idledOut = idledOut || std::string(r["reason"].GetString()) == "idle_timeout";
        }
        return listed["executors"].Size() == 1 && killedGone && idledOut;
      },
      30s))
      << rest::toJsonString(am->getJson("api/v1/executors"));

  // What the API says, to compare with what the page shows.
  const rapidjson::Document s = status();
  const rapidjson::Document listed = am->getJson("api/v1/executors");
  const auto& capacity = s["capacity"];
  ASSERT_TRUE(capacity["known"].GetBool()) << capacity["source"].GetString();
  EXPECT_EQ(capacity["executorsFitTotal"].GetInt(), 10) << "5 cores on each of 2 nodes";
  EXPECT_LE(capacity["executorsFitNow"].GetInt(), 10 - 1 - 1) << "less the AM and the live one";
  std::map<std::string, std::string> reasons;  // removed executor -> reason
  for (const auto& r : listed["removed"].GetArray())
    reasons[r["id"].GetString()] = r["reason"].GetString();
  EXPECT_NE(reasons.at(killed), "idle_timeout") << "killed, not idle";
  const std::string liveId = listed["executors"][0]["id"].GetString();
  // A run of decisions is one record with its count and range.
  const rapidjson::Document decisions = am->getJson("api/v1/allocation/decisions?limit=100");
  bool sawRun = false;
  for (const auto& d : decisions["decisions"].GetArray()) {
    if (d["repeats"].GetInt64() > 1 &&
        std::string(d["summary"].GetString()).find(" steps over ") != std::string::npos) {
      sawRun = true;
    }
  }
  EXPECT_TRUE(sawRun) << rest::toJsonString(decisions);

  const std::string domFile = (dir.path() / "dom-issue14.html").string();
  testing_support::runHeadlessChromium(chromium, dir.path(), "dom14", {"--dump-dom"}, trackingUrl,
                                       5000, domFile);
  const std::string dom = testing_support::readFile(domFile);
  std::smatch m;
  // The table rows that start with `opening` (`<tr data-...`), each up to its </tr>.
  auto rows = [&](const std::string& opening) {
    std::vector<std::string> found;
    for (size_t at = dom.find(opening); at != std::string::npos; at = dom.find(opening, at + 1)) {
      found.push_back(dom.substr(at, dom.find("</tr>", at) - at));
    }
    return found;
  };

  // Capacity next to the target, as the RM said.
  ASSERT_TRUE(std::regex_search(
      dom, m, std::regex(R"re(id="capacity" data-fit-now="(\d+)" data-fit-total="(\d+)")re")))
      << dom.substr(0, 3000);
  EXPECT_EQ(m[2], "10");
  EXPECT_LE(std::stoi(m[1]), 8);
  EXPECT_THAT(dom, HasSubstr("executors of 256 MB, 1 core fit on its live nodes in all"));

  // The timeline: a bar per executor, the removed ones ended, the live one not; job marks.
  std::map<std::string, std::string> bars;  // executor -> data-ended
  const std::regex bar(
      R"re(class="ebar[^"]*" data-executor-id="([^"]+)" data-ended="(true|false)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), bar); it != std::sregex_iterator();
       ++it) {
    bars[(*it)[1]] = (*it)[2];
  }
  EXPECT_EQ(bars.size(), reasons.size() + 1) << dom.substr(0, 3000);
  EXPECT_EQ(bars[liveId], "false");
  for (const auto& [id, reason] : reasons) EXPECT_EQ(bars[id], "true") << id;
  EXPECT_THAT(dom, HasSubstr(R"(class="jmark start" data-job="job-1")"));
  EXPECT_THAT(dom, HasSubstr(R"(class="jmark end" data-job="job-1")"));
  EXPECT_THAT(dom, HasSubstr(R"(class="sbar SUCCEEDED" data-stage="job-1/map")"));
  EXPECT_THAT(dom, HasSubstr(R"(class="sbar SUCCEEDED" data-stage="job-1/reduce")"));

  // Stage progress: done / running / failed / total, the killed executor's task a failure.
  const auto& map = s["stages"][0];
  ASSERT_EQ(std::string(map["id"].GetString()), "map");
  EXPECT_GE(map["failedAttempts"].GetInt64(), 1);
  const std::vector<std::string> mapRows = rows(R"(<tr data-stage="job-1/map">)");
  ASSERT_EQ(mapRows.size(), 1u) << dom.substr(0, 3000);
  ASSERT_TRUE(std::regex_search(
      mapRows[0], m, std::regex(R"re(<td class="num">(\d+) / (\d+) / (\d+) / (\d+)</td>)re")))
      << mapRows[0];
  EXPECT_EQ(m[1], "60");
  EXPECT_EQ(m[2], "0");
  EXPECT_EQ(m[3], std::to_string(map["failedAttempts"].GetInt64()));
  EXPECT_EQ(m[4], "60");
  EXPECT_THAT(dom, HasSubstr(R"(<tr data-stage="job-1/reduce">)"));

  // Removed executors with their reason, a place for the logs link.
  for (const auto& [id, reason] : reasons) {
    EXPECT_THAT(dom,
                HasSubstr("<tr data-executor-id=\"" + id + "\" data-reason=\"" + reason + "\">"));
    EXPECT_THAT(dom, HasSubstr("data-logs-for=\"" + id + "\""));
  }
  EXPECT_THAT(dom, HasSubstr(">idle timeout</span>"));

  // A coalesced decision row: its count and its range.
  int coalesced = 0;
  for (const std::string& row : rows("<tr data-repeats=\"")) {
    if (!std::regex_search(row, m, std::regex(R"re(^<tr data-repeats="(\d+)")re"))) continue;
    const std::string repeats = m[1];
    if (!std::regex_search(row, m, std::regex(R"re(target \d+ → \d+ in (\d+) steps over \d)re")))
      continue;
    EXPECT_EQ(m[1], repeats) << row;
    EXPECT_THAT(row, HasSubstr("×" + repeats)) << row;
    EXPECT_GT(std::stoi(repeats), 1);
    ++coalesced;
  }
  EXPECT_GT(coalesced, 0) << dom.substr(0, 5000);

  const std::string screenshot = (std::filesystem::path(TIDE_STATUS_PAGE_SCREENSHOT).parent_path() /
                                  "status-page-timeline.png")
                                     .string();
  std::filesystem::create_directories(std::filesystem::path(screenshot).parent_path());
  std::filesystem::remove(screenshot);
  testing_support::runHeadlessChromium(
      chromium, dir.path(), "shot14",
      {"--screenshot=" + screenshot, "--window-size=1280,2000", "--hide-scrollbars"}, trackingUrl,
      5000, (dir.path() / "screenshot14.out").string());
  EXPECT_TRUE(std::filesystem::exists(screenshot) && std::filesystem::file_size(screenshot) > 10000)
      << screenshot;
}

}  // namespace
}  // namespace tide::deploy
