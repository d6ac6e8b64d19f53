// End to end: the real tide-nm binary against a fake RM on loopback. It registers with its
// resources, runs a container launched with an RM token, reports the completion in a
// heartbeat, stops its containers on SIGTERM; a restarted NM re-attaches to what a crashed one
// left running (nm.recovery.enabled) or, with recovery off, kills it.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/spawn.h"
#include "deploy/nm/node_manager_server.h"
#include "deploy/nm/process_group.h"
#include "rest/http_client.h"
#include "rest/http_server.h"
#include "rest/json.h"
#include "tests/nm/fake_resource_manager.h"
#include "tests/nm/nm_test_util.h"
#include "tests/support/polling.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace tide::nm {
namespace {

using testing::Descendants;
using testing::expectEndedWhileTheNodeManagerWasDown;
using testing::FakeResourceManager;
using testing::kBound;
using testing::kCommandLeavingDescendants;
using testing::launchRequest;
using testing::readPidFile;
using testing::unusedPort;
using testing::waitForDescendants;
using testing::waitForPidFile;
using testing_support::eventually;
using testing_support::readFile;

// One tide-nm process, output in a log file; killed if the test leaves it running.
class NmProcess {
 public:
  NmProcess(const std::vector<std::string>& args, const std::string& logPath,
            const std::string& program = TIDE_BIN_DIR "/tide-nm") {
    SpawnOptions spawn;
    spawn.argv = {program};
    spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
    spawn.stdoutPath = logPath;
    spawn.stderrPath = logPath;
    spawn.appendOutput = true;
    try {
      pid_ = spawnProcess(spawn);
    } catch (const SpawnError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  ~NmProcess() {
    if (pid_ > 0 && !exitStatus_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int signal) const { ::kill(pid_, signal); }
  // The wait status once it exited within `bound`.
  std::optional<int> waitExit(std::chrono::milliseconds bound = std::chrono::seconds(15)) {
    eventually(
        [&] {
          int status = 0;
          if (::waitpid(pid_, &status, WNOHANG) == pid_) exitStatus_ = status;
          return exitStatus_.has_value();
        },
        bound);
    return exitStatus_;
  }

 private:
  pid_t pid_ = 0;
  std::optional<int> exitStatus_;
};

class TideNmBinaryTest : public ::testing::Test {
 protected:
  std::vector<std::string> nmArgs(const std::string& portFile, int port = 0) const {
    return {"--conf",
            "nm.rm=" + rm_.url(),
            "--conf",
            "nm.port=" + std::to_string(port),
            "--conf",
            "nm.cores=3",
            "--conf",
            "nm.memory=2g",
            "--conf",
            "nm.workDir=" + workDir(),
            "--conf",
            "nm.stopGracePeriod=1s",
            "--port-file",
            portFile,
            "--memory-enforcement",
            "watchdog"};
  }
  std::string workDir() const { return (dir_.path() / "work").string(); }
  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }

  // The port the NM wrote once it was serving, or 0 when it did not within the bound.
  int waitForPort(const std::string& portFile) const {
    int port = 0;
    eventually(
        [&] {
          const std::string text = readFile(portFile);
          if (text.empty() || text.back() != '\n') return false;
          port = std::stoi(text);
          return true;
        },
        kBound);
    return port;
  }

  rest::HttpResponse launch(rest::HttpClient& client, const std::string& containerId,
                            const std::string& command) {
    return client.request(
        "POST", "/ws/v1/node/containers", rest::toJson(launchRequest(containerId, command)),
        {{"Content-Type", "application/json"},
         {NodeManagerServer::kTokenHeader, rest::containerToken(rm_.secret(), containerId)}});
  }

  std::string containerDir(const std::string& containerId) const {
    return workDir() + "/application_test_0001/" + containerId;
  }
  std::string containerFile(const std::string& containerId, const std::string& name) const {
    return containerDir(containerId) + "/" + name;
  }

  // A client of the NM that writes `portFile`, once it serves and says it registered with the
  // RM; null, with a test failure showing its log `logFile`, when it does not (kBound each).
  std::unique_ptr<rest::HttpClient> registeredClient(const std::string& portFile,
                                                     const std::string& logFile,
                                                     int* port = nullptr) const {
    const int serving = waitForPort(portFile);
    if (port != nullptr) *port = serving;
    if (serving <= 0) {
      ADD_FAILURE() << "no port in " << portFile << "\n" << readFile(logFile);
      return nullptr;
    }
    auto client = clientFor(serving);
    if (!becomesRegistered(*client)) {
      ADD_FAILURE() << "not registered\n" << readFile(logFile);
      return nullptr;
    }
    return client;
  }

  // True once the NM behind `client` says it registered with the RM, within `bound`.
  static bool becomesRegistered(rest::HttpClient& client,
                                std::chrono::milliseconds bound = kBound) {
    return eventually(
        [&] {
          return client.request("GET", "/ws/v1/node/info").body.find("\"registered\":true") !=
                 std::string::npos;
        },
        bound);
  }

  // True once a heartbeat reported `containerId` COMPLETE to the fake RM, within kBound.
  bool reportedComplete(const std::string& containerId) const {
    return eventually(
        [&] {
          const auto status = rm_.lastStatusOf(containerId);
          return status && status->state == "COMPLETE";
        },
        kBound);
  }

  // The supervisor pid in a launch's answer.
  static pid_t pidOf(const rest::HttpResponse& launched) {
    return static_cast<pid_t>(rest::containerReportFromJson(rest::parseJson(launched.body)).pid);
  }

  // SIGTERM: the NM stops its containers and exits with status 0.
  static void expectStopsCleanly(NmProcess& nm) {
    nm.signal(SIGTERM);
    const std::optional<int> exit = nm.waitExit();
    ASSERT_TRUE(exit.has_value());
    EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0) << *exit;
  }

  static std::unique_ptr<rest::HttpClient> clientFor(int port) {
    rest::HttpClientOptions options;
    options.retry.maxAttempts = 1;
    return std::make_unique<rest::HttpClient>("http://127.0.0.1:" + std::to_string(port), options);
  }

  testing_support::TempDir dir_;
  FakeResourceManager rm_{"e2e-node-secret", 100};
};

TEST_F(TideNmBinaryTest, RegistersRunsContainersReportsThemAndStopsThemOnSigterm) {
  NmProcess nm(nmArgs(path("port")), path("nm.log"));
  const int port = waitForPort(path("port"));
  ASSERT_GT(port, 0) << readFile(path("nm.log"));
  EXPECT_NE(readFile(path("nm.log")).find("tide-nm listening on 127.0.0.1:" + std::to_string(port)),
            std::string::npos);
  EXPECT_NE(readFile(path("nm.log")).find("memory enforcement: watchdog"), std::string::npos);

  ASSERT_TRUE(eventually([&] { return !rm_.registrations().empty(); }, kBound))
      << readFile(path("nm.log"));
  const rest::NodeRegistration registration = rm_.registrations()[0];
  EXPECT_EQ(registration.host, "127.0.0.1");
  EXPECT_EQ(registration.port, port);
  EXPECT_EQ(registration.capability.vCores, 3);
  EXPECT_EQ(registration.capability.memoryMb, 2048);

  auto client = clientFor(port);
  // The NM takes container calls once it registered; the fake RM has seen that by now.
  ASSERT_TRUE(becomesRegistered(*client));
  // The work dir it made is its user's only.
  EXPECT_EQ(std::filesystem::status(workDir()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  const auto quick = launch(*client, "quick", "echo hello; exit 7");
  ASSERT_EQ(quick.status, 201) << quick.body;
  const auto lasting = launch(*client, "lasting", "sleep 60 & echo $! > grandchild.pid; wait");
  ASSERT_EQ(lasting.status, 201) << lasting.body;
  const pid_t lastingPid = pidOf(lasting);

  ASSERT_TRUE(reportedComplete("quick")) << readFile(path("nm.log"));
  EXPECT_EQ(rm_.lastStatusOf("quick")->exitStatus, 7);
  EXPECT_EQ(rm_.lastStatusOf("quick")->diagnostics, "exited with code 7");
  EXPECT_EQ(readFile(containerFile("quick", "stdout")), "hello\n");
  EXPECT_EQ(rm_.lastStatusOf("lasting")->state, "RUNNING");
  EXPECT_EQ(rm_.heartbeats().back().authorization, "Bearer e2e-node-secret");

  const pid_t grandchild = waitForPidFile(containerFile("lasting", "grandchild.pid"));
  ASSERT_NE(grandchild, 0);
  EXPECT_FALSE(processGone(grandchild));

  expectStopsCleanly(nm);
  EXPECT_TRUE(
      eventually([&] { return processGone(lastingPid) && processGone(grandchild); }, kBound));
}

TEST_F(TideNmBinaryTest, WithRecoveryOffARestartedNodeManagerKillsWhatACrashedOneLeftBehind) {
  pid_t leader = 0;
  Descendants left;  // the daemon: in no process group or session of the container
  {
    NmProcess crashing(nmArgs(path("port1")), path("nm1.log"));
    auto client = registeredClient(path("port1"), path("nm1.log"));
    ASSERT_TRUE(client);
    const auto started = launch(*client, "orphan", kCommandLeavingDescendants);
    ASSERT_EQ(started.status, 201) << started.body;
    leader = pidOf(started);
    const std::optional<Descendants> descendants = waitForDescendants(containerDir("orphan"));
    ASSERT_TRUE(descendants.has_value());
    left = *descendants;
    crashing.signal(SIGKILL);
    ASSERT_TRUE(crashing.waitExit().has_value());
  }
  // Nobody cleaned up: the container outlived its node manager.
  EXPECT_FALSE(processGone(leader));
  EXPECT_FALSE(processGone(left.grandchild));
  EXPECT_FALSE(processGone(left.daemon));

  std::vector<std::string> args = nmArgs(path("port2"));
  args.insert(args.end(), {"--conf", "nm.recovery.enabled=false"});
  NmProcess restarted(args, path("nm2.log"));
  ASSERT_GT(waitForPort(path("port2")), 0) << readFile(path("nm2.log"));
  // The port file is written after the cleanup, so the kill has been sent by now.
  EXPECT_TRUE(eventually(
      [&] {
        return processGone(leader) && processGone(left.grandchild) && processGone(left.daemon);
      },
      kBound));
  EXPECT_NE(readFile(path("nm2.log")).find("left behind by a previous node manager"),
            std::string::npos);
  expectStopsCleanly(restarted);
}

TEST_F(TideNmBinaryTest, AConfigurationErrorExitsWithStatus2) {
  NmProcess nm({"--conf", "nm.port=many", "--conf", "nm.workDir=" + workDir()}, path("bad.log"));
  const std::optional<int> exit = nm.waitExit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(WIFEXITED(*exit));
  EXPECT_EQ(WEXITSTATUS(*exit), 2);
  EXPECT_NE(readFile(path("bad.log")).find("nm.port"), std::string::npos);
}

// The default work dir is under /tmp (/tmp/tide-nm-<port>), where another user could make it
// first and plant records whose pids this node manager would signal: it does not start there.
TEST_F(TideNmBinaryTest, AWorkDirOfAnotherUserStopsTheStartNamingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a directory of another user needs root";
  std::filesystem::create_directories(workDir());
  ASSERT_EQ(::chown(workDir().c_str(), 65534, 65534), 0);
  NmProcess nm(nmArgs(path("port")), path("nm.log"));
  const std::optional<int> exit = nm.waitExit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 1) << *exit;
  const std::string log = readFile(path("nm.log"));
  EXPECT_NE(log.find("nm.workDir: " + workDir() + " belongs to uid 65534, not to this user"),
            std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(workDir() + "/.containers"));
}

TEST_F(TideNmBinaryTest, WhatAKilledSupervisorLeftBehindIsKilledByTheNodeManager) {
  // tide-nm is a subreaper: when a container's supervisor is SIGKILLed, what was below it comes
  // to the NM, which kills it.
  NmProcess nm(nmArgs(path("port")), path("nm.log"));
  auto client = registeredClient(path("port"), path("nm.log"));
  ASSERT_TRUE(client);
  const auto started = launch(*client, "abandoned", kCommandLeavingDescendants);
  ASSERT_EQ(started.status, 201) << started.body;
  const pid_t supervisor = pidOf(started);
  const std::optional<Descendants> left = waitForDescendants(containerDir("abandoned"));
  ASSERT_TRUE(left.has_value());
  ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
  EXPECT_TRUE(eventually([&] { return processGone(left->grandchild) && processGone(left->daemon); },
                         kBound))
      << readFile(path("nm.log"));
  nm.signal(SIGTERM);
  ASSERT_TRUE(nm.waitExit().has_value());
}

// NM recovery (issue 12): kill -9 of tide-nm, a restart on the same work dir and port. The
// container still running is re-attached (same pid, its daemons untouched) and reported
// RUNNING; the one that exited while no NM ran is reported COMPLETE with its exit code and the
// reason; both are then the restarted NM's to stop, whole.
TEST_F(TideNmBinaryTest, ARestartedNodeManagerReattachesToItsContainersAndReportsThoseThatEnded) {
  pid_t lastingPid = 0;
  pid_t enderPid = 0;
  pid_t grandchild = 0;
  pid_t daemon = 0;
  int port = 0;
  {
    NmProcess crashing(nmArgs(path("port1")), path("nm1.log"));
    auto client = registeredClient(path("port1"), path("nm1.log"), &port);
    ASSERT_TRUE(client);
    const auto lasting = launch(*client, "lasting", kCommandLeavingDescendants);
    ASSERT_EQ(lasting.status, 201) << lasting.body;
    lastingPid = pidOf(lasting);
    const auto ender = launch(
        *client, "ender",
        "while [ ! -e '" + path("go") + "' ]; do sleep 0.05; done; echo leaving >&2; exit 5");
    ASSERT_EQ(ender.status, 201) << ender.body;
    enderPid = pidOf(ender);
    const std::optional<Descendants> descendants = waitForDescendants(containerDir("lasting"));
    ASSERT_TRUE(descendants.has_value());
    grandchild = descendants->grandchild;
    daemon = descendants->daemon;
    ASSERT_TRUE(eventually(
        [&] {
          const auto status = rm_.lastStatusOf("ender");
          return status && status->state == "RUNNING";
        },
        kBound));
    crashing.signal(SIGKILL);
    ASSERT_TRUE(crashing.waitExit().has_value());
  }
  // Its containers outlived it; one of them ends while no node manager runs.
  EXPECT_FALSE(processGone(lastingPid));
  testing_support::writeFile(path("go"), "");
  ASSERT_TRUE(eventually([&] { return processGone(enderPid); }, kBound));
  const size_t heartbeatsBefore = rm_.heartbeats().size();

  NmProcess restarted(nmArgs(path("port2"), port), path("nm2.log"));
  ASSERT_EQ(waitForPort(path("port2")), port) << readFile(path("nm2.log"));
  std::optional<rest::ContainerStatus> lastingStatus;
  std::optional<rest::ContainerStatus> enderStatus;
  ASSERT_TRUE(eventually(
      [&] {
        const auto beats = rm_.heartbeats();
        for (size_t i = heartbeatsBefore; i < beats.size(); ++i) {
          for (const rest::ContainerStatus& status : beats[i].body.containers) {
            if (status.containerId == "lasting") lastingStatus = status;
            if (status.containerId == "ender") enderStatus = status;
          }
        }
        return lastingStatus && enderStatus;
      },
      kBound))
      << readFile(path("nm2.log"));
  EXPECT_EQ(rm_.registrations().size(), 2u);
  EXPECT_EQ(lastingStatus->state, "RUNNING");
  expectEndedWhileTheNodeManagerWasDown(*enderStatus, 5);
  EXPECT_NE(enderStatus->diagnostics.find("leaving"), std::string::npos)
      << enderStatus->diagnostics;
  EXPECT_NE(readFile(path("nm2.log")).find("re-attached to container lasting"), std::string::npos);

  // The same process, reachable with the token it was launched with.
  auto client = clientFor(port);
  const auto got = client->request(
      "GET", "/ws/v1/node/containers/lasting", "",
      {{NodeManagerServer::kTokenHeader, rest::containerToken(rm_.secret(), "lasting")}});
  ASSERT_EQ(got.status, 200) << got.body;
  const rest::ContainerReport report = rest::containerReportFromJson(rest::parseJson(got.body));
  EXPECT_EQ(report.pid, lastingPid);
  EXPECT_EQ(report.state, "RUNNING");
  EXPECT_FALSE(processGone(grandchild));
  EXPECT_FALSE(processGone(daemon));

  // Stopped by the RM, it goes whole: its daemon in a session of its own included.
  rm_.stopInNextHeartbeat("lasting");
  ASSERT_TRUE(reportedComplete("lasting")) << readFile(path("nm2.log"));
  EXPECT_NE(rm_.lastStatusOf("lasting")->diagnostics.find("stopped by the resource manager"),
            std::string::npos);
  EXPECT_TRUE(eventually(
      [&] { return processGone(lastingPid) && processGone(grandchild) && processGone(daemon); },
      kBound));

  expectStopsCleanly(restarted);
}

TEST_F(TideNmBinaryTest, ARecordItCannotReadStopsTheStartWithAClearError) {
  std::filesystem::create_directories(workDir() + "/.containers");
  const std::string record = workDir() + "/.containers/container_x.json";
  testing_support::writeFile(record, R"({"version":3,"containerId":"container_x"})");
  NmProcess nm(nmArgs(path("port")), path("nm.log"));
  const std::optional<int> exit = nm.waitExit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 1) << *exit;
  const std::string log = readFile(path("nm.log"));
  EXPECT_NE(log.find(record + ": format version 3 was written by a newer tide-nm"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("nm.recovery.enabled=false"), std::string::npos) << log;
  EXPECT_TRUE(std::filesystem::exists(record));
}

TEST_F(TideNmBinaryTest, ANodeStartedBeforeTheResourceManagerRegistersOnceItsSecretIsWritten) {
  // tide-nm first, pointed at a port where tide-rm is not yet, and at the secret file tide-rm
  // will create: no credential at all when it starts.
  const int rmPort = unusedPort();
  const std::string secretFile = path("secret/rm.secret");
  NmProcess nm(
      {"--conf", "nm.rm=http://127.0.0.1:" + std::to_string(rmPort), "--conf", "nm.port=0",
       "--conf", "nm.cores=2", "--conf", "nm.memory=1g", "--conf", "nm.workDir=" + workDir(),
       "--conf", "rm.secretFile=" + secretFile, "--port-file", path("nm.port")},
      path("nm.log"));
  const int port = waitForPort(path("nm.port"));
  ASSERT_GT(port, 0) << readFile(path("nm.log"));
  EXPECT_TRUE(eventually(
      [&] {
        return readFile(path("nm.log"))
                   .find("waiting for the cluster secret file " + secretFile +
                         " (rm.secretFile)") != std::string::npos;
      },
      kBound))
      << readFile(path("nm.log"));
  // Then tide-rm, on that port: it writes the secret file before it listens. The node, refused
  // without a credential, reads the file again and registers.
  NmProcess rm({"--conf", "rm.host=127.0.0.1", "--conf", "rm.port=" + std::to_string(rmPort),
                "--conf", "rm.secretFile=" + secretFile},
               path("rm.log"), TIDE_BIN_DIR "/tide-rm");
  auto client = clientFor(port);
  EXPECT_TRUE(becomesRegistered(*client, std::chrono::seconds(60)))
      << readFile(path("nm.log")) << readFile(path("rm.log"));
  EXPECT_NE(readFile(path("nm.log")).find("read a new credential from the cluster secret file"),
            std::string::npos)
      << readFile(path("nm.log"));
  nm.signal(SIGTERM);
  EXPECT_TRUE(nm.waitExit().has_value());
  rm.signal(SIGTERM);
  EXPECT_TRUE(rm.waitExit().has_value());
}

}  // namespace
}  // namespace tide::nm
