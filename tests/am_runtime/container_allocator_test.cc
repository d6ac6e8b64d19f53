#include "am/containers/container_allocator.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

namespace tide::am {
namespace {

namespace es = rest::exit_status;

class ContainerAllocatorTest : public ::testing::Test {
 protected:
  ContainerAllocatorTest() : allocator(config(), clock) {}

  static ContainerAllocatorConfig config() {
    ContainerAllocatorConfig c;
    c.executorResource = {512, 2};
    c.maxNumExecutorFailures = 2;
    c.failuresValidityInterval = 60000;
    return c;
  }

  static rest::Container container(int n) {
    rest::Container c;
    c.id = "container_" + std::to_string(n);
    c.nodeId = "node" + std::to_string(n % 2) + ":8042";
    c.resource = {512, 2};
    return c;
  }

  AllocatorActions grant(std::vector<int> ids) {
    HeartbeatResult result;
    for (int id : ids) result.granted.push_back(container(id));
    return allocator.onHeartbeat(result);
  }

  AllocatorActions complete(int id, int exitStatus, const std::string& diagnostics = "") {
    HeartbeatResult result;
    result.completed.push_back(
        {"container_" + std::to_string(id), exitStatus, "COMPLETE", diagnostics});
    return allocator.onHeartbeat(result);
  }

  // After executor e1's launch in container_1 failed: e1 is lost (as registered or not), nothing
  // is starting, and the container goes back in the next ask.
  void expectLostWithItsContainer(const AllocatorActions& actions, bool wasRegistered) {
    ASSERT_EQ(actions.lost.size(), 1u);
    EXPECT_EQ(actions.lost[0].wasRegistered, wasRegistered);
    EXPECT_EQ(allocator.snapshot().starting, 0);
    EXPECT_EQ(allocator.nextAsk().releases, (std::vector<std::string>{"container_1"}));
  }

  ManualClock clock{0};
  ContainerAllocator allocator;
};

TEST_F(ContainerAllocatorTest, AsksForTheMissingExecutorsOnly) {
  allocator.setTarget(3);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 3);
  EXPECT_EQ(ask.resource.memoryMb, 512);
  EXPECT_EQ(ask.resource.vCores, 2);
  EXPECT_EQ(allocator.nextAsk().outstanding, 3) << "the same total again: nothing new is missing";
  AllocatorActions actions = grant({1});
  ASSERT_EQ(actions.launches.size(), 1u);
  EXPECT_EQ(actions.launches[0].second, "e1");
  EXPECT_EQ(allocator.nextAsk().outstanding, 2);
  allocator.setTarget(5);
  EXPECT_EQ(allocator.nextAsk().outstanding, 4) << "target 5 - 1 starting";
}

TEST_F(ContainerAllocatorTest, LoweringTheTargetCancelsRequestsButNeverExecutors) {
  allocator.setTarget(4);
  allocator.nextAsk();
  grant({1, 2});
  allocator.onExecutorRegistered("e1");
  allocator.onExecutorRegistered("e2");
  allocator.setTarget(1);
  std::optional<AskChange> change;
  ContainerAsk ask = allocator.nextAsk(&change);
  EXPECT_EQ(ask.outstanding, 0);
  EXPECT_TRUE(ask.releases.empty()) << "running executors are not released for a lower target";
  EXPECT_EQ(allocator.snapshot().running, 2);
  ASSERT_TRUE(change.has_value());
  EXPECT_TRUE(change->cancelled);
  EXPECT_EQ(change->why.rfind("cancelling 2 pending container requests", 0), 0u) << change->why;
}

TEST_F(ContainerAllocatorTest, SurplusGrantsAreReleased) {
  allocator.setTarget(1);
  allocator.nextAsk();
  AllocatorActions actions = grant({1, 2});
  EXPECT_EQ(actions.launches.size(), 1u);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.releases, (std::vector<std::string>{"container_2"}));
  // Its completion is ours, not a lost executor.
  EXPECT_TRUE(complete(2, es::kAborted).lost.empty());
}

TEST_F(ContainerAllocatorTest, ExitsAreClassifiedByWhoseFaultTheyAre) {
  EXPECT_FALSE(classifyExit(es::kAborted, "").executorFailure);
  EXPECT_FALSE(classifyExit(es::kPreempted, "").executorFailure);
  EXPECT_FALSE(classifyExit(es::kKilledByResourceManager, "").executorFailure);
  EXPECT_FALSE(classifyExit(es::kKilledByAppMaster, "").executorFailure);
  EXPECT_FALSE(classifyExit(0, "").executorFailure);
  EXPECT_TRUE(classifyExit(es::kKilledExceededPmem, "").executorFailure);
  EXPECT_EQ(classifyExit(es::kKilledExceededPmem, "").cause, "memory");
  EXPECT_TRUE(classifyExit(137, "killed by signal 9").executorFailure);
  EXPECT_EQ(classifyExit(1, "").cause, "exit");
}

