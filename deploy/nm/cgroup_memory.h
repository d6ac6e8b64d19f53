#pragma once

// Container memory limits through the cgroup v2 memory controller. The node manager keeps
// one cgroup of its own below the one it was started in (`<name>`), and one child of it per
// container with memory.max set to the container's memory; the kernel OOM-kills a container
// that goes over it, which memory.events (oom_kill) tells afterwards.
//
// This needs cgroup v2 with the memory controller delegated to the NM (systemd's Delegate=yes,
// or root on a cgroup v2 host); create() finds out and says why not otherwise.

#include <cstdint>
#include <memory>
#include <set>
#include <string>

namespace tide::nm {

class CgroupMemory {
 public:
  // Prepares <root>/<own cgroup>/<name>/ with the memory controller enabled for its children
  // and checks that a child gets a writable memory.max. Returns null and sets *whyNot when
  // any step fails (no cgroup v2, no memory controller, no permission...).
  static std::unique_ptr<CgroupMemory> create(const std::string& root, const std::string& name,
                                              std::string* whyNot);

  // Creates the container's cgroup with memory.max = limitBytes (and no swap, and the whole
  // group OOM-killed together). Returns its path; throws std::runtime_error on failure.
  std::string createContainerGroup(const std::string& containerId, int64_t limitBytes) const;
  // memory.current of a container's cgroup; 0 when unreadable.
  static int64_t currentBytes(const std::string& groupPath);
  // Whether the kernel OOM-killed anything in the cgroup (memory.events oom_kill > 0).
  static bool oomKilled(const std::string& groupPath);
  // Kills whatever is left in the cgroup (cgroup.kill where the kernel has it) and removes it.
  static void remove(const std::string& groupPath);
  // Removes the container cgroups a previous run of this NM left behind, but those named in
  // `keep` (containers re-attached to); returns how many.
  int removeLeftovers(const std::set<std::string>& keep = {}) const;

  // The file a process writes "$$" to so that it joins the cgroup before it runs anything.
  static std::string procsFile(const std::string& groupPath) { return groupPath + "/cgroup.procs"; }
  const std::string& path() const { return path_; }

 private:
  explicit CgroupMemory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace tide::nm
