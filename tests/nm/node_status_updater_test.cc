// NodeStatusUpdater against the fake RM, one loop step at a time (runOnce), so no test depends
// on the loop's timing.

#include "deploy/nm/node_status_updater.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rest/http_server.h"
#include "tests/nm/fake_resource_manager.h"
#include "tests/nm/nm_test_util.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

namespace tide::nm {
namespace {

using testing::FakeResourceManager;
using testing::kBound;
using testing::launchRequest;
using testing_support::eventually;

class NodeStatusUpdaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ContainerManagerOptions options = testing::managerOptions(dir_.path(), MemoryEnforcement::kOff);
    options.capacity = {3072, 3};
    containers_ = std::make_unique<ContainerManager>(options);
    containers_->start();
  }

  std::unique_ptr<NodeStatusUpdater> updater(
      const std::string& rmUrl,
      const std::function<void(NodeStatusUpdaterOptions&)>& adjust = nullptr) {
    NodeStatusUpdaterOptions options;
    options.rmUrl = rmUrl;
    options.host = "127.0.0.1";
    options.port = 18042;
    options.capability = {3072, 3};
    options.initialRetryDelay = 100;
    options.maxRetryDelay = 800;
    options.requestTimeout = std::chrono::milliseconds(2000);
    if (adjust) adjust(options);
    return std::make_unique<NodeStatusUpdater>(options, *containers_, identity_);
  }

  testing_support::TempDir dir_;
  NodeIdentity identity_;
  std::unique_ptr<ContainerManager> containers_;
};

TEST_F(NodeStatusUpdaterTest, RegistersWithItsCapabilityThenHeartbeats) {
  FakeResourceManager rm("secret-a", 250);
  auto loop = updater(rm.url());
  EXPECT_EQ(loop->runOnce(), 0);  // registered: heartbeat at once
  ASSERT_EQ(rm.registrations().size(), 1u);
  EXPECT_EQ(rm.registrations()[0].host, "127.0.0.1");
  EXPECT_EQ(rm.registrations()[0].port, 18042);
  EXPECT_EQ(rm.registrations()[0].capability.memoryMb, 3072);
  EXPECT_EQ(rm.registrations()[0].capability.vCores, 3);
  EXPECT_TRUE(identity_.registered());
  EXPECT_EQ(identity_.nodeId(), "127.0.0.1:18042");
  EXPECT_EQ(identity_.nodeSecret(), "secret-a");

  EXPECT_EQ(loop->runOnce(), 250);  // the RM's interval, nothing configured
  ASSERT_EQ(rm.heartbeats().size(), 1u);
  EXPECT_EQ(rm.heartbeats()[0].nodeId, "127.0.0.1:18042");
  EXPECT_EQ(rm.heartbeats()[0].authorization, "Bearer secret-a");
}

TEST_F(NodeStatusUpdaterTest, ReportsACompletionOnceTheRmHasSeenIt) {
  FakeResourceManager rm;
  auto loop = updater(rm.url());
  loop->runOnce();
  containers_->launch(launchRequest("c1", "exit 5"));
  containers_->launch(launchRequest("c2", "sleep 60"));
  ASSERT_TRUE(containers_->waitForCompletion("c1", 10000));

  loop->runOnce();
  const auto first = rm.heartbeats().back().body.containers;
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].containerId, "c1");
  EXPECT_EQ(first[0].state, "COMPLETE");
  EXPECT_EQ(first[0].exitStatus, 5);

  loop->runOnce();
  const auto second = rm.heartbeats().back().body.containers;
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].containerId, "c2");
}

TEST_F(NodeStatusUpdaterTest, StopsTheContainersTheRmLists) {
  FakeResourceManager rm;
  auto loop = updater(rm.url());
  loop->runOnce();
  containers_->launch(launchRequest("victim", "sleep 60"));
  rm.stopInNextHeartbeat("victim");
  loop->runOnce();
  ASSERT_TRUE(containers_->waitForCompletion("victim", 10000));
  const rest::ContainerReport report = *containers_->report("victim");
  EXPECT_EQ(report.exitStatus, 128 + SIGTERM);  // its own exit: the RM maps it itself
  EXPECT_NE(report.diagnostics.find("stopped by the resource manager"), std::string::npos);

  loop->runOnce();
  const auto status = rm.lastStatusOf("victim");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->state, "COMPLETE");
}

