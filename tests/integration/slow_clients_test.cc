// Slow clients against every tide server (issue 17.4): while 200 connections that send one
// header line every 2 s and never finish a request are held open to one server (tide-rm, a
// tide-nm, the AM's executor port or its status port), the cluster keeps working: a job runs to
// its end, no node and no executor is declared lost, and the attacked server answers a plain
// request with a client that gives up after one second. Real processes on 127.0.0.1.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>

#include "am_cluster_test.h"
#include "rest/messages/cluster.h"
#include "tests/rest/slow_clients.h"
#include "tests/support/jobs.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;

class SlowClientsTest : public testing_support::AmClusterTest,
                        public ::testing::WithParamInterface<std::string> {
 protected:
  // host:port -> base URL
  static std::string url(const std::string& hostPort) { return "http://" + hostPort; }

  // The attacked server's base URL and a path it answers cheaply.
  std::pair<std::string, std::string> target(const std::string& which) {
    if (which == "rm") return {cluster->rmAddress(), "/ws/v1/cluster/metrics"};
    if (which == "nm") {
      rest::HttpClientOptions admin;
      admin.defaultHeaders = {{"Authorization", "Bearer " + cluster->adminToken()}};
      rest::HttpClient rm(cluster->rmAddress(), admin);
      auto nodes = rest::nodeReportsFromJson(rm.getJson("/ws/v1/cluster/nodes"));
      return {url(nodes.at(0).nodeHTTPAddress), "/ws/v1/node/info"};
    }
    if (which == "am_status") {
      std::string base = trackingUrl;
      while (!base.empty() && base.back() == '/') base.pop_back();
      return {base, "/api/v1/status"};
    }
    // The executors' port is in the AM's log; any path is answered (404 for this one).
    std::smatch match;
    const std::string log = amLog();
    EXPECT_TRUE(std::regex_search(log, match, std::regex("executors connect to port ([0-9]+)")));
    return {"http://127.0.0.1:" + match[1].str(), "/api/v1/executors/none"};
  }

  static int portOf(const std::string& baseUrl) {
    return std::stoi(baseUrl.substr(baseUrl.rfind(':') + 1));
  }

  bool anyExecutorLost() {
    auto doc = am->getJson("api/v1/allocation/decisions?limit=1000");
    for (const auto& d : doc["decisions"].GetArray()) {
      if (std::string(d["why"].GetString()).find(" lost") != std::string::npos) return true;
    }
    return false;
  }
};

TEST_P(SlowClientsTest, TwoHundredSlowConnectionsCostNoNodeAndNoExecutor) {
  // Short timers, so that a starved server would show at once: a node is lost after 3 s
  // without a heartbeat; an executor after 3 s without a sync.
  startCluster(2, 5, "3s");
  submit(testing_support::sleepJob("idle", 3, 100, "warm"),
         {{"dynamicAllocation.minExecutors", "2"},
          {"dynamicAllocation.maxExecutors", "3"},
          {"network.timeout", "3s"},
          {"dynamicAllocation.executorIdleTimeout", "120s"}},
         /*session=*/true);
  ASSERT_TRUE(jobEnds("job-1", 60s));
  ASSERT_EQ(jobState("job-1"), "SUCCEEDED");

  const auto [base, path] = target(GetParam());
  testing_support::SlowClients slow("127.0.0.1", portOf(base), 200);
  ASSERT_EQ(slow.open(), 200) << "failed to connect: " << slow.failedToConnect();

  // A job of ~6 s on the executors while the attack lasts: longer than both expiries.
  auto reply = am->postJson("api/v1/jobs", testing_support::sleepJob("under-attack", 60, 250));
  const std::string jobId = reply["id"].GetString();
  rest::HttpClientOptions quick;
  quick.retry.maxAttempts = 1;
  quick.requestTimeout = 1s;
  int answered = 0;
  while (jobState(jobId) == "RUNNING") {
    rest::HttpClient probe(base, quick);
    const rest::HttpResponse response = probe.request("GET", path);
    ASSERT_GT(response.status, 0) << GetParam() << " did not answer within 1 s";
    ++answered;
    ASSERT_EQ(client->metrics().lostNodes, 0) << "a node was declared lost";
  }
  EXPECT_EQ(jobState(jobId), "SUCCEEDED");
  EXPECT_GT(answered, 0);
  EXPECT_EQ(client->metrics().lostNodes, 0);
  EXPECT_EQ(client->metrics().activeNodes, 2);
  EXPECT_FALSE(anyExecutorLost()) << "an executor was declared lost";
  EXPECT_GE(slow.open(), 190) << "the attack was not held";
}

INSTANTIATE_TEST_SUITE_P(EveryServer, SlowClientsTest,
                         ::testing::Values("rm", "nm", "am_executors", "am_status"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tide::deploy
