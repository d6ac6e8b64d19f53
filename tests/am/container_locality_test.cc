// Locality-preferred container requests (Spark's LocalityPreferredContainerPlacementStrategy,
// am/containers/container_placement.h): the strategy with the numbers of Spark's
// ContainerPlacementStrategySuite, and the allocator's use of it.

#include <gtest/gtest.h>

#include "am/containers/container_allocator.h"
#include "am/containers/container_placement.h"

namespace tide::am {
namespace {

using HostAsks = std::vector<std::pair<std::string, int>>;
using Localities = std::vector<std::vector<std::string>>;
using Hosts = std::vector<std::string>;

// Spark's suite: 15 locality-aware tasks, executors of 4 tasks each (so 4 executors for them).
PlacementInput sparkSuiteInput(int containers, std::map<std::string, int64_t> tasksByHost,
                               std::map<std::string, int> executorsByHost) {
  PlacementInput input;
  input.containers = containers;
  input.localityAwareTasks = 15;
  input.tasksPerExecutor = 4;
  input.tasksByHost = std::move(tasksByHost);
  input.executorsByHost = std::move(executorsByHost);
  return input;
}

TEST(ContainerPlacement, EnoughResourceAndNoMatchedExistingContainers) {
  // Executors on host1 and host2; the tasks want host3-5 (15 : 15 : 10).
  const auto input = sparkSuiteInput(3, {{"host3", 15}, {"host4", 15}, {"host5", 10}},
                                     {{"host1", 1}, {"host2", 1}});
  EXPECT_EQ(expectedHostToContainerCount(input),
            (std::map<std::string, int>{{"host3", 2}, {"host4", 2}, {"host5", 1}}));
  EXPECT_EQ(
      localityOfRequestedContainers(input),
      (Localities{{"host3", "host4", "host5"}, {"host3", "host4", "host5"}, {"host3", "host4"}}));
}

TEST(ContainerPlacement, EnoughResourceAndPartiallyMatchedContainers) {
  // Two executors on host1 and one on host2 cover part of what the tasks want.
  const auto input = sparkSuiteInput(3, {{"host1", 15}, {"host2", 15}, {"host3", 10}},
                                     {{"host1", 2}, {"host2", 1}});
  EXPECT_EQ(expectedHostToContainerCount(input),
            (std::map<std::string, int>{{"host1", 0}, {"host2", 1}, {"host3", 1}}));
  EXPECT_EQ(localityOfRequestedContainers(input),
            (Localities{{}, {"host2", "host3"}, {"host2", "host3"}}));
}

TEST(ContainerPlacement, LimitedResourceAndPartiallyMatchedContainers) {
  const auto input = sparkSuiteInput(1, {{"host1", 15}, {"host2", 15}, {"host3", 10}},
                                     {{"host1", 2}, {"host2", 1}});
  EXPECT_EQ(localityOfRequestedContainers(input), (Localities{{"host2", "host3"}}));
}

TEST(ContainerPlacement, FullyMatchedContainers) {
  const auto input = sparkSuiteInput(3, {{"host1", 15}, {"host2", 15}, {"host3", 10}},
                                     {{"host1", 2}, {"host2", 2}, {"host3", 1}});
  EXPECT_EQ(localityOfRequestedContainers(input), (Localities{{}, {}, {}}));
}

TEST(ContainerPlacement, NoLocalityPreference) {
  PlacementInput input;
  input.containers = 1;
  input.executorsByHost = {{"host1", 1}, {"host2", 1}};
  EXPECT_EQ(localityOfRequestedContainers(input), (Localities{{}}));
}

TEST(ContainerPlacement, ConsidersTheLocalitiesOfPendingRequests) {
  auto input = sparkSuiteInput(1, {{"host1", 15}, {"host2", 15}, {"host3", 10}},
                               {{"host1", 2}, {"host2", 1}});
  input.pendingRequests = {{"host2", "host3"}, {"host1", "host4"}};
  EXPECT_EQ(localityOfRequestedContainers(input), (Localities{{"host3"}}));
}

TEST(ContainerPlacement, MultiHostRequestsMapToOneHostEachSpreadOverThem) {
  EXPECT_EQ(
      hostAsksFor({{"host3", "host4", "host5"}, {"host3", "host4", "host5"}, {"host3", "host4"}}),
      (HostAsks{{"host3", 1}, {"host4", 1}, {"host5", 1}}));
  EXPECT_EQ(hostAsksFor({{}, {"host2", "host3"}, {"host2", "host3"}}),
            (HostAsks{{"host2", 1}, {"host3", 1}}));
  EXPECT_TRUE(hostAsksFor({{}, {}}).empty());
}

class ContainerLocalityTest : public ::testing::Test {
 protected:
  ManualClock clock;
  ContainerAllocator allocator{ContainerAllocatorConfig{}, clock};
};

TEST_F(ContainerLocalityTest, RequestsAreSpreadOverThePreferredNodesInProportion) {
  allocator.setTarget(5);
  // 12 tasks prefer n1 and 6 n2 (each one node), 2 per executor: 9 executors wanted there,
  // 6 on n1 and 3 on n2, so all 5 requests prefer a node; n1 is named in all 5, n2 in 3
  // (Spark: 3 x {n1, n2}, 2 x {n1}), which one node per request maps to 3 on n1, 2 on n2.
  allocator.setLocalityHints({{"n1", 12}, {"n2", 6}}, 18, 2);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 5);
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 3}, {"n2", 2}}));
}

