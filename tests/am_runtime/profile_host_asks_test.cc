// Container placement per resource profile, through tide-rm's allocate protocol: the AM's
// ContainerAllocator places each profile's requests from its own pending-task locality (as
// Spark's YarnAllocator does per ResourceProfile), TideRmClient turns them into host asks at
// that profile's priority and size, and a real tide-rm state machine (ClusterState) grants
// them on the hosts named.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "am/containers/container_allocator.h"
#include "am/containers/tide_rm_client.h"
#include "common/clock.h"
#include "deploy/rm/cluster_state.h"
#include "tests/am_runtime/submitted_am.h"

namespace tide::am {
namespace {

using rm::ClusterState;

class ProfileHostAsksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rm::ClusterStateOptions options;
    options.clusterTimestamp = 1700000000000;
    state_ = std::make_unique<ClusterState>(options, clock_, rm::seededSecretGenerator(1));
    for (const char* host : {"h1", "h2", "h3"}) {
      nodes_.push_back(state_->registerNode({host, 1, rest::Resource{16384, 16}}).nodeId);
      state_->nodeHeartbeat(nodes_.back(), {});  // ready for containers
    }
    const rm::AmLaunch launch = submitApplicationAndTakeItsAmLaunch(*state_);
    ASSERT_FALSE(launch.request.containerId.empty());
    attempt_ = launch.request.environment.at("TIDE_APP_ATTEMPT_ID");
    state_->registerApplicationMaster(attempt_, {"127.0.0.1", 1, ""});
  }

  // One turn of the AM's heartbeat loop over the in-process RM; returns the containers granted
  // by node, for each profile.
  std::map<int, std::map<std::string, int>> amBeat() {
    ContainerAsk ask = allocator_.nextAsk();
    rest::AllocateRequest request = client_.allocateRequest(ask);
    request.responseId = responseId_;
    rest::AllocateResponse response = state_->allocate(attempt_, request);
    responseId_ = response.responseId;
    HeartbeatResult result;
    result.granted = response.allocatedContainers;
    AllocatorActions actions = allocator_.onHeartbeat(result);
    std::map<int, std::map<std::string, int>> byProfile;
    for (const auto& [container, executorId] : actions.launches) {
      ++byProfile[allocator_.profileOf(executorId)][container.nodeId];
    }
    return byProfile;
  }

  ManualClock clock_{0};
  std::unique_ptr<ClusterState> state_;
  std::vector<std::string> nodes_;
  std::string attempt_;
  int64_t responseId_ = 0;
  TideRmClient client_{TideRmAttempt{"http://127.0.0.1:1", "unused", "unused"}};
  ContainerAllocator allocator_{ContainerAllocatorConfig{{1024, 1}, 1, 100, kInfiniteMs}, clock_};
};

// Spark (YarnAllocator, LocalityPreferredContainerPlacementStrategy per ResourceProfile): each
// profile's containers go where that profile's own tasks want them.
TEST_F(ProfileHostAsksTest, EachProfilesContainersAreGrantedOnTheHostsItsOwnTasksPrefer) {
  allocator_.addProfile(1, {4096, 4});
  allocator_.setTargets({{0, 2}, {1, 3}});
  // The default profile's tasks are on h1, profile 1's on h3.
  allocator_.setLocalityHints(
      {{0, LocalityHints{{{nodes_[0], 2}}, 2, 1}}, {1, LocalityHints{{{nodes_[2], 12}}, 12, 4}}});
  const auto granted = amBeat();
  EXPECT_EQ(granted.at(0), (std::map<std::string, int>{{nodes_[0], 2}}));
  EXPECT_EQ(granted.at(1), (std::map<std::string, int>{{nodes_[2], 3}}));
}

TEST_F(ProfileHostAsksTest, AHostAProfileNoLongerWantsIsWithdrawn) {
  allocator_.addProfile(1, {4096, 4});
  // The profile's ask names h2, then its tasks' preference moves to h3 before any grant: the
  // RM keeps an ask until it is stated as 0, so the next request withdraws h2's.
  allocator_.setTargets({{1, 1}});
  allocator_.setLocalityHints({{1, LocalityHints{{{nodes_[1], 4}}, 4, 4}}});
  ContainerAsk ask = allocator_.nextAsk();
  rest::AllocateRequest first = client_.allocateRequest(ask);
  allocator_.setLocalityHints({{1, LocalityHints{{{nodes_[2], 4}}, 4, 4}}});
  ask = allocator_.nextAsk();
  rest::AllocateRequest second = client_.allocateRequest(ask);
  std::map<std::string, int> profileAsks;
  for (const rest::ResourceRequest& r : second.asks) {
    if (r.priority == 2) profileAsks[r.resourceName] = r.numContainers;
  }
  EXPECT_EQ(profileAsks, (std::map<std::string, int>{{nodes_[1], 0}, {nodes_[2], 1}, {"*", 0}}))
      << "h2 withdrawn, h3 asked, none anywhere";
  (void)first;
}

}  // namespace
}  // namespace tide::am
