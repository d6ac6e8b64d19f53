// deploy/rm/cluster_timestamp.h: no two live tide-rm on one host share a cluster timestamp, so no
// two clusters hand out one application id (ids key the AM's staging directory and the history's
// event logs, which all of a user's clusters share).

#include "deploy/rm/cluster_timestamp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "deploy/rm/rm_server.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"

namespace tide::rm {
namespace {

using ::testing::HasSubstr;

// A millisecond far from now and from other test runs: real tide-rm never hold it.
int64_t quietMillisecond() {
  return int64_t{5000000000000} + int64_t{::getpid()} * 1000;
}

int64_t systemMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(ClusterTimestampTest, TwoFirstStartsInOneMillisecondGetTwoTimestamps) {
  const int64_t t = quietMillisecond();
  std::optional<ClusterTimestamp> first = claimClusterTimestamp(0, t);
  const ClusterTimestamp second = claimClusterTimestamp(0, t);
  EXPECT_EQ(first->ms, t);
  EXPECT_EQ(second.ms, t + 1);
  EXPECT_TRUE(first->claim.has_value());
  EXPECT_TRUE(second.claim.has_value());
  EXPECT_EQ(first->warning, "");
  EXPECT_EQ(second.warning, "");
  first.reset();  // that tide-rm ended: its millisecond is free again
  EXPECT_EQ(claimClusterTimestamp(0, t).ms, t);
}

TEST(ClusterTimestampTest, ARestartKeepsItsStoredTimestampAndSaysWhenAnotherHoldsIt) {
  const int64_t t = quietMillisecond() + 100;
  std::optional<ClusterTimestamp> other = claimClusterTimestamp(0, t);
  ASSERT_EQ(other->ms, t);
  const ClusterTimestamp restarted = claimClusterTimestamp(t, t + 50);
  EXPECT_EQ(restarted.ms, t) << "a stored timestamp is the cluster's identity: it is kept";
  EXPECT_FALSE(restarted.claim.has_value());
  EXPECT_THAT(restarted.warning, HasSubstr("holds the cluster timestamp " + std::to_string(t)));
  other.reset();
  const ClusterTimestamp alone = claimClusterTimestamp(t, t + 50);
  EXPECT_EQ(alone.ms, t);
  EXPECT_TRUE(alone.claim.has_value());
  EXPECT_EQ(alone.warning, "");
}

TEST(ClusterTimestampTest, PastItsTriesItUsesNowAndSaysSo) {
  const int64_t t = quietMillisecond() + 200;
  std::vector<ClusterTimestamp> held;
  for (int i = 0; i < 3; ++i) held.push_back(claimClusterTimestamp(0, t));
  ASSERT_EQ(held.back().ms, t + 2);
  const ClusterTimestamp late = claimClusterTimestamp(0, t, 3);
  EXPECT_EQ(late.ms, t);
  EXPECT_FALSE(late.claim.has_value());
  EXPECT_THAT(late.warning, HasSubstr("3 milliseconds from " + std::to_string(t)));
}

// The wiring: a tide-rm that starts while its millisecond (and the next ones) are held by other
// tide-rm takes one that is not.
TEST(ClusterTimestampTest, ATideRmStartedWhileItsMillisecondIsHeldTakesAFreeOne) {
  const int64_t start = systemMs();
  constexpr int kHeld = 200;
  std::vector<HostUniqueName> held;
  for (int64_t ms = start; ms < start + kHeld; ++ms) {
    if (auto claim = HostUniqueName::claim(clusterTimestampName(ms))) {
      held.push_back(std::move(*claim));
    }
  }
  ResourceManagerServerOptions options;
  options.config.port = 0;
  options.serverThreads = 2;
  ResourceManagerServer server(options);
  server.start();
  rest::HttpClient client(server.baseUrl());
  const rest::HttpResponse info = client.request(
      "GET", "/ws/v1/cluster/info", "", {{"Authorization", "Bearer " + server.clusterSecret()}});
  ASSERT_EQ(info.status, 200) << info.body;
  const int64_t taken = rest::clusterInfoFromJson(rest::parseJson(info.body)).id;
  EXPECT_GE(taken, start);
  for (const HostUniqueName& name : held) {
    EXPECT_NE(name.name(), clusterTimestampName(taken)) << "it took a held millisecond";
  }
  EXPECT_FALSE(HostUniqueName::claim(clusterTimestampName(taken)).has_value())
      << "the running tide-rm does not hold its timestamp";
  server.stop();
}

}  // namespace
}  // namespace tide::rm
