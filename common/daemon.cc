#include "common/daemon.h"

#include <pthread.h>
#include <sys/resource.h>

#include <stdexcept>
#include <utility>

#include "common/atomic_file.h"
#include "common/spawn.h"

namespace tide {

CommandLine daemonCommandLine(std::string program, std::string synopsis, std::string portFileHelp) {
  applyParentDeathSignal();
  CommandLine cli(std::move(program), std::move(synopsis));
  cli.addOption("port-file", "FILE", std::move(portFileHelp));
  return cli;
}

void writePortFile(const CommandLine& cli, int port) {
  const std::optional<std::string> path = cli.option("port-file");
  if (!path) return;
  const Status written = writeFileAtomically(*path, std::to_string(port) + "\n");
  if (!written.ok()) throw std::runtime_error("port file: " + written.message());
}

sigset_t blockSignals(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : signals) sigaddset(&set, signal);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int waitForSignal(const sigset_t& signals) {
  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  return received;
}

SignalThread::SignalThread(const sigset_t& signals, int wakeUp, std::function<bool(int)> onSignal)
    : wakeUp_(wakeUp), thread_([signals, wakeUp, onSignal = std::move(onSignal)] {
        int received = 0;
        while (sigwait(&signals, &received) == 0) {
          if (received == wakeUp || !onSignal(received)) return;
        }
      }) {}

SignalThread::~SignalThread() {
  // The thread may have ended already (onSignal said so): then there is no one to wake.
  pthread_kill(thread_.native_handle(), wakeUp_);
  thread_.join();
}

size_t raiseOpenFilesLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return 0;
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0) ::getrlimit(RLIMIT_NOFILE, &files);
  }
  return files.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(files.rlim_cur);
}

}  // namespace tide