TEST_F(ContainerAllocatorTest, ALostExecutorIsReportedAndReplaced) {
  allocator.setTarget(2);
  allocator.nextAsk();
  grant({1, 2});
  allocator.onExecutorRegistered("e1");
  allocator.onExecutorRegistered("e2");
  EXPECT_EQ(allocator.nextAsk().outstanding, 0);
  AllocatorActions actions = complete(1, 137, "killed by signal 9");
  ASSERT_EQ(actions.lost.size(), 1u);
  EXPECT_EQ(actions.lost[0].executorId, "e1");
  EXPECT_TRUE(actions.lost[0].wasRegistered);
  EXPECT_TRUE(actions.lost[0].exit.executorFailure);
  EXPECT_NE(actions.lost[0].reason.find("killed by signal 9"), std::string::npos);
  EXPECT_FALSE(actions.failApplication);
  EXPECT_EQ(allocator.nextAsk().outstanding, 1) << "the target stands: a replacement is asked";
  AllocatorActions replacement = grant({3});
  ASSERT_EQ(replacement.launches.size(), 1u);
  EXPECT_EQ(replacement.launches[0].second, "e3") << "a new id, never a reused one";
}

// Spark's ApplicationMaster fails the application once numExecutorsFailed >=
// executor.maxNumFailures (2 here), counting only exits caused by the application.
TEST_F(ContainerAllocatorTest, MaxNumExecutorFailuresFailsTheApplicationWhenReached) {
  allocator.setTarget(5);
  allocator.nextAsk();
  grant({1, 2, 3, 4, 5});
  EXPECT_FALSE(complete(1, es::kAborted).failApplication) << "not the app's fault: not counted";
  EXPECT_FALSE(complete(2, es::kPreempted).failApplication) << "not the app's fault: not counted";
  EXPECT_FALSE(complete(3, es::kKilledByAppMaster).failApplication) << "the AM's own kill";
  EXPECT_FALSE(complete(4, 1).failApplication) << "1 of 2";
  AllocatorActions second = complete(5, es::kKilledExceededPmem);
  ASSERT_TRUE(second.failApplication) << "2 of 2: reached";
  EXPECT_NE(second.failApplication->find("Max number of executor failures (2)"), std::string::npos);
  EXPECT_NE(second.failApplication->find("container_5"), std::string::npos)
      << "the diagnostics name the cause";
}

TEST_F(ContainerAllocatorTest, FailuresOlderThanTheValidityIntervalAreForgotten) {
  allocator.setTarget(3);
  allocator.nextAsk();
  grant({1, 2, 3});
  EXPECT_FALSE(complete(1, 1).failApplication);
  clock.set(60001);
  EXPECT_FALSE(complete(2, 1).failApplication) << "the first is more than 60s old";
  EXPECT_TRUE(complete(3, 1).failApplication) << "two within 60s";
}

TEST_F(ContainerAllocatorTest, ReleasingAnIdleExecutorGivesItsContainerBack) {
  allocator.setTarget(1);
  allocator.nextAsk();
  grant({1});
  allocator.onExecutorRegistered("e1");
  EXPECT_TRUE(allocator.release("e1"));
  EXPECT_FALSE(allocator.release("e1"));
  allocator.setTarget(0);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.releases, (std::vector<std::string>{"container_1"}));
  EXPECT_TRUE(complete(1, es::kAborted).lost.empty());
}

TEST_F(ContainerAllocatorTest, ALaunchFailureReleasesTheContainer) {
  allocator.setTarget(1);
  allocator.nextAsk();
  grant({1});
  expectLostWithItsContainer(allocator.onLaunchFailed("e1", "node said 401"),
                             /*wasRegistered=*/false);
}

