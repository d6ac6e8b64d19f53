#include "deploy/nm/process_group.h"

#include <signal.h>

#include <cerrno>

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
