#pragma once

// The process-level mechanics of a container: starting a command as the leader of a new
// process group (and session), signalling the whole group, reading how it ended, and
// measuring the resident memory of every process in it.
//
// The node manager is multithreaded, so a child must not run arbitrary code between fork and
// exec; spawning goes through posix_spawn, with every string prepared beforehand.

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace tide::nm {

struct SpawnSpec {
  std::vector<std::string> argv;         // argv[0] is the executable's absolute path
  std::vector<std::string> environment;  // "NAME=value" entries: exactly the child's environment
  std::string workDir;                   // the child's cwd
  std::string stdoutPath;                // created or truncated
  std::string stderrPath;                // created or truncated
};

// Starts the process with stdin from /dev/null, no inherited descriptors beyond 0-2, default
// signal dispositions and an empty signal mask, as the leader of a new session (so its pid is
// also its process group id). Throws std::system_error when it cannot be started.
pid_t spawnProcessGroup(const SpawnSpec& spec);

// kill(-pgid, signal); returns false when the group no longer exists.
bool signalProcessGroup(pid_t pgid, int signal);

// How a wait status reads in a container's status.
struct ExitDescription {
  int exitStatus = 0;       // the exit code, or 128 + signal
  std::string diagnostics;  // "exited with code 3", "killed by signal 9 (SIGKILL)"
};
ExitDescription describeWaitStatus(int waitStatus);

// Resident set size of every process on the host, summed by process group, in bytes (from
// /proc/<pid>/stat). Pages shared between processes count once per process, as in YARN's
// process-tree memory check.
std::map<pid_t, int64_t> residentBytesByProcessGroup();

// True when the process is gone or only a zombie waiting to be reaped by someone else.
bool processGone(pid_t pid);

}  // namespace tide::nm
