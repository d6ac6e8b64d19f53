#include "deploy/nm/process_group.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/pidfd.h"
#include "common/process_tree.h"
#include "common/spawn.h"

namespace tide::nm {

bool signalProcessGroup(pid_t pgid, int signal) {
  if (pgid <= 1) return false;  // never kill(0) or kill(-1): that would hit the NM or everyone
  return ::kill(-pgid, signal) == 0;
}

ExitDescription describeExit(int waitStatus) {
  return {exitCodeOf(waitStatus), describeWaitStatus(waitStatus)};
}

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  const auto info = readProcess(pid);
  return !info || info->state == 'Z';
}

}  // namespace tide::nm

namespace tide::nm {

std::optional<AdoptedProcess> AdoptedProcess::open(pid_t pid, uint64_t startTimeTicks) {
  if (pid <= 1 || startTimeTicks == 0) return std::nullopt;
  const int fd = openPidfd(pid);
  if (fd < 0) return std::nullopt;
  // Read after the pidfd was opened: if the process is still the one that started then, the
  // pidfd refers to it (a pid is reused only once its process has ended).
  const auto info = readProcess(pid);
  AdoptedProcess process(fd, pid);
  if (!info || info->state == 'Z' || info->startTimeTicks != startTimeTicks || process.exited()) {
    return std::nullopt;
  }
  return process;
}

AdoptedProcess::AdoptedProcess(AdoptedProcess&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), pid_(other.pid_) {}

AdoptedProcess& AdoptedProcess::operator=(AdoptedProcess&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    pid_ = other.pid_;
  }
  return *this;
}

AdoptedProcess::~AdoptedProcess() {
  if (fd_ >= 0) ::close(fd_);
}

bool AdoptedProcess::exited() const {
  pollfd poll{fd_, POLLIN, 0};
  // A pidfd becomes readable once its process has ended.
  return ::poll(&poll, 1, 0) > 0;
}

bool AdoptedProcess::signal(int signal) const {
  return signalByPidfd(fd_, signal) == 0;
}

}  // namespace tide::nm
