#pragma once

// What tide's long-running processes (tide-rm, tide-nm, tide-am, tide-executor) do the same
// way around their own work: the command line of a daemon that `tide run` starts, its port
// file, and taking stop signals in one thread with sigwait() instead of a handler (so that
// stopping may lock and log).

#include <signal.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

#include "common/command_line.h"

namespace tide {

// For a daemon started by `tide run`: applies the parent-death signal (it dies with `tide
// run`, even when that is SIGKILLed; SIGTERM is a clean stop), then returns its command line
// with --port-file FILE (`portFileHelp` says when the port is written). Call first in main.
CommandLine daemonCommandLine(std::string program, std::string synopsis, std::string portFileHelp);

// Writes `port` to the --port-file FILE when one was given, atomically, so that whoever polls
// for the file never reads a partial number. Throws std::runtime_error when it cannot.
void writePortFile(const CommandLine& cli, int port);

// Raises the soft limit on open files (RLIMIT_NOFILE) to the hard one, for a server that keeps
// a connection per client (tide-rm: every node manager and AM); returns the soft limit now.
size_t raiseOpenFilesLimit();

// Blocks `signals` in the calling thread and returns them as a set for sigwait(). Called
// before any other thread starts, so every thread inherits the mask and only the thread that
// waits sees them (processes started with common/spawn.h get a clean mask).
sigset_t blockSignals(std::initializer_list<int> signals);

// Waits for one of `signals` (blocked with blockSignals) and returns it.
int waitForSignal(const sigset_t& signals);

// Takes `signals` (blocked with blockSignals; they must include `wakeUp`) in a thread of its own
// for as long as it exists, and hands each but `wakeUp` to `onSignal`, which returns whether to
// go on waiting. The destructor sends `wakeUp` to the thread and joins it, so `onSignal` never
// runs once it is gone: declare it after everything `onSignal` uses. (A detached thread would
// outlive them: a SIGTERM after main's work was done called into a destroyed object.)
class SignalThread {
 public:
  SignalThread(const sigset_t& signals, int wakeUp, std::function<bool(int)> onSignal);
  ~SignalThread();
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;

 private:
  int wakeUp_;
  std::thread thread_;
};

}  // namespace tide
