#include "executor/supervisor_launcher.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "common/spawn.h"

namespace tide::executor {

SupervisorLauncher::SupervisorLauncher(std::string supervisorPath,
                                       std::vector<std::string> environment)
    : supervisorPath_(std::move(supervisorPath)), environment_(std::move(environment)) {}

SupervisorLauncher::~SupervisorLauncher() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopLocked();
}

pid_t SupervisorLauncher::launcherPid() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return launcher_;
}

void SupervisorLauncher::startLocked() {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    throw SpawnError(errno, std::generic_category(),
                     "cannot start '" + supervisorPath_ + " --serve' (socketpair)");
  }
  SpawnOptions spawn;
  spawn.argv = {supervisorPath_, "--serve", "--die-with-parent", std::to_string(::getpid())};
  spawn.environment = environment_;
  spawn.stdinFd = ends[1];  // dup2 clears close-on-exec on the launcher's copy
  try {
    launcher_ = spawnProcess(spawn);
  } catch (...) {
    ::close(ends[0]);
    ::close(ends[1]);
    throw;
  }
  ::close(ends[1]);
  socket_ = ends[0];
}

void SupervisorLauncher::stopLocked() {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (launcher_ > 0) {
    // It exits once its socket closes; a launcher that hangs would hold up the executor's exit.
    ::kill(launcher_, SIGKILL);
    int status = 0;
    while (::waitpid(launcher_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  launcher_ = -1;
}

std::optional<int64_t> SupervisorLauncher::askLocked(const std::string& payload,
                                                     const std::vector<int>& fds) {
  if (socket_ < 0) return std::nullopt;
  std::string answer;
  std::vector<int> received;
  if (!sendFrame(socket_, payload, fds) || !receiveFrame(socket_, answer, received)) {
    const int error = errno;
    stopLocked();  // died (or answered nonsense): started afresh at the next launch
    errno = error;
    return std::nullopt;
  }
  for (int fd : received) ::close(fd);
  try {
    return decodeAnswer(answer);
  } catch (const std::exception&) {
    stopLocked();
    errno = EPROTO;
    return std::nullopt;
  }
}

pid_t SupervisorLauncher::launch(const LaunchRequest& request, int stdoutFd, int stderrFd) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string payload = encodeLaunch(request);
  // Once more with a fresh launcher when the one we had is gone.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (socket_ < 0) startLocked();
    const std::optional<int64_t> pid = askLocked(payload, {stdoutFd, stderrFd});
    if (!pid) continue;
    if (*pid <= 0) {
      throw SpawnError(static_cast<int>(-*pid), std::generic_category(),
                       "cannot start '" + request.argv[0] + "' (supervisor launcher: fork)");
    }
    return static_cast<pid_t>(*pid);
  }
  throw SpawnError(errno != 0 ? errno : EPIPE, std::generic_category(),
                   "cannot start '" + request.argv[0] + "' (supervisor launcher died)");
}

std::optional<int> SupervisorLauncher::reap(pid_t supervisor) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::optional<int64_t> status = askLocked(encodeReap(supervisor), {});
  if (!status) return std::nullopt;
  if (*status < 0) {
    errno = static_cast<int>(-*status);
    return std::nullopt;
  }
  return static_cast<int>(*status);
}

}  // namespace tide::executor
