#pragma once

// Shared pieces of the node manager tests: bounded polling, small file helpers and a launch
// request builder.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "rest/messages/node.h"

namespace tide::nm::testing {

// Polls `condition` every 20 ms until it holds or `bound` passes; returns its last value.
// Every wait in these tests goes through here: no fixed sleeps hoping something happened.
inline bool waitFor(const std::function<bool()>& condition,
                    std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The number a container wrote into a file, once the file holds a whole line.
inline pid_t readPidFile(const std::filesystem::path& path) {
  const std::string text = readFile(path);
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
