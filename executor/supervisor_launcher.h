#pragma once

// The executor's end of its supervisor launcher: one `tide-container --serve` per executor,
// started on the first launch, that forks each command task's supervisor (common/
// supervisor_launch.h says why and what goes over the socket).
//
// A supervisor it launched leads its own process group and dies with the launcher, which dies
// with the executor (both by parent-death signals, so even a SIGKILLed executor leaves nothing).
// It is not the executor's child: the executor watches it with a pidfd and asks the launcher
// for its exit status (reap()), and the launcher reaps nothing it was not asked to, so the pid
// and group id stay the supervisor's until then.
//
// A launcher that died is started again at the next launch(); the supervisors it had launched
// died with it, and reap() says so (nullopt). Thread-safe: one request at a time.

#include <sys/types.h>

#include <mutex>
#include <optional>
#include <string>

#include "common/supervisor_launch.h"

namespace tide::executor {

class SupervisorLauncher {
 public:
  // `environment`: the launcher's own (the tasks get theirs with each request).
  SupervisorLauncher(std::string supervisorPath, std::vector<std::string> environment);
  // Closes the socket (the launcher then exits; supervisors still running die with it) and
  // reaps the launcher.
  ~SupervisorLauncher();
  SupervisorLauncher(const SupervisorLauncher&) = delete;
  SupervisorLauncher& operator=(const SupervisorLauncher&) = delete;

  // The supervisor's pid. Throws SpawnError when the launcher cannot be started or cannot
  // fork (the task then cannot start either).
  pid_t launch(const LaunchRequest& request, int stdoutFd, int stderrFd);
  // The wait status of a supervisor launch() returned, once its pidfd says it has exited.
  // nullopt (errno set) when the launcher is gone or does not know the pid.
  std::optional<int> reap(pid_t supervisor);
  // The launcher's pid while it runs (for tests), else -1.
  pid_t launcherPid() const;

 private:
  void startLocked();
  void stopLocked();
  std::optional<int64_t> askLocked(const std::string& payload, const std::vector<int>& fds);

  const std::string supervisorPath_;
  const std::vector<std::string> environment_;
  mutable std::mutex mutex_;
  int socket_ = -1;
  pid_t launcher_ = -1;
};

}  // namespace tide::executor
