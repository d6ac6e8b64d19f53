// Issue 11.4: releases carried by an AM heartbeat that failed are sent again until the RM
// acknowledges them. The AM's ContainerAllocator talks to a real tide-rm state machine
// (ClusterState) through a client that loses heartbeats on demand: before the RM sees the
// request (the RM was unreachable) or after (the answer was lost, so the AM retries the same
// responseId).

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "am/containers/container_allocator.h"
#include "common/clock.h"
#include "deploy/rm/cluster_state.h"
#include "tests/am_runtime/submitted_am.h"

namespace tide::am {
namespace {

using rm::ClusterState;

enum class Loss { kNone, kRequest, kAnswer };

// The AM side of tide-rm's allocate protocol over an in-process ClusterState, as TideRmClient
// speaks it over HTTP.
class FlakyRm {
 public:
  FlakyRm(ClusterState& state, std::string attemptId)
      : state_(state), attemptId_(std::move(attemptId)) {}

  void loseNext(Loss loss) { loss_ = loss; }

  HeartbeatResult heartbeat(const ContainerAsk& ask) {
    const Loss loss = loss_;
    loss_ = Loss::kNone;
    if (loss == Loss::kRequest) throw std::runtime_error("connection refused");
    rest::AllocateRequest request;
    request.responseId = responseId_;
    rest::ResourceRequest any;
    any.priority = ask.priority;
    any.resource = ask.resource;
    any.numContainers = ask.outstanding;
    request.asks.push_back(any);
    request.releases = ask.releases;
    rest::AllocateResponse response = state_.allocate(attemptId_, request);
    if (loss == Loss::kAnswer) throw std::runtime_error("timed out reading the answer");
    responseId_ = response.responseId;
    HeartbeatResult result;
    result.granted = response.allocatedContainers;
    result.completed = response.completedContainers;
    return result;
  }

 private:
  ClusterState& state_;
  std::string attemptId_;
  int64_t responseId_ = 0;
  Loss loss_ = Loss::kNone;
};

class HeartbeatResendTest : public ::testing::TestWithParam<Loss> {
 protected:
  void SetUp() override {
    rm::ClusterStateOptions options;
    options.clusterTimestamp = 1700000000000;
    state_ = std::make_unique<ClusterState>(options, clock_, rm::seededSecretGenerator(1));
    node_ = state_->registerNode({"h1", 1, rest::Resource{8192, 8}}).nodeId;
    nodeBeat();
    const rm::AmLaunch launch = submitApplicationAndTakeItsAmLaunch(*state_);
    ASSERT_FALSE(launch.request.containerId.empty());
    running_[launch.request.containerId] = true;
    attempt_ = launch.request.environment.at("TIDE_APP_ATTEMPT_ID");
    state_->registerApplicationMaster(attempt_, {"127.0.0.1", 1, ""});
    rm_ = std::make_unique<FlakyRm>(*state_, attempt_);
  }

  // tide-nm's heartbeat: it runs what it was given and stops what the RM wants stopped.
  void nodeBeat() {
    rest::NodeHeartbeat beat;
    for (const auto& [id, alive] : running_) {
      beat.containers.push_back({id, alive ? "RUNNING" : "COMPLETE", alive ? 0 : 143, "", {}});
    }
    for (auto it = running_.begin(); it != running_.end();) {
      it = it->second ? std::next(it) : running_.erase(it);
    }
    for (const std::string& id : state_->nodeHeartbeat(node_, beat).containersToStop) {
      running_[id] = false;
    }
    state_->takeOutbox();
  }

  // One turn of the AM's heartbeat loop (ApplicationMaster::heartbeatLoop).
  bool amBeat() {
    ContainerAsk ask = allocator_.nextAsk();
    try {
      AllocatorActions actions = allocator_.onHeartbeat(rm_->heartbeat(ask));
      for (const auto& [container, executorId] : actions.launches) {
        running_[container.id] = true;
        allocator_.onExecutorRegistered(executorId);
      }
      return true;
    } catch (const std::exception&) {
      allocator_.onHeartbeatFailed(ask);
      return false;
    }
  }

  int liveExecutorContainers() const {
    int count = 0;
    for (const rm::ContainerView& c : state_->liveContainers()) count += c.amContainer ? 0 : 1;
    return count;
  }

  ManualClock clock_{0};
  std::unique_ptr<ClusterState> state_;
  std::string node_;
  std::string attempt_;
  std::map<std::string, bool> running_;  // on the node: true running, false just stopped
  std::unique_ptr<FlakyRm> rm_;
  ContainerAllocator allocator_{ContainerAllocatorConfig{{1024, 1}, 1, 100, kInfiniteMs}, clock_};
};

TEST_P(HeartbeatResendTest, ReleasesOfAFailedHeartbeatReachTheRmOnceItRecovers) {
  allocator_.setTarget(3);
  ASSERT_TRUE(amBeat());
  ASSERT_TRUE(amBeat());
  nodeBeat();
  ASSERT_EQ(liveExecutorContainers(), 3);
  ASSERT_EQ(allocator_.snapshot().running, 3);

  // Two executors idle out; the heartbeat carrying their releases fails.
  allocator_.setTarget(1);
  ASSERT_TRUE(allocator_.release("e1"));
  ASSERT_TRUE(allocator_.release("e2"));
  rm_->loseNext(GetParam());
  EXPECT_FALSE(amBeat());
  // The RM is back: the next heartbeat carries the releases again, the node stops them.
  ASSERT_TRUE(amBeat());
  nodeBeat();
  nodeBeat();
  EXPECT_EQ(liveExecutorContainers(), 1);
  for (const rm::ContainerOutcome& outcome : state_->completedContainers()) {
    EXPECT_EQ(outcome.exitStatus, rest::exit_status::kAborted) << outcome.containerId;
  }
  EXPECT_EQ(state_->completedContainers().size(), 2u);
  // The AM hears of the completions and stops sending the releases.
  ASSERT_TRUE(amBeat());
  EXPECT_EQ(allocator_.snapshot().releasing, 0);
  EXPECT_TRUE(allocator_.nextAsk().releases.empty());
}

INSTANTIATE_TEST_SUITE_P(Losses, HeartbeatResendTest,
                         ::testing::Values(Loss::kRequest, Loss::kAnswer), [](const auto& info) {
                           return info.param == Loss::kRequest ? std::string("RequestLost")
                                                               : std::string("AnswerLost");
                         });

}  // namespace
}  // namespace tide::am