TEST_F(ContainerLocalityTest, ExecutorsAlreadyOnANodeAreSubtracted) {
  allocator.setTarget(2);
  ContainerAsk first = allocator.nextAsk();
  HeartbeatResult granted;
  granted.granted = {rest::Container{"c1", "n1", "n1:0", {1024, 1}, ""},
                     rest::Container{"c2", "n1", "n1:0", {1024, 1}, ""}};
  allocator.onHeartbeat(granted);
  // 4 tasks on n1 and 4 on n2, 1 per executor: 4 wanted on each; n1 has 2 already.
  allocator.setTarget(6);
  allocator.setLocalityHints({{"n1", 4}, {"n2", 4}}, 8, 1);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 4);
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 2}, {"n2", 2}}))
      << "4 requests: n2 named in all, n1 in 2 of them";
  (void)first;
}

TEST_F(ContainerLocalityTest, RequestsBeyondWhatTheNodesNeedGoAnywhere) {
  allocator.setTarget(5);
  allocator.setLocalityHints({{"n1", 1}, {"n2", 1}}, 2, 1);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 5);
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 1}, {"n2", 1}})) << "3 anywhere";
  allocator.setLocalityHints({}, 0, 1);
  EXPECT_TRUE(allocator.nextAsk().hostAsks.empty()) << "without hints everything goes anywhere";
}

// Spark's YarnAllocator places each ResourceProfile's requests with
// LocalityPreferredContainerPlacementStrategy from that profile's own hostToLocalTaskCount,
// numLocalityAwareTasks and maxTasksPerExecutor, less that profile's own executors per host
// (allocatedHostToContainersMapPerRPId).
TEST_F(ContainerLocalityTest, EachProfilesRequestsFollowItsOwnTasksAndExecutors) {
  allocator.addProfile(1, {4096, 4});
  allocator.setTargets({{0, 2}, {1, 2}});
  ContainerAsk first = allocator.nextAsk();
  HeartbeatResult granted;
  // Two default executors, both on n2.
  granted.granted = {rest::Container{"c1", "n2", "n2:0", {1024, 1}, ""},
                     rest::Container{"c2", "n2", "n2:0", {1024, 1}, ""}};
  allocator.onHeartbeat(granted);
  ASSERT_EQ(allocator.snapshot().profiles.at(1).outstanding, 2);
  allocator.setTargets({{0, 4}, {1, 4}});
  // The default profile's tasks prefer n1; profile 1's 16 tasks (4 per executor) prefer n2
  // and n3 equally: 4 executors wanted, 2 on each. The default executors on n2 are not
  // profile 1's, so they do not count against n2's share.
  allocator.setLocalityHints(
      {{0, LocalityHints{{{"n1", 2}}, 2, 1}}, {1, LocalityHints{{{"n2", 16}, {"n3", 16}}, 16, 4}}});
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 2);
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 2}}));
  ASSERT_EQ(ask.profileAsks.size(), 1u);
  EXPECT_EQ(ask.profileAsks[0].outstanding, 4);
  EXPECT_EQ(ask.profileAsks[0].hostAsks, (HostAsks{{"n2", 2}, {"n3", 2}}));

  // Two profile-1 executors arrive on n2: its share there is taken, so its requests go to n3.
  HeartbeatResult wide;
  wide.granted = {rest::Container{"c3", "n2", "n2:0", {4096, 4}, ""},
                  rest::Container{"c4", "n2", "n2:0", {4096, 4}, ""}};
  allocator.onHeartbeat(wide);
  ask = allocator.nextAsk();
  ASSERT_EQ(ask.profileAsks.size(), 1u);
  EXPECT_EQ(ask.profileAsks[0].outstanding, 2);
  EXPECT_EQ(ask.profileAsks[0].hostAsks, (HostAsks{{"n3", 2}}));
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 2}})) << "the default profile's own executors are on n2";

  // A profile without hints asks anywhere.
  allocator.setLocalityHints({{0, LocalityHints{{{"n1", 2}}, 2, 1}}});
  EXPECT_TRUE(allocator.nextAsk().profileAsks.at(0).hostAsks.empty());
  (void)first;
}

}  // namespace
}  // namespace tide::am
