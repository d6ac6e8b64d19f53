#pragma once

// Helpers for end-to-end tests: bounded polling, the AM's status API, running `tide`.

#include <gtest/gtest.h>

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "rest/http_client.h"
#include "rest/json.h"

namespace tide::testing_support {

// Polls `condition` every 25ms until it holds or `timeout` passes; returns whether it held.
inline bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs a command to its end (bounded) and returns its exit status and output.
struct CommandResult {
  int status = -1;
  std::string output;
};
inline CommandResult runCommand(const std::vector<std::string>& argv, const std::string& logPath,
                                std::chrono::milliseconds timeout) {
  ChildSpec spec;
  spec.argv = argv;
  spec.logPath = logPath;
  ChildProcess child(spec);
  CommandResult result;
  auto status = child.waitFor(timeout);
  if (!status) {
    child.stop();
    ADD_FAILURE() << argv[0] << " did not finish within " << timeout.count() << "ms";
  }
  result.status = status.value_or(-1);
  result.output = readFile(logPath);
  return result;
}

// The pid of the process whose command line contains `commandPart` and whose environment has
// `variable`=`value` (e.g. the tide-am of one application), or 0.
inline pid_t findProcess(const std::string& commandPart, const std::string& variable,
                         const std::string& value) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = readFile(entry.path().string() + "/cmdline");
    if (cmdline.find(commandPart) == std::string::npos) continue;
    const std::string environ = readFile(entry.path().string() + "/environ");
    const std::string wanted = variable + "=" + value;
    size_t start = 0;
    while (start < environ.size()) {
      const size_t end = environ.find('\0', start);
      if (environ.compare(start, (end == std::string::npos ? environ.size() : end) - start,
                          wanted) == 0) {
        return static_cast<pid_t>(std::stol(name));
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return 0;
}

}  // namespace tide::testing_support