// Spark counts toward executor.maxNumFailures only exits attributable to the application; a
// container that could not be started is the cluster's (YarnAllocator releases it uncounted).
TEST_F(ContainerAllocatorTest, LaunchFailuresAreNotExecutorFailures) {
  allocator.setTarget(3);
  allocator.nextAsk();
  grant({1, 2, 3});
  for (const char* executor : {"e1", "e2", "e3"}) {
    AllocatorActions actions = allocator.onLaunchFailed(executor, "connection refused");
    ASSERT_EQ(actions.lost.size(), 1u);
    EXPECT_FALSE(actions.lost[0].exit.executorFailure);
    EXPECT_EQ(actions.lost[0].exit.cause, "launch");
    EXPECT_FALSE(actions.failApplication) << executor;
  }
  EXPECT_EQ(allocator.snapshot().recentFailures, 0);
}

TEST_F(ContainerAllocatorTest, ALaunchThatFailsAfterItsExecutorRegisteredLosesTheExecutor) {
  // The node started the container and died before it answered the launch call: the executor
  // registered meanwhile, and whatever runs on it must be counted lost (not left running).
  allocator.setTarget(1);
  allocator.nextAsk();
  grant({1});
  allocator.onExecutorRegistered("e1");
  expectLostWithItsContainer(allocator.onLaunchFailed("e1", "connection reset by peer"),
                             /*wasRegistered=*/true);
}

TEST_F(ContainerAllocatorTest, TheWaitForContainersIsTimedFromTheRequest) {
  allocator.setTarget(2);
  clock.set(1000);
  allocator.nextAsk();
  EXPECT_EQ(allocator.snapshot().outstandingSince, 1000);
  clock.set(5000);
  allocator.onHeartbeat({});
  EXPECT_EQ(allocator.snapshot().outstandingSince, 1000) << "an empty answer changes nothing";
  grant({1});
  EXPECT_EQ(allocator.snapshot().outstandingSince, 5000);
  grant({2});
  EXPECT_EQ(allocator.snapshot().outstandingSince, -1);
}

TEST(DefaultMaxFailuresTest, IsTwiceTheMaximumAndAtLeastThree) {
  EXPECT_EQ(defaultMaxNumExecutorFailures(1), 3);
  EXPECT_EQ(defaultMaxNumExecutorFailures(8), 16);
  EXPECT_EQ(defaultMaxNumExecutorFailures(INT_MAX), INT_MAX);
}

// Stage-level executor shapes: each resource profile's containers are asked at its own size and
// priority, and a grant is matched to the profile of its size.
TEST_F(ContainerAllocatorTest, AsksForEachProfilesShapeAndMatchesGrantsBySize) {
  allocator.addProfile(1, {2048, 4});
  allocator.setTargets({{0, 1}, {1, 2}});
  EXPECT_EQ(allocator.target(), 3);
  const ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 1);
  EXPECT_EQ(ask.resource.memoryMb, 512);
  ASSERT_EQ(ask.profileAsks.size(), 1u);
  EXPECT_EQ(ask.profileAsks[0].profileId, 1);
  EXPECT_EQ(ask.profileAsks[0].resource.memoryMb, 2048);
  EXPECT_EQ(ask.profileAsks[0].resource.vCores, 4);
  EXPECT_EQ(ask.profileAsks[0].priority, 2);  // the allocator's priority 1 + the profile id
  EXPECT_EQ(ask.profileAsks[0].outstanding, 2);

  HeartbeatResult result;
  rest::Container wide = container(10);
  wide.resource = {2048, 4};
  result.granted = {wide, container(11)};
  const AllocatorActions actions = allocator.onHeartbeat(result);
  ASSERT_EQ(actions.launches.size(), 2u);
  EXPECT_EQ(allocator.profileOf(actions.launches[0].second), 1);
  EXPECT_EQ(allocator.profileOf(actions.launches[1].second), 0);
  const AllocatorSnapshot s = allocator.snapshot();
  EXPECT_EQ(s.profiles.at(1).outstanding, 1);
  EXPECT_EQ(s.profiles.at(1).starting, 1);
  EXPECT_EQ(s.profiles.at(0).outstanding, 0);

  // A second default-size grant is surplus for the default profile even though profile 1
  // still waits for one: it is not of profile 1's size.
  const AllocatorActions surplus = grant({12});
  EXPECT_TRUE(surplus.launches.empty());
  EXPECT_EQ(allocator.snapshot().profiles.at(1).outstanding, 1);

  // Lowering profile 1's target cancels its pending request only.
  allocator.setTargets({{1, 1}});
  const ContainerAsk lowered = allocator.nextAsk();
  EXPECT_EQ(lowered.profileAsks.at(0).outstanding, 0);
  EXPECT_EQ(lowered.outstanding, 0);
}

}  // namespace
}  // namespace tide::am
