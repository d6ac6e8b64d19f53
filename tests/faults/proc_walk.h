#pragma once

// Finds processes by what ties them to a test, never by their name: an environment entry the
// test set (inherited by everything below where it was set, whatever the process calls
// itself), or a working directory under the test's directory. Reads /proc/<pid>/environ and
// /proc/<pid>/cwd, which needs the same user as the processes (or root).

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/polling.h"

namespace tide::faults {

struct WalkedProcess {
  pid_t pid = 0;
  std::string environ;  // NUL-separated "NAME=value" entries
  std::string cwd;
  std::string stat;  // /proc/<pid>/stat (for reports)
};

inline std::vector<pid_t> allPids() {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') {
      pids.push_back(static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10)));
    }
  }
  closedir(proc);
  return pids;
}

inline bool readProcess(pid_t pid, WalkedProcess& out) {
  const std::string base = "/proc/" + std::to_string(pid);
  std::ifstream stat(base + "/stat");
  if (!std::getline(stat, out.stat)) return false;
  // A zombie is dead already: it holds no memory and runs nothing, it waits for its reaper.
  const size_t close = out.stat.rfind(')');
  if (close != std::string::npos && close + 2 < out.stat.size() && out.stat[close + 2] == 'Z') {
    return false;
  }
  std::ifstream environ(base + "/environ", std::ios::binary);
  out.environ.assign(std::istreambuf_iterator<char>(environ), std::istreambuf_iterator<char>());
  char buffer[4096];
  const ssize_t n = ::readlink((base + "/cwd").c_str(), buffer, sizeof(buffer) - 1);
  out.cwd = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
  out.pid = pid;
  return true;
}

inline bool hasEnvEntry(const WalkedProcess& process, const std::string& entry) {
  std::istringstream entries(process.environ);
  std::string e;
  while (std::getline(entries, e, '\0')) {
    if (e == entry) return true;
  }
  return false;
}

// Every live (non-zombie) process but this one that `matches`.
inline std::vector<WalkedProcess> findProcesses(
    const std::function<bool(const WalkedProcess&)>& matches) {
  std::vector<WalkedProcess> found;
  for (pid_t pid : allPids()) {
    if (pid == ::getpid()) continue;
    WalkedProcess process;
    if (readProcess(pid, process) && matches(process)) found.push_back(std::move(process));
  }
  return found;
}

// Processes whose environment holds exactly "NAME=value".
inline std::vector<WalkedProcess> processesWithEnv(const std::string& entry) {
  return findProcesses([&](const WalkedProcess& p) { return hasEnvEntry(p, entry); });
}

// Processes with the entry, or whose working directory is under `dir` (an empty `entry` or `dir`
// matches nothing: a process whose environment holds an empty string, as slurmscriptd's does, is
// not ours).
inline std::vector<WalkedProcess> processesOfRun(const std::string& entry, const std::string& dir) {
  return findProcesses([&](const WalkedProcess& p) {
    return (!entry.empty() && hasEnvEntry(p, entry)) || (!dir.empty() && p.cwd.rfind(dir, 0) == 0);
  });
}

// Polls (bounded) until `find` returns nothing; returns what was left at the end.
inline std::vector<WalkedProcess> waitUntilNoneLeft(
    const std::function<std::vector<WalkedProcess>()>& find,
    std::chrono::milliseconds bound = std::chrono::seconds(20)) {
  std::vector<WalkedProcess> left;
  testing_support::eventually(
      [&] {
        left = find();
        return left.empty();
      },
      bound, std::chrono::milliseconds(50));
  return left;
}

inline std::string describe(const std::vector<WalkedProcess>& processes) {
  std::string text;
  for (const WalkedProcess& p : processes) text += "\n  " + p.stat + " cwd=" + p.cwd;
  return text;
}

}  // namespace tide::faults
