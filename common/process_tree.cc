#include "common/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace tide {
namespace {

std::optional<ProcessInfo> parseStat(pid_t pid, const std::string& line) {
  // The command name (field 2) may hold spaces and parentheses: fields 3.. follow the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  ProcessInfo info;
  info.pid = pid;
  std::string field;
  int64_t rssPages = 0;
  for (int number = 3; number <= 24 && (fields >> field); ++number) {
    try {
      switch (number) {
        case 3:
          info.state = field.empty() ? '?' : field[0];
          break;
        case 4:
          info.ppid = static_cast<pid_t>(std::stol(field));
          break;
        case 5:
          info.pgrp = static_cast<pid_t>(std::stol(field));
          break;
        case 6:
          info.session = static_cast<pid_t>(std::stol(field));
          break;
        case 22:
          info.startTimeTicks = std::stoull(field);
          break;
        case 24:
          rssPages = std::stoll(field);
          break;
        default:
          break;
      }
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  static const int64_t pageSize = sysconf(_SC_PAGESIZE);
  info.residentBytes = rssPages * pageSize;
  return info;
}

}  // namespace

std::optional<ProcessInfo> readProcess(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return parseStat(pid, line);
}

std::vector<ProcessInfo> readProcessTable() {
  std::vector<ProcessInfo> table;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return table;
  while (dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name, nullptr, 10));
    if (auto info = readProcess(pid)) table.push_back(*info);  // else it ended meanwhile
  }
  closedir(proc);
  return table;
}

std::vector<ProcessInfo> descendantsOf(pid_t root, const std::vector<ProcessInfo>& table) {
  std::multimap<pid_t, const ProcessInfo*> children;
  for (const ProcessInfo& info : table) children.emplace(info.ppid, &info);
  std::vector<ProcessInfo> result;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (it->second->pid == root) continue;  // a corrupt snapshot must not loop
      result.push_back(*it->second);
      frontier.push_back(it->second->pid);
    }
    if (result.size() > table.size()) break;
  }
  return result;
}

int64_t treeResidentBytes(pid_t root, const std::vector<ProcessInfo>& table) {
  int64_t total = 0;
  for (const ProcessInfo& info : table) {
    if (info.pid == root) total += info.residentBytes;
  }
  for (const ProcessInfo& info : descendantsOf(root, table)) total += info.residentBytes;
  return total;
}

int signalProcessTree(pid_t root, int signal, bool includeRoot) {
  if (root <= 1) return 0;  // never kill(0), kill(-1) or init
  int signalled = 0;
  for (const ProcessInfo& info : descendantsOf(root, readProcessTable())) {
    if (info.state == 'Z') continue;
    if (::kill(info.pid, signal) == 0) ++signalled;
  }
  if (includeRoot && ::kill(root, signal) == 0) ++signalled;
  return signalled;
}

bool killDescendants(pid_t root, int rounds) {
  if (root <= 1) return false;
  for (int round = 0; round < rounds; ++round) {
    int alive = 0;
    for (const ProcessInfo& info : descendantsOf(root, readProcessTable())) {
      if (info.state == 'Z') continue;  // dead, waiting for its parent to reap it
      ++alive;
      ::kill(info.pid, SIGKILL);
    }
    if (alive == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(round < 5 ? 1 : 10));
  }
  return false;
}

}  // namespace tide
