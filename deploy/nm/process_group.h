#pragma once

// The process-level mechanics of a container beyond starting it (common/spawn.h) and finding
// its process tree (common/process_tree.h): signalling its process group and reading how it
// ended.

#include <sys/types.h>

#include <cstdint>
#include <optional>
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

namespace tide::nm {

// A process that is not our child (a container supervisor a previous node manager started),
// held through a pidfd: signals reach that process and no other whatever pids are reused, and
// its end can be observed although we cannot wait for it. Move-only; closes the pidfd.
class AdoptedProcess {
 public:
  // Opens `pid` if it is still the process that started at `startTimeTicks` (and not a zombie);
  // nullopt otherwise.
  static std::optional<AdoptedProcess> open(pid_t pid, uint64_t startTimeTicks);
  AdoptedProcess(AdoptedProcess&& other) noexcept;
  AdoptedProcess& operator=(AdoptedProcess&& other) noexcept;
  AdoptedProcess(const AdoptedProcess&) = delete;
  AdoptedProcess& operator=(const AdoptedProcess&) = delete;
  ~AdoptedProcess();

  pid_t pid() const { return pid_; }
  // Whether it has ended (a zombie waiting for its reaper counts as ended).
  bool exited() const;
  // Sends `signal` to it; false when it has ended.
  bool signal(int signal) const;

 private:
  AdoptedProcess(int fd, pid_t pid) : fd_(fd), pid_(pid) {}
  int fd_ = -1;
  pid_t pid_ = 0;
};

}  // namespace tide::nm
