#pragma once

// A record on disk of each running container's process group, so that a node manager that
// died (crash, SIGKILL, OOM) does not leave its containers running unsupervised: the next
// NM on the same work dir kills every group recorded there before it starts.
//
// One file per container: <dir>/<containerId>.pgid holding "<pgid> <boot id> <start time>"
// (the supervisor's pid, which leads the container's session and group, and its start time in
// clock ticks). The boot id and start time keep a record from killing an unrelated process
// that got the same id; the tree below a live supervisor is killed, then its group.

#include <sys/types.h>

#include <string>
#include <vector>

namespace tide::nm {

class ProcessGroupRecords {
 public:
  explicit ProcessGroupRecords(std::string directory);

  // Creates the directory when missing; throws std::runtime_error when it cannot.
  void ensureDirectory() const;
  // Best effort: failures are returned as text ("" on success), a missing record only
  // weakens the restart cleanup.
  std::string record(const std::string& containerId, pid_t pgid) const;
  void erase(const std::string& containerId) const;

  struct Cleanup {
    std::vector<pid_t> killed;  // groups that still existed and got SIGKILL
    int recordsRemoved = 0;
  };
  // SIGKILLs every recorded container of this boot (tree and group) and removes all records.
  Cleanup killRecordedGroups() const;

  const std::string& directory() const { return directory_; }

 private:
  std::string pathFor(const std::string& containerId) const;
  std::string directory_;
};

// /proc/sys/kernel/random/boot_id, or "" when unreadable.
std::string currentBootId();

}  // namespace tide::nm
