#pragma once

// What tide-nm keeps on disk about every container it started, so that a node manager that
// died (SIGKILL, OOM, a crash) and is started again on the same work dir re-attaches to the
// containers still running (nm.recovery.enabled, YARN's NM recovery), reports those that ended
// meanwhile, and never mistakes an unrelated process that got a recorded pid for a container.
// With recovery off, the restart kills what the records name instead (the old behaviour).
//
// The directory is <nm.workDir>/.containers (mode 0700: records hold container tokens):
//   <containerId>.json  the record, format version 1 (kContainerRecordVersion): one JSON object
//                       {"version":1, "containerId", "applicationId", "token",
//                        "resource":{"memory","vCores"}, "workDir", "cgroupPath", "pid",
//                        "startTimeTicks", "bootId", "completion":{"exitStatus","diagnostics"}}
//                       "completion" only once the container ended. Written when the container
//                       starts, rewritten when it completes, removed once the RM acknowledged
//                       the completion. Always written to a temporary name, fsync'd, renamed.
//   <containerId>.exit  written by the container's supervisor (tide-container --exit-file)
//                       just before it exits: how its command ended (container_exit_file.h).
//   <containerId>.pgid  a record of a tide-nm from before version 1: "<pid> <boot id> <start
//                       ticks>"; it cannot be recovered (no token, no resources): its container
//                       is killed.
// A record that cannot be read, or of a version newer than this tide-nm knows, is an error that
// names the file: recovery never silently starts afresh over containers it cannot account for.
//
// A recorded process is the same one only if pid, start time (clock ticks since boot, from
// /proc/<pid>/stat) and boot id all match: a pid reused by another process after the container
// ended is neither adopted nor signalled.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/process_tree.h"
#include "rest/messages/node.h"

namespace tide::nm {

inline constexpr int kContainerRecordVersion = 1;

struct ContainerRecord {
  int version = kContainerRecordVersion;
  std::string containerId;
  std::string applicationId;
  std::string token;  // the container token it was launched with
  rest::Resource resource;
  std::string workDir;
  std::string cgroupPath;  // empty unless memory enforcement was cgroup
  pid_t pid = 0;           // the supervisor: leads the container's session and process group
  uint64_t startTimeTicks = 0;
  std::string bootId;
  struct Completion {
    int exitStatus = 0;
    std::string diagnostics;
  };
  std::optional<Completion> completion;  // set once it ended
};

// A record that cannot be used: what() names the file (when known) and what is wrong.
class ContainerRecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string formatContainerRecord(const ContainerRecord& record);
// Throws ContainerRecordError: not JSON, a missing or mistyped field, a version other than 1
// ("written by a newer tide-nm" for a higher one). `source` prefixes the message (a path).
ContainerRecord parseContainerRecord(std::string_view text, const std::string& source);

// What a starting node manager with recovery on does with one record. Pure: the process the
// record's pid names now (nullopt: none) and the boot id are read by the caller.
enum class RecoveryAction {
  kAdopt,             // its supervisor still runs: re-attach
  kReportCompleted,   // it had completed before the NM died: report that completion
  kEndedWhileNmDown,  // it ended while no NM watched it (or the machine restarted)
};
struct RecoveryDecision {
  RecoveryAction action;
  std::string why;
};
RecoveryDecision decideRecovery(const ContainerRecord& record, const std::string& bootId,
                                const std::optional<ProcessInfo>& process);

// Whether `process` is the recorded one (same start time; not a zombie) on this boot.
bool isRecordedProcess(const ContainerRecord& record, const std::string& bootId,
                       const std::optional<ProcessInfo>& process);

class ContainerRecords {
 public:
  explicit ContainerRecords(std::string directory);

  // Creates the directory (mode 0700) when missing; throws std::runtime_error when it cannot.
  void ensureDirectory() const;
  // Writes the record durably (temporary file, fsync, rename). Returns "" or what failed: a
  // missing record only weakens recovery and the restart cleanup.
  std::string write(const ContainerRecord& record) const;
  // Removes the record and its exit file.
  void erase(const std::string& containerId) const;
  // The file the container's supervisor writes its exit into.
  std::string exitFile(const std::string& containerId) const;
  // The wait status the supervisor wrote, nullopt when there is no (readable) exit file.
  std::optional<int> readExitStatus(const std::string& containerId) const;

  // Every record in the directory. Throws ContainerRecordError for the first one that cannot
  // be read or is of a newer version. Legacy (.pgid) records are listed apart.
  struct Legacy {
    std::string file;
    pid_t pid = 0;
    std::string bootId;
    uint64_t startTimeTicks = 0;
  };
  struct Contents {
    std::vector<ContainerRecord> records;
    std::vector<Legacy> legacy;
  };
  Contents load() const;

  // With recovery off, or for legacy records: SIGKILLs every recorded container of this boot
  // that still runs (its whole tree, then its group; only a process whose start time matches)
  // and removes every record. A record that cannot be read is removed with a warning in
  // `unreadable` (there is nothing left to recover it for).
  struct Cleanup {
    std::vector<pid_t> killed;
    int recordsRemoved = 0;
    std::vector<std::string> unreadable;
  };
  Cleanup killAll() const;
  // Kills the containers of legacy records (as killAll does) and removes those records.
  std::vector<pid_t> killLegacy(const std::vector<Legacy>& legacy) const;

  const std::string& directory() const { return directory_; }

 private:
  std::string pathFor(const std::string& containerId) const;
  std::string directory_;
};

// /proc/sys/kernel/random/boot_id, or "" when unreadable.
std::string currentBootId();

// SIGKILLs a recorded supervisor's tree and group when the process is still the recorded one.
// Returns whether anything was signalled.
bool killRecordedContainer(pid_t pid, uint64_t startTimeTicks, const std::string& recordedBootId,
                           const std::string& bootId);

}  // namespace tide::nm
