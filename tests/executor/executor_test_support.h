#pragma once

// Helpers the executor's tests share: reading a task's files, telling whether a process is
// gone, and bounded polling.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tide::executor::testing {

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Gone: no such process, or a zombie nobody reaps (orphans go to a PID 1 that may not reap).
inline bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const size_t afterName = line.rfind(')');
  return afterName != std::string::npos && line.size() > afterName + 2 &&
         line[afterName + 2] == 'Z';
}

// Polls `condition` every 5ms until it holds or `bound` passes; returns whether it held.
template <typename Condition>
bool pollUntil(Condition condition, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace tide::executor::testing
