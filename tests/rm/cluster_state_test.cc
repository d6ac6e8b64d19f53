// ClusterState without sockets: scheduling (FIFO, AM first, spread out vs packed, locality,
// no over-commit), the ask protocol, attempts and their retries, node expiry, kill and
// release, each with its YARN exit status. Node managers are simulated by the fixture; time is
// a ManualClock and randomness is seeded.

#include "deploy/rm/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "deploy/rm/rm_error.h"

namespace tide::rm {
namespace {

using ::testing::HasSubstr;
namespace exit_status = rest::exit_status;

constexpr int64_t kClusterTimestamp = 1700000000000;

rest::ResourceRequest ask(int numContainers, int memoryMb = 256, int vCores = 1,
                          std::string resourceName = "*", bool relaxLocality = true,
                          int priority = 1) {
  rest::ResourceRequest request;
  request.priority = priority;
  request.resource = Resource{memoryMb, vCores};
  request.numContainers = numContainers;
  request.resourceName = std::move(resourceName);
  request.relaxLocality = relaxLocality;
  return request;
}

class ClusterStateTest : public ::testing::Test {
 protected:
  void create(RmConfig config = RmConfig{}, uint64_t seed = 7) {
    ClusterStateOptions options;
    options.config = config;
    options.clusterTimestamp = kClusterTimestamp;
    options.placementSeed = seed;
    state_ = std::make_unique<ClusterState>(options, clock_, seededSecretGenerator(seed));
    state_->setRmAddress("http://127.0.0.1:8088");
  }

  ClusterState& state() { return *state_; }

  std::string addNode(const std::string& host, int port, int vCores, int64_t memoryMb) {
    const auto response = state().registerNode({host, port, Resource{memoryMb, vCores}});
    running_[response.nodeId];
    // Registration completes with the node's first heartbeat: only then may it get containers.
    heartbeat(response.nodeId);
    return response.nodeId;
  }

  // Nodes h1:1 .. h<count>:<count>, all of one size.
  void addNodes(int count, int vCores, int64_t memoryMb) {
    for (int i = 1; i <= count; ++i) addNode("h" + std::to_string(i), i, vCores, memoryMb);
  }

  std::string submit(int amMemoryMb = 512, int amVCores = 1, int maxAttempts = 0,
                     std::string name = "app") {
    const std::string id = state().newApplication().applicationId;
    rest::ApplicationSubmission submission;
    submission.applicationId = id;
    submission.applicationName = std::move(name);
    submission.command = "run-am";
    submission.environment = {{"JOB", "wordcount"}};
    submission.resource = Resource{amMemoryMb, amVCores};
    submission.maxAppAttempts = maxAttempts;
    submission.historyUrl = historyUrl_;
    state().submitApplication(submission);
    collectOutbox();
    return id;
  }

  // Moves the state's network work into the fixture, as the REST layer would carry it out.
  void collectOutbox() {
    Outbox outbox = state().takeOutbox();
    for (AmLaunch& launch : outbox.launches) launches_.push_back(std::move(launch));
    for (ContainerStopOrder& stop : outbox.stops) stops_.push_back(std::move(stop));
  }

  // The launch the RM asked for the application's current AM container, started on its node.
  const AmLaunch* startAm(const std::string& appId) {
    collectOutbox();
    for (const AmLaunch& launch : launches_) {
      if (launch.request.applicationId == appId &&
          launch.request.environment.at("TIDE_APP_ATTEMPT_ID") ==
              state().applicationReport(appId).currentAppAttemptId) {
        setRunning(launch.nodeId, launch.request.containerId);
        return &launch;
      }
    }
    return nullptr;
  }

  std::string registerAm(const std::string& appId) {
    const AmLaunch* launch = startAm(appId);
    EXPECT_NE(launch, nullptr) << "no AM container was placed for " << appId;
    if (launch == nullptr) return "";
    const std::string attemptId = launch->request.environment.at("TIDE_APP_ATTEMPT_ID");
    state().registerApplicationMaster(attemptId, {"127.0.0.1", 4040, "http://am"});
    return attemptId;
  }

  // One node h1 (4 cores, 8 GB) and one application whose AM registered on it.
  struct OneApplication {
    std::string node;
    std::string app;
    std::string attempt;
  };
  OneApplication startOneApplication(RmConfig config = RmConfig{}) {
    create(config);
    OneApplication one;
    one.node = addNode("h1", 1, 4, 8192);
    one.app = submit();
    one.attempt = registerAm(one.app);
    return one;
  }

  // `nodes` nodes of 2 cores and 4 GB that are lost after a second without a heartbeat, and an
  // application whose AM registered on the first of them to get it.
  struct AmOnExpiringNodes {
    std::string app;
    std::string attempt;
    std::string amNode;
  };
  AmOnExpiringNodes startAmOnExpiringNodes(int nodes) {
    RmConfig config;
    config.nodeExpiryMs = 1000;
    create(config);
    addNodes(nodes, 2, 4096);
    AmOnExpiringNodes started;
    started.app = submit();
    started.attempt = registerAm(started.app);
    started.amNode = launches_.at(0).nodeId;
    return started;
  }

  rest::AllocateResponse allocate(const std::string& attemptId,
                                  std::vector<rest::ResourceRequest> asks = {},
                                  std::vector<std::string> releases = {}) {
    rest::AllocateRequest request;
    request.responseId = responseIds_[attemptId];
    request.asks = std::move(asks);
    request.releases = std::move(releases);
    rest::AllocateResponse response = state().allocate(attemptId, request);
    responseIds_[attemptId] = response.responseId;
    for (const rest::Container& container : response.allocatedContainers) {
      setRunning(container.nodeId, container.id);  // the AM starts what it gets
    }
    collectOutbox();
    return response;
  }

  void setRunning(const std::string& nodeId, const std::string& containerId) {
    running_[nodeId][containerId] = {containerId, "RUNNING", 0, "", {}};
  }

  // The process of a container ends on its node with `exitCode`.
  void exitContainer(const std::string& containerId, int exitCode, std::string diagnostics = "") {
    for (auto& [nodeId, containers] : running_) {
      auto found = containers.find(containerId);
      if (found != containers.end()) {
        found->second.state = "COMPLETE";
        found->second.exitStatus = exitCode;
        found->second.diagnostics = std::move(diagnostics);
        return;
      }
    }
    ADD_FAILURE() << containerId << " is not on any node";
  }

