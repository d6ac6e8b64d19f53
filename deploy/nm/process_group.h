#pragma once

// The process-level mechanics of a container beyond starting it (common/spawn.h) and finding
// its process tree (common/process_tree.h): signalling its process group and reading how it
// ended.

#include <sys/types.h>

#include <string>

namespace tide::nm {

// kill(-pgid, signal); returns false when the group no longer exists.
bool signalProcessGroup(pid_t pgid, int signal);

// How a wait status reads in a container's status.
struct ExitDescription {
  int exitStatus = 0;       // the exit code, or 128 + signal
  std::string diagnostics;  // "exited with code 3", "killed by signal 9 (SIGKILL)"
};
ExitDescription describeExit(int waitStatus);

// True when the process is gone or only a zombie waiting to be reaped by someone else.
bool processGone(pid_t pid);

}  // namespace tide::nm
