#include "deploy/nm/cgroup_memory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tide::nm {
namespace fs = std::filesystem;
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes with one write(2), as cgroup files want; returns "" or the error text.
std::string writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) return path + ": " + std::strerror(errno);
  out << text;
  out.flush();
  if (!out) return path + ": " + std::strerror(errno);
  return "";
}

bool hasWord(const std::string& text, const std::string& word) {
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == word) return true;
  }
  return false;
}

// The "0::/path" line of /proc/self/cgroup: where this process sits in the v2 hierarchy.
std::string ownCgroupPath() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

std::string enableMemoryFor(const std::string& group) {
  if (hasWord(readFile(group + "/cgroup.subtree_control"), "memory")) return "";
  return writeFile(group + "/cgroup.subtree_control", "+memory");
}

}  // namespace

std::unique_ptr<CgroupMemory> CgroupMemory::create(const std::string& root, const std::string& name,
                                                   std::string* whyNot) {
  auto fail = [&](const std::string& reason) -> std::unique_ptr<CgroupMemory> {
    if (whyNot != nullptr) *whyNot = reason;
    return nullptr;
  };
  if (!fs::exists(root + "/cgroup.controllers")) {
    return fail(root + " is not a cgroup v2 hierarchy");
  }
  const std::string own = ownCgroupPath();
  if (own.empty()) return fail("this process has no cgroup v2 path in /proc/self/cgroup");
  const std::string base = root + (own == "/" ? "" : own);
  if (!hasWord(readFile(base + "/cgroup.controllers"), "memory")) {
    return fail("the memory controller is not available in " + base);
  }
  // cgroup v2 lets a group hand controllers to its children only while it holds no processes
  // itself ("no internal processes"), so the NM moves itself into a leaf first when needed.
  if (std::string error = enableMemoryFor(base); !error.empty()) {
    const std::string self = base + "/" + name + "-self";
    std::error_code ignored;
    fs::create_directory(self, ignored);
    if (std::string moveError = writeFile(self + "/cgroup.procs", "0"); !moveError.empty()) {
      return fail("cannot enable memory in " + base + " (" + error +
                  ") nor move the node manager into a leaf (" + moveError + ")");
    }
    if (std::string retry = enableMemoryFor(base); !retry.empty()) {
      return fail("cannot enable the memory controller: " + retry);
    }
  }
  const std::string containers = base + "/" + name;
  std::error_code ec;
  fs::create_directory(containers, ec);
  if (ec) return fail("cannot create " + containers + ": " + ec.message());
  if (std::string error = enableMemoryFor(containers); !error.empty()) {
    return fail("cannot enable the memory controller: " + error);
  }
  // A probe child proves that container groups will get a writable memory.max.
  const std::string probe = containers + "/probe";
  fs::create_directory(probe, ec);
  if (ec) return fail("cannot create " + probe + ": " + ec.message());
  std::string probeError = writeFile(probe + "/memory.max", "max");
  ::rmdir(probe.c_str());
  if (!probeError.empty()) return fail("memory.max is not writable: " + probeError);
  return std::unique_ptr<CgroupMemory>(new CgroupMemory(containers));
}

std::string CgroupMemory::createContainerGroup(const std::string& containerId,
                                               int64_t limitBytes) const {
  const std::string group = path_ + "/" + containerId;
  std::error_code ec;
  fs::create_directory(group, ec);
  if (ec) throw std::runtime_error("cannot create cgroup " + group + ": " + ec.message());
  if (std::string error = writeFile(group + "/memory.max", std::to_string(limitBytes));
      !error.empty()) {
    remove(group);
    throw std::runtime_error("cannot set memory.max: " + error);
  }
  // Best effort: without swap the limit is the physical one YARN enforces, and with
  // oom.group the whole container dies together instead of losing one process.
  writeFile(group + "/memory.swap.max", "0");
  writeFile(group + "/memory.oom.group", "1");
  return group;
}

int64_t CgroupMemory::currentBytes(const std::string& groupPath) {
  try {
    return std::stoll(readFile(groupPath + "/memory.current"));
  } catch (const std::exception&) {
    return 0;
  }
}

bool CgroupMemory::oomKilled(const std::string& groupPath) {
  std::istringstream events(readFile(groupPath + "/memory.events"));
  std::string key;
  int64_t count = 0;
  while (events >> key >> count) {
    if (key == "oom_kill") return count > 0;
  }
  return false;
}

void CgroupMemory::remove(const std::string& groupPath) {
  if (fs::exists(groupPath + "/cgroup.kill")) writeFile(groupPath + "/cgroup.kill", "1");
  // The kernel removes a cgroup only once its last process has gone, which takes a moment
  // after a kill.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::rmdir(groupPath.c_str()) == 0) return;
    if (errno != EBUSY) return;  // EBUSY: processes still leaving; anything else will not pass
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int CgroupMemory::removeLeftovers(const std::set<std::string>& keep) const {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    if (!entry.is_directory() || keep.count(entry.path().filename().string()) != 0) continue;
    remove(entry.path().string());
    ++removed;
  }
  return removed;
}

}  // namespace tide::nm