  // One heartbeat from a simulated node manager: it reports everything it knows, forgets what
  // it reported complete, and stops (exit 143, SIGTERM) what the RM tells it to.
  rest::NodeHeartbeatResponse heartbeat(const std::string& nodeId) {
    rest::NodeHeartbeat heartbeat;
    auto& containers = running_[nodeId];
    for (const auto& [id, status] : containers) heartbeat.containers.push_back(status);
    for (auto it = containers.begin(); it != containers.end();) {
      it = it->second.state == "COMPLETE" ? containers.erase(it) : std::next(it);
    }
    rest::NodeHeartbeatResponse response = state().nodeHeartbeat(nodeId, heartbeat);
    for (const std::string& id : response.containersToStop) {
      auto found = containers.find(id);
      if (found != containers.end()) found->second = {id, "COMPLETE", 143, "stopped", {}};
    }
    collectOutbox();
    return response;
  }

  void heartbeatAll() {
    for (int round = 0; round < 2; ++round) {  // the second round reports what was stopped
      for (const auto& [nodeId, containers] : running_) heartbeat(nodeId);
    }
  }

  std::map<std::string, int> containersPerNode(const rest::AllocateResponse& response) {
    std::map<std::string, int> counts;
    for (const rest::Container& container : response.allocatedContainers) {
      ++counts[container.nodeId];
    }
    return counts;
  }

  std::optional<ContainerOutcome> outcomeOf(const std::string& containerId) {
    for (const ContainerOutcome& outcome : state().completedContainers()) {
      if (outcome.containerId == containerId) return outcome;
    }
    return std::nullopt;
  }

  void expectNoOverCommit() {
    std::map<std::string, Resource> used;
    for (const ContainerView& container : state().liveContainers()) {
      used[container.nodeId].memoryMb += container.resource.memoryMb;
      used[container.nodeId].vCores += container.resource.vCores;
    }
    for (const rest::NodeReport& node : state().nodeReports()) {
      EXPECT_GE(node.availMemoryMB, 0) << node.id;
      EXPECT_GE(node.availableVirtualCores, 0) << node.id;
      EXPECT_EQ(used[node.id].memoryMb, node.usedMemoryMB) << node.id;
      EXPECT_EQ(used[node.id].vCores, node.usedVirtualCores) << node.id;
    }
  }