TEST_F(NodeStatusUpdaterTest, RegistersAgainWhenAskedOrWhenTheRmForgotTheNode) {
  FakeResourceManager rm;
  auto loop = updater(rm.url());
  loop->runOnce();
  rm.askToReRegister();
  EXPECT_EQ(loop->runOnce(), 0);
  EXPECT_FALSE(identity_.registered());
  loop->runOnce();
  EXPECT_EQ(rm.registrations().size(), 2u);
  EXPECT_TRUE(identity_.registered());

  rm.forgetNodes();
  EXPECT_EQ(loop->runOnce(), 0);  // 404
  EXPECT_FALSE(identity_.registered());
  loop->runOnce();
  EXPECT_EQ(rm.registrations().size(), 3u);
  loop->runOnce();
  // The one that asked to re-register and this one; the 404 was not recorded.
  EXPECT_EQ(rm.heartbeats().size(), 2u);
}

TEST_F(NodeStatusUpdaterTest, AnUnreachableRmIsRetriedWithGrowingDelaysAndContainersKeepRunning) {
  // A port nothing listens on: bind one, note it, let it go.
  const int freePort = testing::unusedPort();
  containers_->launch(launchRequest("survivor", "sleep 60"));
  auto loop = updater("http://127.0.0.1:" + std::to_string(freePort));
  std::vector<DurationMs> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(loop->runOnce());
  for (DurationMs delay : delays) {
    EXPECT_GT(delay, 0);
    EXPECT_LE(delay, 800);
  }
  EXPECT_GE(delays.back(), 400);  // the ceiling doubled up to the maximum: at least half of it
  EXPECT_LE(delays.front(), 100);
  EXPECT_FALSE(identity_.registered());
  EXPECT_EQ(containers_->report("survivor")->state, "RUNNING");
}

TEST_F(NodeStatusUpdaterTest, ARefusedRegistrationReadsTheCredentialAgainUntilOneIsAccepted) {
  // As a node started before tide-rm wrote its cluster secret file: no credential at first.
  FakeResourceManager rm("s", 100);
  rm.requireRegistrationCredential("node-credential");
  std::optional<std::string> onDisk;  // what the credential's file holds
  int reads = 0;
  auto loop = updater(rm.url(), [&](NodeStatusUpdaterOptions& options) {
    options.credentialSource = "the test's credential";
    options.reloadCredential = [&] {
      ++reads;
      return onDisk;
    };
  });
  // Refused, and nothing to read yet: retried later, with growing delays.
  const DurationMs first = loop->runOnce();
  const DurationMs second = loop->runOnce();
  EXPECT_GT(first, 0);
  EXPECT_GT(second, 0);
  EXPECT_FALSE(identity_.registered());
  EXPECT_EQ(rm.refusedRegistrations(), 2);
  EXPECT_EQ(reads, 2);
  // A credential appears, a wrong one: tried at once, refused, and then waited for again.
  onDisk = "wrong";
  EXPECT_EQ(loop->runOnce(), 0);
  EXPECT_GT(loop->runOnce(), 0);
  EXPECT_EQ(rm.refusedRegistrations(), 4);
  // The right one: tried at once and accepted.
  onDisk = "node-credential";
  EXPECT_EQ(loop->runOnce(), 0);
  EXPECT_EQ(loop->runOnce(), 0);  // registered: heartbeat at once
  EXPECT_TRUE(identity_.registered());
  ASSERT_EQ(rm.registrations().size(), 1u);
  EXPECT_EQ(rm.refusedRegistrations(), 5);
}

TEST_F(NodeStatusUpdaterTest, TheLoopThreadRegistersAndHeartbeatsUntilStopped) {
  FakeResourceManager rm("s", 50);
  auto loop = updater(rm.url());
  loop->start();
  EXPECT_TRUE(eventually([&] { return rm.heartbeats().size() >= 3; }, kBound));
  // stop() wakes the loop out of its wait instead of letting the interval run out.
  const auto before = std::chrono::steady_clock::now();
  loop->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5));
}

}  // namespace
}  // namespace tide::nm
