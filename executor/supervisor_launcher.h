#pragma once

// The executor's end of its supervisor launcher: one `tide-container --serve` per executor,
// started on the first launch, that forks slot supervisors (common/supervisor_launch.h says
// why and what goes over the sockets). The executor talks to each slot supervisor on a socket
// of its own; a slot runs one task at a time and is kept for later tasks when it is done.
//
// A task leads its own process group. It is not the executor's child: the executor watches it
// with a pidfd and asks its slot supervisor for its exit status (reap()), and the slot reaps
// nothing it was not asked to, so the pid and group id stay the task's until then.
//
// The launcher dies with the executor (a parent-death signal); a slot supervisor ends, killing
// its task and all below it, when its socket closes, which the executor's death also does. A
// launcher that died is started again when a new slot is needed; the slots it started serve
// on. A slot supervisor that died is dropped, and reap() of its task says so (nullopt).
//
// Every request is answered at once (it forks, spawns, signals, or reaps a task that has
// exited), so an answer that takes longer than answerTimeout means a launcher or slot
// supervisor that is stopped or stuck: the request fails with ETIMEDOUT rather than holding up
// the executor, and that launcher is replaced or that slot dropped. A dropped slot supervisor
// that runs again finds its socket closed and ends, with whatever is below it.
// Thread-safe: one request at a time.

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/supervisor_launch.h"

namespace tide::executor {

class SupervisorLauncher {
 public:
  // A reap kills and reaps everything below the slot, which may take a while for processes in
  // uninterruptible sleep: the default is generous.
  static constexpr std::chrono::milliseconds kDefaultAnswerTimeout{30000};

  // `environment`: the launcher's own (the tasks get theirs with each request).
  SupervisorLauncher(std::string supervisorPath, std::vector<std::string> environment,
                     std::chrono::milliseconds answerTimeout = kDefaultAnswerTimeout);
  // Closes every socket (slot supervisors still running a task kill it and exit; the launcher
  // exits) and reaps the launcher.
  ~SupervisorLauncher();
  SupervisorLauncher(const SupervisorLauncher&) = delete;
  SupervisorLauncher& operator=(const SupervisorLauncher&) = delete;

  // The task's pid, started by an idle slot supervisor or a new one. Throws SpawnError when no
  // slot supervisor can be had (the launcher cannot be started or cannot fork).
  pid_t launch(const LaunchRequest& request, int stdoutFd, int stderrFd);
  // The wait status of a task launch() returned, once its pidfd says it has exited (or after
  // SIGKILL: this waits). Everything the task left running is gone when it returns. nullopt
  // (errno set) when its slot supervisor is gone (ETIMEDOUT: did not answer; it is dropped) or
  // the pid is no task of ours.
  std::optional<int> reap(pid_t task);
  // SIGTERM to a running task's process group and to everything else below its slot supervisor
  // (what it orphaned, in groups and sessions of its own). False (errno set) when its slot
  // supervisor is gone or the pid is no task of ours.
  bool stop(pid_t task);
  // A descriptor that hangs up (POLLRDHUP, POLLHUP) when the slot supervisor of a running task
  // dies: a copy of the slot's socket, which the caller closes once it has reaped the task (the
  // slot supervisor only sees its socket close when every copy is closed). -1 (errno set) when
  // the pid is no task of ours.
  int watchSlot(pid_t task);
  // The launcher's pid while it runs (for tests), else -1.
  pid_t launcherPid() const;

 private:
  struct Slot {
    int socket = -1;  // to its slot supervisor
    pid_t task = 0;   // 0: idle
  };

  void startLocked();
  void stopLocked();
  // Closes its socket and forgets it; errno is kept.
  void dropSlotLocked(std::vector<Slot>::iterator slot);
  // The slot running `task`, or slots_.end() (errno ECHILD).
  std::vector<Slot>::iterator slotOfLocked(pid_t task);
  // A new slot supervisor from the launcher (started, or started again, as needed).
  Slot newSlotLocked(const std::string& program);
  // Bounds how long a read of an answer (and a write of a request) on the executor's end of a
  // socket may wait.
  void limitWaits(int socket) const;

  // Idle slot supervisors kept for later tasks, at most.
  static constexpr size_t kMaxIdleSlots = 64;

  const std::string supervisorPath_;
  const std::vector<std::string> environment_;
  const std::chrono::milliseconds answerTimeout_;
  mutable std::mutex mutex_;
  int socket_ = -1;
  pid_t launcher_ = -1;
  std::vector<Slot> slots_;
};

}  // namespace tide::executor
