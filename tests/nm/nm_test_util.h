#pragma once

// Shared pieces of the node manager tests: their wait bound, pid files, a launch request
// builder, the container manager options they start from, a container command that leaves
// descendants behind, and a port nothing listens on.

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "deploy/nm/container_manager.h"
#include "rest/http_server.h"
#include "rest/messages/node.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"

namespace tide::nm::testing {

// Every wait in these tests is bounded by this (testing_support::eventually).
constexpr std::chrono::milliseconds kBound = std::chrono::seconds(10);

// The number a container wrote into a file, once the file holds a whole line.
inline pid_t readPidFile(const std::filesystem::path& path) {
  const std::string text = testing_support::readFile(path);
  if (text.empty() || text.back() != '\n') return 0;
  return static_cast<pid_t>(std::stol(text));
}

// The pid a container wrote into `path`, once it is there (within kBound); 0 when it is not.
inline pid_t waitForPidFile(const std::filesystem::path& path) {
  pid_t pid = 0;
  testing_support::eventually([&] { return (pid = readPidFile(path)) != 0; }, kBound);
  return pid;
}

inline rest::ContainerLaunchRequest launchRequest(
    const std::string& containerId, const std::string& command, int64_t memoryMb = 64,
    const std::string& applicationId = "application_test_0001") {
  rest::ContainerLaunchRequest request;
  request.containerId = containerId;
  request.applicationId = applicationId;
  request.command = command;
  request.resource = {memoryMb, 1};
  return request;
}

// A container manager on `<dir>/work`, offering 4096 MB and 4 cores, reaping every 20 ms.
inline ContainerManagerOptions managerOptions(const std::filesystem::path& dir,
                                              MemoryEnforcement enforcement,
                                              DurationMs stopGracePeriod = 2000) {
  ContainerManagerOptions options;
  options.workDir = (dir / "work").string();
  options.nmAddress = "127.0.0.1:18042";
  options.capacity = {4096, 4};
  options.memoryEnforcement = enforcement;
  options.stopGracePeriod = stopGracePeriod;
  options.reapInterval = 20;
  options.memoryCheckInterval = 50;
  return options;
}

// A container command that leaves a grandchild (its pid in grandchild.pid, in the container's
// directory) and a daemon in no process group or session of the container (setsid and a double
// fork; its pid in daemon.pid), then waits.
constexpr char kCommandLeavingDescendants[] =
    "sleep 60 & echo $! > grandchild.pid; "
    "( setsid sh -c 'echo $$ > daemon.pid; exec sleep 60' & ) ; wait";

struct Descendants {
  pid_t grandchild = 0;
  pid_t daemon = 0;
};

// The pids kCommandLeavingDescendants wrote into `dir`, once both are there (within kBound);
// nothing when they are not.
inline std::optional<Descendants> waitForDescendants(const std::filesystem::path& dir) {
  Descendants found;
  if (!testing_support::eventually(
          [&] {
            found.grandchild = readPidFile(dir / "grandchild.pid");
            found.daemon = readPidFile(dir / "daemon.pid");
            return found.grandchild != 0 && found.daemon != 0;
          },
          kBound)) {
    return std::nullopt;
  }
  return found;
}

// A container (report or heartbeat status) that ended with `exitCode` while no node manager
// watched it, as a restarted one reports it.
template <typename Report>
void expectEndedWhileTheNodeManagerWasDown(const Report& report, int exitCode) {
  EXPECT_EQ(report.state, "COMPLETE");
  EXPECT_EQ(report.exitStatus, exitCode);
  EXPECT_EQ(report.diagnostics.rfind("exited while the node manager was down", 0), 0u)
      << report.diagnostics;
  EXPECT_NE(report.diagnostics.find("exited with code " + std::to_string(exitCode)),
            std::string::npos)
      << report.diagnostics;
}

// A loopback port nothing listens on: a server bound it and let it go.
inline int unusedPort() {
  rest::HttpServerOptions options;
  options.log = [](const std::string&) {};
  rest::HttpServer probe(options);
  return probe.start();
}

}  // namespace tide::nm::testing
