#pragma once

// Shared pieces of the node manager tests: their wait bound, pid files and a launch request
// builder.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "rest/messages/node.h"
#include "tests/support/files.h"

namespace tide::nm::testing {

// Every wait in these tests is bounded by this (testing_support::eventually).
constexpr std::chrono::milliseconds kBound = std::chrono::seconds(10);

// The number a container wrote into a file, once the file holds a whole line.
inline pid_t readPidFile(const std::filesystem::path& path) {
  const std::string text = testing_support::readFile(path);
  if (text.empty() || text.back() != '\n') return 0;
  return static_cast<pid_t>(std::stol(text));
}

inline rest::ContainerLaunchRequest launchRequest(const std::string& containerId,
                                                  const std::string& command,
                                                  int64_t memoryMb = 64) {
  rest::ContainerLaunchRequest request;
  request.containerId = containerId;
  request.applicationId = "application_test_0001";
  request.command = command;
  request.resource = {memoryMb, 1};
  return request;
}

}  // namespace tide::nm::testing