  ManualClock clock_{1000};
  std::string historyUrl_;  // what submit() gives as the submission's history-url
  std::unique_ptr<ClusterState> state_;
  std::map<std::string, std::map<std::string, rest::ContainerStatus>> running_;
  std::map<std::string, int64_t> responseIds_;
  std::vector<AmLaunch> launches_;
  std::vector<ContainerStopOrder> stops_;
};

TEST_F(ClusterStateTest, IdsFollowYarn) {
  create();
  addNode("h1", 1, 4, 4096);
  const std::string app = submit();
  EXPECT_EQ(app, "application_1700000000000_0001");
  const std::string attempt = registerAm(app);
  EXPECT_EQ(attempt, "appattempt_1700000000000_0001_000001");
  EXPECT_EQ(launches_.at(0).request.containerId, "container_1700000000000_0001_01_000001");
  const auto response = allocate(attempt, {ask(1)});
  EXPECT_EQ(response.allocatedContainers.at(0).id, "container_1700000000000_0001_01_000002");
}

TEST_F(ClusterStateTest, AmLaunchCarriesTheAttemptsEnvironmentAndToken) {
  create();
  const std::string node = addNode("h1", 1, 4, 4096);
  const std::string app = submit();
  const AmLaunch* launch = startAm(app);
  ASSERT_NE(launch, nullptr);
  const auto& env = launch->request.environment;
  const std::string attempt = state().applicationReport(app).currentAppAttemptId;
  EXPECT_EQ(env.at("TIDE_APPLICATION_ID"), app);
  EXPECT_EQ(env.at("TIDE_APP_ATTEMPT_ID"), attempt);
  EXPECT_EQ(env.at("TIDE_AM_TOKEN"), state().amToken(attempt));
  EXPECT_EQ(env.at("TIDE_RM_ADDRESS"), "http://127.0.0.1:8088");
  EXPECT_EQ(env.at("TIDE_CONTAINER_ID"), launch->request.containerId);
  EXPECT_EQ(env.at("JOB"), "wordcount");
  EXPECT_EQ(launch->request.command, "run-am");
  EXPECT_EQ(launch->request.token,
            rest::containerToken(state().nodeSecret(node), launch->request.containerId));
  EXPECT_EQ(state().applicationReport(app).state, "ACCEPTED");
  state().registerApplicationMaster(attempt, {"h1", 1, "http://am:4040"});
  EXPECT_EQ(state().applicationReport(app).state, "RUNNING");
  EXPECT_EQ(state().applicationReport(app).trackingUrl, "http://am:4040");
  EXPECT_EQ(state().applicationReport(app).amHostHttpAddress, node);
}

TEST_F(ClusterStateTest, AmContainersComeBeforeExecutorContainers) {
  RmConfig config;
  config.maxAmShare = 1.0;  // AMs may take the whole node here
  create(config);
  const std::string node = addNode("h1", 1, 3, 100000);
  const std::string first = submit();
  const std::string firstAttempt = registerAm(first);
  // The first application wants more than there is: it gets the 2 cores left.
  auto granted = allocate(firstAttempt, {ask(10)});
  ASSERT_EQ(granted.allocatedContainers.size(), 2u);
  const std::string second = submit();
  EXPECT_EQ(state().applicationReport(second).amHostHttpAddress, "");

  // A core comes free: the waiting AM gets it although the first application asked earlier.
  exitContainer(granted.allocatedContainers[0].id, 0);
  heartbeat(node);
  EXPECT_EQ(state().applicationReport(second).amHostHttpAddress, node);
  EXPECT_TRUE(allocate(firstAttempt).allocatedContainers.empty());
}

TEST_F(ClusterStateTest, ApplicationsAreServedFirstInFirstOut) {
  create();
  const std::string node = addNode("h1", 1, 4, 100000);
  const std::string first = submit(256, 1, 0, "first");
  const std::string second = submit(256, 1, 0, "second");
  const std::string firstAttempt = registerAm(first);
  const std::string secondAttempt = registerAm(second);
  EXPECT_TRUE(allocate(secondAttempt, {ask(5)}).allocatedContainers.size() == 2u);
  // Both now wait for cores; the first application asks too.
  EXPECT_TRUE(allocate(firstAttempt, {ask(5)}).allocatedContainers.empty());
  const auto secondContainers = state().liveContainers();
  // The second application's executors end: the first application, earlier in the queue, gets
  // the cores although the second one asked first.
  for (const ContainerView& container : secondContainers) {
    if (container.applicationId == second && !container.amContainer) {
      exitContainer(container.id, 0);
    }
  }
  heartbeat(node);
  EXPECT_EQ(allocate(firstAttempt).allocatedContainers.size(), 2u);
  EXPECT_TRUE(allocate(secondAttempt).allocatedContainers.empty());
}

TEST_F(ClusterStateTest, SpreadOutPutsOneContainerOnEachNodeInTurn) {
  create();
  addNodes(4, 4, 8192);
  const std::string attempt = registerAm(submit());
  const auto response = allocate(attempt, {ask(4)});
  const auto perNode = containersPerNode(response);
  EXPECT_EQ(perNode.size(), 4u);
  for (const auto& [node, count] : perNode) EXPECT_EQ(count, 1) << node;
  // Eight more: two more per node, the AM's node (one core less) last.
  const auto more = containersPerNode(allocate(attempt, {ask(8)}));
  EXPECT_EQ(more.size(), 4u);
  for (const auto& [node, count] : more) EXPECT_EQ(count, 2) << node;
  expectNoOverCommit();
}

// Issue 14: "target 137, live 2" explains itself when the AM learns what the cluster could hold
// of its executors. Counted per node: two nodes of 3500 MB hold one 2048 MB container each
// (2 in all), though their 7000 MB added up would make 3.
TEST_F(ClusterStateTest, AllocateSaysHowManyContainersOfTheAskedSizeFitPerNode) {
  create();
  addNode("h1", 1, 4, 3500);
  addNode("h2", 2, 4, 3500);
  const std::string attempt = registerAm(submit(/*amMemoryMb=*/512));
  const auto before = allocate(attempt);
  EXPECT_EQ(before.containersFitNow, -1) << "no size asked yet: unknown";
  EXPECT_EQ(before.containersFitTotal, -1);

  const auto asked = allocate(attempt, {ask(0, 2048, 1)});  // the size, nothing wanted yet
  EXPECT_EQ(asked.containersFitTotal, 2);
  EXPECT_EQ(asked.containersFitNow, 2) << "the AM's 512 MB leaves 2988 MB: still one";

  const auto granted = allocate(attempt, {ask(5, 2048, 1)});
  EXPECT_EQ(granted.allocatedContainers.size(), 2u);
  EXPECT_EQ(granted.containersFitNow, 0) << "full: the other 3 wait";
  EXPECT_EQ(granted.containersFitTotal, 2);
  // The size stays known when the ask is withdrawn.
  EXPECT_EQ(allocate(attempt, {ask(0, 2048, 1)}).containersFitTotal, 2);
}

TEST_F(ClusterStateTest, PackedFillsOneNodeBeforeTheNext) {
  RmConfig config;
  config.spreadOut = false;
  create(config);
  addNodes(4, 4, 8192);
  const std::string attempt = registerAm(submit());
  const auto perNode = containersPerNode(allocate(attempt, {ask(4)}));
  ASSERT_EQ(perNode.size(), 1u);
  EXPECT_EQ(perNode.begin()->second, 4);
  // Six more: another empty node filled, then two on the next.
  const auto more = containersPerNode(allocate(attempt, {ask(6)}));
  std::multiset<int> counts;
  for (const auto& [node, count] : more) counts.insert(count);
  EXPECT_EQ(counts, (std::multiset<int>{2, 4}));
  expectNoOverCommit();
}

TEST_F(ClusterStateTest, NeverOverCommitsCoresOrMemory) {
  create();
  addNode("cores", 1, 2, 100000);  // bound by cores
  addNode("memory", 2, 64, 1300);  // bound by memory
  const std::string attempt = registerAm(submit(100, 1));
  // 2 cores - 1 for the AM on whichever node it went = at most 1 or 2 on "cores";
  // 1300 MB / 600 MB = at most 2 on "memory" (minus the AM's 100 MB still leaves 2).
  const auto response = allocate(attempt, {ask(50, 600, 1)});
  auto perNode = containersPerNode(response);
  EXPECT_LE(perNode["memory:2"], 2);
  EXPECT_LE(perNode["cores:1"], 2);
  EXPECT_GE(response.allocatedContainers.size(), 2u);
  expectNoOverCommit();
  // A bigger ask than any node fits is never granted.
  EXPECT_TRUE(allocate(attempt, {ask(1, 200000, 1, "*", true, 2)}).allocatedContainers.empty());
  expectNoOverCommit();
}

TEST_F(ClusterStateTest, HostAskIsHonouredWhenItFits) {
  create();
  addNode("h1", 1, 8, 8192);
  addNode("h2", 2, 8, 8192);
  addNode("h3", 3, 8, 8192);
  const std::string attempt = registerAm(submit());
  const auto byHost = containersPerNode(allocate(attempt, {ask(3, 256, 1, "h2")}));
  EXPECT_EQ(byHost, (std::map<std::string, int>{{"h2:2", 3}}));
  // A node id works as well as a host name.
  const auto byNodeId = containersPerNode(allocate(attempt, {ask(2, 256, 1, "h3:3", true, 2)}));
  EXPECT_EQ(byNodeId, (std::map<std::string, int>{{"h3:3", 2}}));
}

TEST_F(ClusterStateTest, HostAskIsRelaxedToAnyNodeWhenAllowed) {
  create();
  addNode("h1", 1, 8, 8192);
  addNode("h2", 2, 2, 8192);
  const std::string attempt = registerAm(submit(256, 1));
  // h2 has room for at most 2; the rest goes to any node.
  const auto response = allocate(attempt, {ask(5, 256, 1, "h2", true)});
  auto perNode = containersPerNode(response);
  EXPECT_EQ(response.allocatedContainers.size(), 5u);
  EXPECT_GE(perNode["h2:2"], 1);
  EXPECT_GE(perNode["h1:1"], 3);
  expectNoOverCommit();
}

TEST_F(ClusterStateTest, HostAskWaitsWithoutRelaxLocality) {
  create();
  const std::string h1 = addNode("h1", 1, 8, 8192);
  const std::string h2 = addNode("h2", 2, 1, 8192);
  // The AM needs 2 cores, so it can only go to h1.
  const std::string attempt = registerAm(submit(256, 2));
  ASSERT_EQ(launches_.at(0).nodeId, h1);
  auto first = allocate(attempt, {ask(1, 256, 1, "h2", false)});
  ASSERT_EQ(first.allocatedContainers.size(), 1u);
  EXPECT_EQ(first.allocatedContainers[0].nodeId, h2);
  // h2 is now full: a further strict ask for it waits, although h1 has room.
  EXPECT_TRUE(allocate(attempt, {ask(1, 256, 1, "h2", false)}).allocatedContainers.empty());
  EXPECT_TRUE(allocate(attempt).allocatedContainers.empty());
  // Room on h2 comes back: the waiting ask gets it there.
  exitContainer(first.allocatedContainers[0].id, 0);
  heartbeat(h2);
  const auto third = allocate(attempt);
  ASSERT_EQ(third.allocatedContainers.size(), 1u);
  EXPECT_EQ(third.allocatedContainers[0].nodeId, h2);
}

TEST_F(ClusterStateTest, NumContainersReplacesThePreviousAsk) {
  create();
  const std::string node = addNode("h1", 1, 3, 8192);
  const std::string attempt = registerAm(submit());
  auto full = allocate(attempt, {ask(2)});
  ASSERT_EQ(full.allocatedContainers.size(), 2u);
  // Outstanding 5, then replaced by 1 before room comes.
  EXPECT_TRUE(allocate(attempt, {ask(5)}).allocatedContainers.empty());
  EXPECT_TRUE(allocate(attempt, {ask(1)}).allocatedContainers.empty());
  for (const rest::Container& container : full.allocatedContainers) {
    exitContainer(container.id, 0);
  }
  heartbeat(node);
  EXPECT_EQ(allocate(attempt).allocatedContainers.size(), 1u);
  // Granted containers reduce the outstanding count: nothing more comes without a new ask.
  EXPECT_TRUE(allocate(attempt).allocatedContainers.empty());
  // numContainers 0 withdraws an ask.
  allocate(attempt, {ask(3, 256, 1, "*", true, 7)});
  EXPECT_TRUE(allocate(attempt, {ask(0, 256, 1, "*", true, 7)}).allocatedContainers.empty());
}

TEST_F(ClusterStateTest, GrantedContainersReduceTheOutstandingCount) {
  create();
  const std::string node = addNode("h1", 1, 3, 8192);
  const std::string attempt = registerAm(submit());
  auto first = allocate(attempt, {ask(3)});
  ASSERT_EQ(first.allocatedContainers.size(), 2u);  // 1 of 3 still outstanding
  exitContainer(first.allocatedContainers[0].id, 0);
  exitContainer(first.allocatedContainers[1].id, 0);
  heartbeat(node);
  EXPECT_EQ(allocate(attempt).allocatedContainers.size(), 1u);
}

TEST_F(ClusterStateTest, SeededRngGivesTheSamePlacementEveryRun) {
  auto placements = [this](uint64_t seed) {
    running_.clear();
    responseIds_.clear();
    launches_.clear();
    create(RmConfig{}, seed);
    addNodes(8, 2, 4096);
    std::vector<std::string> nodes;
    for (int app = 0; app < 6; ++app) {
      const std::string id = submit(256, 1);
      nodes.push_back(state().applicationReport(id).amHostHttpAddress);
    }
    return nodes;
  };
  const auto first = placements(42);
  EXPECT_EQ(first, placements(42));
  bool anyDifferent = false;
  for (uint64_t seed = 1; seed < 20 && !anyDifferent; ++seed) {
    anyDifferent = placements(seed) != first;
  }
  EXPECT_TRUE(anyDifferent) << "placement ignores the seed";
}

TEST_F(ClusterStateTest, FailedAmIsRetriedThenTheApplicationFails) {
  const OneApplication one = startOneApplication();
  const std::string firstToken = state().amToken(one.attempt);
  const auto executors = allocate(one.attempt, {ask(2)});
  ASSERT_EQ(executors.allocatedContainers.size(), 2u);
  const std::string amContainer = launches_.at(0).request.containerId;

  exitContainer(amContainer, 1);
  heartbeat(one.node);
  auto report = state().applicationReport(one.app);
  EXPECT_EQ(report.state, "ACCEPTED");
  EXPECT_EQ(report.currentAppAttemptId, "appattempt_1700000000000_0001_000002");
  EXPECT_THAT(report.diagnostics,
              HasSubstr("AM container " + amContainer +
                        " exited with code 1 without unregistering; attempt 1 of 2"));
  EXPECT_NE(state().amToken(report.currentAppAttemptId), firstToken);
  // The failed attempt's executors keep running for the next attempt (YARN's
  // keepContainersAcrossApplicationAttempts).
  heartbeatAll();
  for (const rest::Container& container : executors.allocatedContainers) {
    EXPECT_FALSE(outcomeOf(container.id).has_value()) << container.id << " was stopped";
  }
  // The old attempt is over for good.
  EXPECT_THROW(allocate(one.attempt), RmError);

  // The next attempt gets them when it registers.
  const AmLaunch* launch = startAm(one.app);
  ASSERT_NE(launch, nullptr);
  const std::string secondAttempt = launch->request.environment.at("TIDE_APP_ATTEMPT_ID");
  EXPECT_EQ(secondAttempt, "appattempt_1700000000000_0001_000002");
  const auto registered =
      state().registerApplicationMaster(secondAttempt, {"127.0.0.1", 4040, "http://am"});
  ASSERT_EQ(registered.containersFromPreviousAttempts.size(), 2u);
  std::set<std::string> kept;
  for (const auto& c : registered.containersFromPreviousAttempts) kept.insert(c.id);
  for (const rest::Container& container : executors.allocatedContainers) {
    EXPECT_EQ(kept.count(container.id), 1u) << container.id;
  }
  const AmLaunch& secondLaunch = launches_.back();
  EXPECT_EQ(secondLaunch.request.containerId, "container_1700000000000_0001_02_000001");
  exitContainer(secondLaunch.request.containerId, 1);
  heartbeat(one.node);
  report = state().applicationReport(one.app);
  EXPECT_EQ(report.state, "FAILED");
  EXPECT_EQ(report.finalStatus, "FAILED");
  EXPECT_THAT(report.diagnostics, HasSubstr("exited with code 1 without unregistering"));
  EXPECT_THAT(report.diagnostics, HasSubstr("attempt 2 of 2"));
  EXPECT_GT(report.finishedTime, 0);
  EXPECT_EQ(state().metrics().appsFailed, 1);
  // The last attempt's failure ends the application: its executors are stopped.
  heartbeatAll();
  for (const rest::Container& container : executors.allocatedContainers) {
    ASSERT_TRUE(outcomeOf(container.id).has_value()) << container.id;
    EXPECT_EQ(outcomeOf(container.id)->exitStatus, exit_status::kKilledByResourceManager);
  }
}

TEST_F(ClusterStateTest, AttemptsAreTheSmallerOfTheAppsAndTheRmsLimit) {
  RmConfig config;
  config.maxAppAttempts = 3;
  create(config);
  const std::string node = addNode("h1", 1, 4, 8192);
  const std::string once = submit(256, 1, 1);
  startAm(once);
  exitContainer(launches_.back().request.containerId, 2);
  heartbeat(node);
  EXPECT_EQ(state().applicationReport(once).state, "FAILED");
  EXPECT_THAT(state().applicationReport(once).diagnostics, HasSubstr("attempt 1 of 1"));

  const std::string many = submit(256, 1, 10);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_NE(startAm(many), nullptr);
    exitContainer(launches_.back().request.containerId, 1);
    heartbeat(node);
  }
  EXPECT_EQ(state().applicationReport(many).state, "FAILED");
  EXPECT_THAT(state().applicationReport(many).diagnostics, HasSubstr("attempt 3 of 3"));
}

TEST_F(ClusterStateTest, AnAmThatExitsBeforeRegisteringLeavesItsStderrInTheDiagnostics) {
  create();
  const std::string node = addNode("h1", 1, 4, 8192);
  const std::string app = submit(256, 1, 1);
  startAm(app);
  exitContainer(launches_.back().request.containerId, 1,
                "exited with code 1\nlast lines of its stderr:\nstarting\n"
                "tide-am: http server: cannot bind 127.0.0.1:4040: Address already in use");
  heartbeat(node);
  const auto report = state().applicationReport(app);
  EXPECT_EQ(report.state, "FAILED");
  EXPECT_EQ(report.diagnostics, "AM container " + launches_.back().request.containerId +
                                    " exited with code 1 without unregistering (exited with code "
                                    "1); attempt 1 of 1\nlast lines of its stderr:\nstarting\n"
                                    "tide-am: http server: cannot bind 127.0.0.1:4040: Address "
                                    "already in use");
}

TEST_F(ClusterStateTest, SilentAmFailsItsAttemptAfterTheLivenessExpiry) {
  RmConfig config;
  config.amLivenessExpiryMs = 5000;
  config.nodeExpiryMs = 100000;
  const OneApplication one = startOneApplication(config);
  clock_.advance(4000);
  allocate(one.attempt);  // a heartbeat
  clock_.advance(4000);
  state().checkExpiries();
  EXPECT_EQ(state().applicationReport(one.app).currentAppAttemptId, one.attempt);
  clock_.advance(1001);
  state().checkExpiries();
  collectOutbox();
  const auto report = state().applicationReport(one.app);
  EXPECT_NE(report.currentAppAttemptId, one.attempt);
  EXPECT_THAT(report.diagnostics, HasSubstr("sent no heartbeat"));
  // Its AM container is told to stop, promptly and through the heartbeat.
  const std::string amContainer = launches_.at(0).request.containerId;
  ASSERT_FALSE(stops_.empty());
  EXPECT_EQ(stops_.back().containerId, amContainer);
  EXPECT_EQ(stops_.back().nodeSecret, state().nodeSecret(one.node));
  heartbeatAll();
  EXPECT_EQ(outcomeOf(amContainer)->exitStatus, exit_status::kKilledByResourceManager);
}

TEST_F(ClusterStateTest, LostNodesContainersComeBackToTheAmAsAborted) {
  const auto [app, attempt, amNode] = startAmOnExpiringNodes(3);
  const auto response = allocate(attempt, {ask(3)});
  ASSERT_EQ(response.allocatedContainers.size(), 3u);
  std::string victim;
  for (const auto& [node, containers] : running_) {
    if (node != amNode) victim = node;
  }
  std::vector<std::string> lost;
  for (const rest::Container& container : response.allocatedContainers) {
    if (container.nodeId == victim) lost.push_back(container.id);
  }
  ASSERT_FALSE(lost.empty());

  // Everyone but the victim keeps heartbeating.
  for (int step = 0; step < 3; ++step) {
    clock_.advance(500);
    for (const auto& [node, containers] : running_) {
      if (node != victim) heartbeat(node);
    }
    allocate(attempt);
    state().checkExpiries();
  }
  const auto nodes = state().nodeReports();
  for (const rest::NodeReport& node : nodes) {
    EXPECT_EQ(node.state, node.id == victim ? "LOST" : "RUNNING") << node.id;
  }
  EXPECT_EQ(state().metrics().lostNodes, 1);
  const auto after = allocate(attempt);
  ASSERT_EQ(after.completedContainers.size(), lost.size());
  for (const rest::CompletedContainer& completed : after.completedContainers) {
    EXPECT_EQ(completed.exitStatus, exit_status::kAborted);
    EXPECT_EQ(completed.diagnostics, "lost with node " + victim);
  }
  EXPECT_EQ(state().applicationReport(app).state, "RUNNING");  // not the app's fault
  // The lost node is told to register again; that forgets what it ran.
  EXPECT_TRUE(heartbeat(victim).reRegister);
  EXPECT_TRUE(state().nodeHeartbeat("nobody:1", {}).reRegister);
}

TEST_F(ClusterStateTest, AmLostWithItsNodeStartsANewAttempt) {
  const auto [app, attempt, amNode] = startAmOnExpiringNodes(2);
  clock_.advance(1500);
  for (const auto& [node, containers] : running_) {
    if (node != amNode) heartbeat(node);
  }
  state().checkExpiries();
  const auto report = state().applicationReport(app);
  EXPECT_EQ(report.state, "ACCEPTED");
  EXPECT_NE(report.currentAppAttemptId, attempt);
  EXPECT_THAT(report.diagnostics, HasSubstr("lost with node " + amNode + "; attempt 1 of 2"));
  EXPECT_NE(report.amHostHttpAddress, "");  // the new AM is on the surviving node
  EXPECT_NE(report.amHostHttpAddress, amNode);
}

TEST_F(ClusterStateTest, KillStopsEveryContainerWithKilledByResourceManager) {
  const OneApplication one = startOneApplication();
  const auto response = allocate(one.attempt, {ask(2)});
  heartbeat(one.node);  // the node reports them running
  EXPECT_EQ(state().killApplication(one.app).state, "KILLED");
  collectOutbox();
  EXPECT_EQ(stops_.size(), 3u);  // AM and both executors, at once
  auto report = state().applicationReport(one.app);
  EXPECT_EQ(report.state, "KILLED");
  EXPECT_EQ(report.finalStatus, "KILLED");
  // Resources stay held until the node confirms.
  EXPECT_EQ(state().metrics().containersAllocated, 3);
  const auto stopped = heartbeat(one.node);
  EXPECT_EQ(stopped.containersToStop.size(), 3u);
  heartbeat(one.node);
  EXPECT_EQ(state().metrics().containersAllocated, 0);
  for (const rest::Container& container : response.allocatedContainers) {
    EXPECT_EQ(outcomeOf(container.id)->exitStatus, exit_status::kKilledByResourceManager);
  }
  EXPECT_EQ(state().killApplication(one.app).state, "KILLED");  // again: no-op
  EXPECT_EQ(state().metrics().appsKilled, 1);
  EXPECT_THROW(allocate(one.attempt), RmError);
}

TEST_F(ClusterStateTest, TheTrackingUrlBecomesTheHistoryUrlOnceTheApplicationHasEnded) {
  historyUrl_ = "http://history:18080/history/app";
  const OneApplication killed = startOneApplication();
  EXPECT_EQ(state().applicationReport(killed.app).trackingUrl, "http://am");  // while it runs
  state().killApplication(killed.app);
  EXPECT_EQ(state().applicationReport(killed.app).trackingUrl, historyUrl_);

  const std::string finished = submit();
  const std::string attempt = registerAm(finished);
  EXPECT_EQ(state().applicationReport(finished).trackingUrl, "http://am");
  state().finishApplicationMaster(attempt, {"SUCCEEDED", ""});
  EXPECT_EQ(state().applicationReport(finished).trackingUrl, historyUrl_);

  historyUrl_.clear();  // without one, the AM's address stays, as before
  heartbeatAll();       // the node gives the ended AMs' resources back
  const std::string plain = submit();
  registerAm(plain);
  state().killApplication(plain);
  EXPECT_EQ(state().applicationReport(plain).trackingUrl, "http://am");
}

TEST_F(ClusterStateTest, ReleasedContainersCompleteAsAbortedWhateverTheNodeSays) {
  const OneApplication one = startOneApplication();
  const auto response = allocate(one.attempt, {ask(2)});
  heartbeat(one.node);
  const std::string released = response.allocatedContainers[0].id;
  const std::string exited = response.allocatedContainers[1].id;
  allocate(one.attempt, {}, {released});
  // The node stops it (exit 143 in the fake) and the other one dies of its memory use.
  exitContainer(exited, exit_status::kKilledExceededPmem, "exceeded 256 MB");
  heartbeatAll();
  const auto after = allocate(one.attempt);
  std::map<std::string, int> statuses;
  for (const auto& completed : after.completedContainers) {
    statuses[completed.containerId] = completed.exitStatus;
  }
  EXPECT_EQ(statuses[released], exit_status::kAborted);
  EXPECT_EQ(statuses[exited], exit_status::kKilledExceededPmem);
  EXPECT_EQ(state().metrics().containersAllocated, 1);  // the AM
}

TEST_F(ClusterStateTest, AReleasedContainerNeverStartedIsFreedAtTheNextHeartbeat) {
  const OneApplication one = startOneApplication();
  const auto response = allocate(one.attempt, {ask(1)});
  const std::string id = response.allocatedContainers[0].id;
  running_[one.node].erase(id);  // the AM never started it
  allocate(one.attempt, {}, {id});
  EXPECT_EQ(state().metrics().containersAllocated, 2);
  heartbeat(one.node);
  EXPECT_EQ(state().metrics().containersAllocated, 1);
  EXPECT_EQ(allocate(one.attempt).completedContainers.at(0).exitStatus, exit_status::kAborted);
}

TEST_F(ClusterStateTest, ProtocolStateErrors) {
  create();
  addNode("h1", 1, 4, 8192);
  const std::string app = submit();
  const AmLaunch* launch = startAm(app);
  ASSERT_NE(launch, nullptr);
  const std::string attempt = launch->request.environment.at("TIDE_APP_ATTEMPT_ID");
  auto statusOf = [](auto&& call) {
    try {
      call();
    } catch (const RmError& error) {
      return error.status();
    }
    return 200;
  };
  EXPECT_EQ(statusOf([&] { allocate(attempt); }), 409);  // not registered yet
  EXPECT_EQ(statusOf([&] { state().authenticateAttempt(attempt, ""); }), 401);
  EXPECT_EQ(statusOf([&] { state().authenticateAttempt(attempt, "nope"); }), 401);
  EXPECT_EQ(statusOf([&] { state().authenticateAttempt("appattempt_0_0009_000001", "x"); }), 404);
  EXPECT_EQ(statusOf([&] { state().authenticateAttempt(attempt, state().amToken(attempt)); }), 200);
  state().registerApplicationMaster(attempt, {"h", 1, ""});
  EXPECT_EQ(statusOf([&] { state().registerApplicationMaster(attempt, {"h", 1, ""}); }), 409);

  // responseId handshake: a repeat of the last one gets the same answer, others are refused.
  const auto first = allocate(attempt, {ask(1)});
  rest::AllocateRequest repeat;
  repeat.responseId = first.responseId - 1;
  const auto again = state().allocate(attempt, repeat);
  EXPECT_EQ(again.responseId, first.responseId);
  EXPECT_EQ(again.allocatedContainers.size(), first.allocatedContainers.size());
  rest::AllocateRequest wrong;
  wrong.responseId = first.responseId + 5;
  EXPECT_EQ(statusOf([&] { state().allocate(attempt, wrong); }), 409);

  state().finishApplicationMaster(attempt, {"SUCCEEDED", "done"});
  EXPECT_EQ(state().finishApplicationMaster(attempt, {"SUCCEEDED", "done"}).isUnregistered,
            true);  // a retried finish
  EXPECT_EQ(statusOf([&] { allocate(attempt); }), 409);
  EXPECT_EQ(statusOf([&] { state().killApplication(app); }), 409);
  EXPECT_EQ(statusOf([&] { state().applicationReport("application_1_0042"); }), 404);
  rest::ApplicationSubmission again2;
  again2.applicationId = app;
  EXPECT_EQ(statusOf([&] { state().submitApplication(again2); }), 409);
  const auto report = state().applicationReport(app);
  EXPECT_EQ(report.state, "FINISHED");
  EXPECT_EQ(report.finalStatus, "SUCCEEDED");
  EXPECT_EQ(report.diagnostics, "done");
}

TEST_F(ClusterStateTest, FinishWithFailedStatusIsFinishedAndStopsTheExecutors) {
  const OneApplication one = startOneApplication();
  const auto executors = allocate(one.attempt, {ask(2)});
  heartbeat(one.node);
  state().finishApplicationMaster(one.attempt, {"FAILED", "job failed"});
  auto report = state().applicationReport(one.app);
  EXPECT_EQ(report.state, "FINISHED");  // as YARN: the AM unregistered
  EXPECT_EQ(report.finalStatus, "FAILED");
  // The AM process then exits 0: no new attempt.
  exitContainer(launches_.at(0).request.containerId, 0);
  heartbeatAll();
  EXPECT_EQ(state().metrics().containersAllocated, 0);
  EXPECT_EQ(state().applicationReport(one.app).currentAppAttemptId, one.attempt);
  EXPECT_EQ(state().metrics().appsCompleted, 1);
}

TEST_F(ClusterStateTest, MetricsAndNodeReportsFollowEachStep) {
  create();
  const std::string node = addNode("h1", 1, 4, 4096);
  addNode("h2", 2, 4, 4096);
  auto metrics = state().metrics();
  EXPECT_EQ(metrics.totalMB, 8192);
  EXPECT_EQ(metrics.totalVirtualCores, 8);
  EXPECT_EQ(metrics.activeNodes, 2);
  const std::string app = submit(512, 1);
  metrics = state().metrics();
  EXPECT_EQ(metrics.appsSubmitted, 1);
  EXPECT_EQ(metrics.appsPending, 1);
  EXPECT_EQ(metrics.allocatedMB, 512);
  const std::string attempt = registerAm(app);
  allocate(attempt, {ask(2, 1024, 2)});
  metrics = state().metrics();
  EXPECT_EQ(metrics.appsRunning, 1);
  EXPECT_EQ(metrics.allocatedMB, 512 + 2048);
  EXPECT_EQ(metrics.allocatedVirtualCores, 5);
  EXPECT_EQ(metrics.availableVirtualCores, 3);
  EXPECT_EQ(metrics.containersAllocated, 3);
  const auto report = state().applicationReport(app);
  EXPECT_EQ(report.allocatedMB, 2560);
  EXPECT_EQ(report.allocatedVCores, 5);
  EXPECT_EQ(report.runningContainers, 3);
  int containers = 0;
  for (const rest::NodeReport& nodeReport : state().nodeReports()) {
    containers += nodeReport.numContainers;
    EXPECT_EQ(nodeReport.usedMemoryMB + nodeReport.availMemoryMB, 4096);
    EXPECT_EQ(nodeReport.lastHealthUpdate, kClusterTimestamp);
  }
  EXPECT_EQ(containers, 3);
  (void)node;
}

TEST_F(ClusterStateTest, ANodeThatRegistersAgainLosesWhatItNoLongerReports) {
  const OneApplication one = startOneApplication();
  const std::string firstAttempt = state().applicationReport(one.app).currentAppAttemptId;
  running_[one.node].clear();  // the node manager restarted without recovery: nothing runs
  addNode("h1", 1, 4, 8192);   // registers and heartbeats
  const auto report = state().applicationReport(one.app);
  EXPECT_NE(report.currentAppAttemptId, firstAttempt);
  EXPECT_THAT(report.diagnostics,
              HasSubstr("lost with node " + one.node + ": its node manager restarted without it"));
  // The old AM process, if still running there, is told to stop.
  setRunning(one.node, launches_.at(0).request.containerId);
  const auto response = heartbeat(one.node);
  EXPECT_THAT(response.containersToStop, ::testing::Contains(launches_.at(0).request.containerId));
}

TEST_F(ClusterStateTest, ANodeThatRegistersAgainKeepsTheContainersItStillRuns) {
  // A tide-nm restarted with recovery re-attached to its containers and reports them.
  const OneApplication one = startOneApplication();
  allocate(one.attempt, {ask(2, 1024, 1)});
  allocate(one.attempt);
  const int before = state().nodeReports().at(0).numContainers;
  ASSERT_EQ(before, 3);
  const int64_t usedBefore = state().nodeReports().at(0).usedMemoryMB;
  addNode("h1", 1, 4, 8192);  // registers and heartbeats every container still running
  const auto report = state().applicationReport(one.app);
  EXPECT_EQ(report.currentAppAttemptId, one.attempt);
  EXPECT_EQ(report.state, "RUNNING");
  EXPECT_EQ(state().nodeReports().at(0).numContainers, before);
  EXPECT_EQ(state().nodeReports().at(0).usedMemoryMB, usedBefore);
  EXPECT_TRUE(allocate(one.attempt).completedContainers.empty());
}

TEST_F(ClusterStateTest, AmLaunchFailureFailsTheAttempt) {
  create();
  addNode("h1", 1, 4, 8192);
  const std::string app = submit();
  collectOutbox();
  state().amLaunchFailed(launches_.at(0).request.containerId, "connection refused");
  const auto report = state().applicationReport(app);
  EXPECT_EQ(report.currentAppAttemptId, "appattempt_1700000000000_0001_000002");
  EXPECT_THAT(report.diagnostics, HasSubstr("could not be launched"));
}

// --- Robustness: ready nodes, transient launch refusals, rm.maxAmShare, fail-fast sizes.

TEST_F(ClusterStateTest, ANodeGetsContainersOnlyAfterItsFirstHeartbeat) {
  create();
  const auto registration = state().registerNode({"h1", 1, Resource{4096, 4}});
  const std::string app = submit();
  EXPECT_TRUE(launches_.empty());
  EXPECT_THAT(state().applicationReport(app).diagnostics,
              HasSubstr("no node manager is registered and ready"));
  heartbeat(registration.nodeId);
  ASSERT_EQ(launches_.size(), 1u);
  EXPECT_EQ(launches_.at(0).nodeId, registration.nodeId);
  EXPECT_EQ(state().applicationReport(app).diagnostics, "");
}

TEST_F(ClusterStateTest, ATransientLaunchRefusalPlacesTheAmAgainWithoutUsingAnAttempt) {
  create();
  const std::string h1 = addNode("h1", 1, 4, 4096);
  const std::string h2 = addNode("h2", 2, 4, 4096);
  const std::string app = submit(512, 1, /*maxAttempts=*/1);
  ASSERT_EQ(launches_.size(), 1u);
  const std::string refusedOn = launches_.at(0).nodeId;
  const std::string containerId = launches_.at(0).request.containerId;
  state().amLaunchFailed(containerId, "node manager answered HTTP 503", /*transient=*/true);
  collectOutbox();
  // Placed again at once, on the other node (the refusing one waits for its next heartbeat),
  // under the same attempt and the same container id.
  ASSERT_EQ(launches_.size(), 2u);
  EXPECT_NE(launches_.at(1).nodeId, refusedOn);
  EXPECT_EQ(launches_.at(1).request.containerId, containerId);
  EXPECT_EQ(launches_.at(1).request.environment.at("TIDE_APP_ATTEMPT_ID"),
            launches_.at(0).request.environment.at("TIDE_APP_ATTEMPT_ID"));
  EXPECT_EQ(state().applicationReport(app).state, "ACCEPTED");
  const std::string attempt = registerAm(app);
  EXPECT_EQ(attempt, "appattempt_1700000000000_0001_000001");
  (void)h1;
  (void)h2;
}

TEST_F(ClusterStateTest, TransientLaunchRefusalsAreBoundedThenFailTheAttempt) {
  create();
  const std::string node = addNode("h1", 1, 4, 4096);
  const std::string app = submit(512, 1, /*maxAttempts=*/1);
  for (int retry = 0; retry < ClusterState::kMaxAmLaunchRetries; ++retry) {
    ASSERT_EQ(launches_.size(), static_cast<size_t>(retry + 1));
    state().amLaunchFailed(launches_.back().request.containerId, "HTTP 503", true);
    collectOutbox();
    EXPECT_EQ(state().applicationReport(app).state, "ACCEPTED");
    heartbeat(node);  // ready again
  }
  ASSERT_EQ(launches_.size(), static_cast<size_t>(ClusterState::kMaxAmLaunchRetries + 1));
  state().amLaunchFailed(launches_.back().request.containerId, "HTTP 503", true);
  EXPECT_EQ(state().applicationReport(app).state, "FAILED");
  EXPECT_THAT(state().applicationReport(app).diagnostics, HasSubstr("could not be launched"));
}

TEST_F(ClusterStateTest, AmContainersHoldAtMostMaxAmShareOfTheCluster) {
  create();  // rm.maxAmShare = 0.5
  const std::string node = addNode("h1", 1, 8, 8192);
  std::vector<std::string> apps;
  for (int i = 0; i < 6; ++i) apps.push_back(submit(512, 1));
  // 4 AMs of 1 vCore fit in half of 8 vCores; the 5th and 6th wait, saying why.
  EXPECT_EQ(launches_.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(state().applicationReport(apps[i]).diagnostics, "");
  const std::string diagnostics = state().applicationReport(apps[4]).diagnostics;
  EXPECT_EQ(state().applicationReport(apps[4]).state, "ACCEPTED");
  EXPECT_THAT(diagnostics, HasSubstr("rm.maxAmShare=0.5"));
  EXPECT_THAT(diagnostics, HasSubstr("5 vCores, above 4 vCores"));
  // The executors get the other half.
  const std::string attempt = registerAm(apps[0]);
  EXPECT_EQ(allocate(attempt, {ask(10, 256, 1)}).allocatedContainers.size(), 4u);
  // An application ends: the next AM starts.
  state().finishApplicationMaster(attempt, {"SUCCEEDED", ""});
  heartbeatAll();
  const auto amOf = [&](const std::string& app) {
    for (const ContainerView& c : state().liveContainers()) {
      if (c.applicationId == app && c.amContainer) return c.id;
    }
    return std::string();
  };
  exitContainer(amOf(apps[0]), 0);
  heartbeatAll();
  EXPECT_EQ(launches_.size(), 5u);
  EXPECT_EQ(state().applicationReport(apps[4]).diagnostics, "");
  EXPECT_THAT(state().applicationReport(apps[5]).diagnostics, HasSubstr("rm.maxAmShare"));
}

TEST_F(ClusterStateTest, OneAmAlwaysRunsWhenNoneDoesWhateverTheShare) {
  RmConfig config;
  config.maxAmShare = 0.1;
  create(config);
  addNode("h1", 1, 2, 2048);
  const std::string first = submit(1024, 1);
  const std::string second = submit(1024, 1);
  EXPECT_EQ(launches_.size(), 1u);  // 1 vCore is above 10% of 2, but nothing else runs
  EXPECT_THAT(state().applicationReport(second).diagnostics, HasSubstr("rm.maxAmShare=0.1"));
  (void)first;
}

// A scheduling pass offers only the nodes with room left (issue 16: thousands of full nodes cost
// nothing); an AM that waits because every node is full still says so, not that no node is
// there, and is placed as soon as a node frees room.
TEST_F(ClusterStateTest, AnAmWaitingOnFullNodesSaysNoNodeHasRoomAndStartsWhenOneFrees) {
  RmConfig config;
  config.maxAmShare = 1.0;
  create(config);
  addNode("h1", 1, 2, 4096);
  addNode("h2", 1, 2, 4096);
  const std::string first = submit(512, 1);
  const std::string attempt = registerAm(first);
  const auto granted = allocate(attempt, {ask(3, 512, 1)}).allocatedContainers;
  ASSERT_EQ(granted.size(), 3u);  // both nodes are full now
  const std::string second = submit(512, 1);
  EXPECT_EQ(state().applicationReport(second).state, "ACCEPTED");
  EXPECT_THAT(state().applicationReport(second).diagnostics,
              HasSubstr("no node has 512 MB, 1 vCores free"));
  const size_t launchesBefore = launches_.size();
  allocate(attempt, {}, {granted.at(0).id});
  heartbeatAll();
  EXPECT_EQ(launches_.size(), launchesBefore + 1) << "the second AM was not placed";
  EXPECT_EQ(state().applicationReport(second).diagnostics, "");
}

TEST_F(ClusterStateTest, AnAmLargerThanEveryNodeIsRefusedAtSubmissionWithTheNumbers) {
  create();
  // No node yet: it may still join, so the application waits and says why.
  const std::string early = submit(999999, 1);
  EXPECT_EQ(state().applicationReport(early).state, "ACCEPTED");
  addNode("h1", 1, 4, 4096);
  EXPECT_THAT(state().applicationReport(early).diagnostics,
              HasSubstr("the AM asks for 999999 MB, 1 vCores, more than any node has (the "
                        "largest: 4096 MB, 4 vCores)"));
  try {
    submit(512, 16);
    FAIL() << "an AM of 16 vCores on a 4-vCore cluster was accepted";
  } catch (const RmError& error) {
    EXPECT_EQ(error.status(), 400);
    EXPECT_THAT(error.what(), HasSubstr("field 'resource': the AM asks for 512 MB, 16 vCores, "
                                        "more than any node has (the largest: 4096 MB, 4 vCores)"));
  }
}

// rm.maxCompletedApplications (YARN's max-completed-applications): the oldest finished
// applications are forgotten, so completed applications cannot grow the RM without bound;
// the metrics still count them. Ids handed out but never submitted are bounded the same way.
TEST_F(ClusterStateTest, KeepsAtMostMaxCompletedApplications) {
  RmConfig config;
  config.maxCompletedApplications = 2;
  create(config);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(submit());
    state().killApplication(ids.back());
  }
  for (int i = 0; i < 4; ++i) state().newApplication();
  std::vector<std::string> kept;
  int unsubmitted = 0;
  for (const rest::ApplicationReport& report : state().applicationReports()) {
    if (report.state == "KILLED") kept.push_back(report.id);
    if (report.state == "NEW") ++unsubmitted;
  }
  EXPECT_EQ(kept, (std::vector<std::string>{ids[3], ids[4]})) << "the newest two";
  EXPECT_EQ(unsubmitted, 2);
  EXPECT_THROW(state().applicationReport(ids[0]), RmError);
  EXPECT_EQ(state().metrics().appsKilled, 5);
  EXPECT_EQ(state().metrics().appsSubmitted, 5);
}

}  // namespace
}  // namespace tide::rm
