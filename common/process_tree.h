#pragma once

// The host's process table as /proc shows it, for containment: which processes descend from a
// given one (by parent links), their resident memory, and killing a whole tree.
//
// A tree is found by parent links, so it holds processes that changed their process group or
// session (setsid, double fork) as long as they stay below the root. That is what a child
// subreaper (prctl PR_SET_CHILD_SUBREAPER) guarantees: a process orphaned below it is
// re-parented to it, not to init. tide's container supervisor (tide-container) is one.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tide {

// The fields of /proc/<pid>/stat that containment needs.
struct ProcessInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  char state = '?';             // 'R', 'S', 'Z'...
  uint64_t startTimeTicks = 0;  // since boot, in clock ticks: tells a reused pid apart
  int64_t residentBytes = 0;
};

// One process; nullopt when it does not exist (any more).
std::optional<ProcessInfo> readProcess(pid_t pid);
// Every process on the host (a snapshot: processes come and go while it is read).
std::vector<ProcessInfo> readProcessTable();

// The descendants of `root` in `table` (not `root` itself), parents before children.
std::vector<ProcessInfo> descendantsOf(pid_t root, const std::vector<ProcessInfo>& table);

// Resident memory of `root` and every descendant, in bytes. Pages shared between processes
// count once per process, as in YARN's process-tree memory check.
int64_t treeResidentBytes(pid_t root, const std::vector<ProcessInfo>& table);

// Sends `signal` to every descendant of `root` (and to `root` itself when includeRoot), read
// afresh from /proc. Returns how many processes were signalled. The caller must know that
// `root` is still its own (an unreaped child, or a pid it checked the start time of).
int signalProcessTree(pid_t root, int signal, bool includeRoot);

// SIGKILLs every descendant of `root` until none is left (a process forking while it is being
// killed shows up in the next round), bounded by `rounds`. Returns whether none is left.
// Only a subreaper root keeps the orphans of its tree below it; otherwise they go to init
// after their parent died and are out of reach.
bool killDescendants(pid_t root, int rounds = 50);

}  // namespace tide
