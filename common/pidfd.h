#pragma once

// pidfds: a descriptor that refers to one process whatever pids are reused. It becomes readable
// once that process has exited, and a signal sent through it reaches that process or none.
// Through syscall(): glibc 2.36's <sys/pidfd.h> lacks the extern "C" that C++ needs.

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace tide {

// A pidfd for `pid` (close-on-exec); -1 with errno set when there is no such process.
inline int openPidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// 0 when sent (signal 0: the process has not yet been reaped); -1 with errno set otherwise.
inline int signalByPidfd(int pidfd, int signal) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace tide
