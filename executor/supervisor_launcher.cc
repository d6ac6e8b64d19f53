#include "executor/supervisor_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "common/spawn.h"

namespace tide::executor {
namespace {

// Sends a request and reads its answer. The descriptors that came with it go to `received`
// (the caller's) when given, else they are closed. nullopt (errno set) when the peer is gone or
// answered something that is no answer.
std::optional<int64_t> ask(int socket, const std::string& payload, const std::vector<int>& fds = {},
                           std::vector<int>* received = nullptr) {
  std::string answer;
  std::vector<int> descriptors;
  errno = 0;
  const bool answered =
      sendFrame(socket, payload, fds) && receiveFrame(socket, answer, descriptors);
  if (received != nullptr) {
    *received = std::move(descriptors);
  } else {
    for (int fd : descriptors) ::close(fd);
  }
  if (!answered) {
    if (errno == 0) errno = EPIPE;
    if (errno == EAGAIN || errno == EWOULDBLOCK) errno = ETIMEDOUT;  // SO_RCVTIMEO, SO_SNDTIMEO
    return std::nullopt;
  }
  try {
    return decodeAnswer(answer);
  } catch (const std::exception&) {
    errno = EPROTO;
    return std::nullopt;
  }
}

}  // namespace

SupervisorLauncher::SupervisorLauncher(std::string supervisorPath,
                                       std::vector<std::string> environment,
                                       std::chrono::milliseconds answerTimeout)
    : supervisorPath_(std::move(supervisorPath)),
      environment_(std::move(environment)),
      answerTimeout_(answerTimeout) {}

void SupervisorLauncher::limitWaits(int socket) const {
  const auto ms = answerTimeout_.count();
  const timeval limit{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
  ::setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

SupervisorLauncher::~SupervisorLauncher() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Slot& slot : slots_) ::close(slot.socket);
  slots_.clear();
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
  limitWaits(socket_);
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

SupervisorLauncher::Slot SupervisorLauncher::newSlotLocked(const std::string& program) {
  // Once more with a fresh launcher when the one we had is gone.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (socket_ < 0) startLocked();
    std::vector<int> received;
    const std::optional<int64_t> pid = ask(socket_, encodeNewSlot(), {}, &received);
    if (!pid) {
      const int error = errno;
      stopLocked();
      errno = error;
      continue;
    }
    if (*pid <= 0 || received.size() != 1) {
      for (int fd : received) ::close(fd);
      throw SpawnError(*pid < 0 ? static_cast<int>(-*pid) : EPROTO, std::generic_category(),
                       "cannot start '" + program + "' (supervisor launcher: new slot)");
    }
    limitWaits(received[0]);
    return Slot{received[0], 0};
  }
  throw SpawnError(errno != 0 ? errno : EPIPE, std::generic_category(),
                   "cannot start '" + program + "' (supervisor launcher died)");
}

pid_t SupervisorLauncher::launch(const LaunchRequest& request, int stdoutFd, int stderrFd) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string payload = encodeLaunch(request);
  // An idle slot, else a new one; a slot found dead is dropped and the launch tried once more.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto slot =
        std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.task == 0; });
    if (slot == slots_.end()) {
      slots_.push_back(newSlotLocked(request.argv[0]));
      slot = slots_.end() - 1;
    }
    const std::optional<int64_t> pid = ask(slot->socket, payload, {stdoutFd, stderrFd});
    if (!pid) {
      dropSlotLocked(slot);
      continue;
    }
    if (*pid <= 0) {
      throw SpawnError(static_cast<int>(-*pid), std::generic_category(),
                       "cannot start '" + request.argv[0] + "' (slot supervisor)");
    }
    slot->task = static_cast<pid_t>(*pid);
    return slot->task;
  }
  throw SpawnError(errno != 0 ? errno : EPIPE, std::generic_category(),
                   "cannot start '" + request.argv[0] + "' (slot supervisor died)");
}

void SupervisorLauncher::dropSlotLocked(std::vector<Slot>::iterator slot) {
  const int error = errno;
  // The slot supervisor exits (killing its task, if any) once every copy of its socket is
  // closed (see watchSlot); the launcher reaps it.
  ::close(slot->socket);
  slots_.erase(slot);
  errno = error;
}

std::vector<SupervisorLauncher::Slot>::iterator SupervisorLauncher::slotOfLocked(pid_t task) {
  auto slot = std::find_if(slots_.begin(), slots_.end(),
                           [&](const Slot& s) { return s.task == task && task > 0; });
  if (slot == slots_.end()) errno = ECHILD;
  return slot;
}

bool SupervisorLauncher::stop(pid_t task) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto slot = slotOfLocked(task);
  if (slot == slots_.end()) return false;
  const std::optional<int64_t> answer = ask(slot->socket, encodeStop(task));
  if (!answer || *answer < 0) {
    if (answer) errno = static_cast<int>(-*answer);
    return false;  // a dead slot is dropped when its task is reaped
  }
  return true;
}

int SupervisorLauncher::watchSlot(pid_t task) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto slot = slotOfLocked(task);
  if (slot == slots_.end()) return -1;
  return ::fcntl(slot->socket, F_DUPFD_CLOEXEC, 0);
}

std::optional<int> SupervisorLauncher::reap(pid_t task) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto slot = slotOfLocked(task);
  if (slot == slots_.end()) return std::nullopt;
  const std::optional<int64_t> status = ask(slot->socket, encodeReap(task));
  if (!status) {
    // Died, and its task (orphaned) was reaped by someone else: nobody can say how it ended.
    dropSlotLocked(slot);
    return std::nullopt;
  }
  slot->task = 0;
  const size_t idle =
      std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.task == 0; });
  if (idle > kMaxIdleSlots) dropSlotLocked(slot);
  if (*status < 0) {
    errno = static_cast<int>(-*status);
    return std::nullopt;
  }
  return static_cast<int>(*status);
}

}  // namespace tide::executor
