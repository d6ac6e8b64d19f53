#pragma once

// What tide's long-running processes (tide-rm, tide-nm, tide-am, tide-executor) do the same
// way around their own work: the command line of a daemon that `tide run` starts, its port
// file, and taking stop signals in one thread with sigwait() instead of a handler (so that
// stopping may lock and log).

#include <signal.h>

#include <initializer_list>
#include <string>

#include "common/command_line.h"

namespace tide {

// For a daemon started by `tide run`: applies the parent-death signal (it dies with `tide
// run`, even when that is SIGKILLed; SIGTERM is a clean stop), then returns its command line
// with --port-file FILE (`portFileHelp` says when the port is written). Call first in main.
CommandLine daemonCommandLine(std::string program, std::string synopsis, std::string portFileHelp);

// Writes `port` to the --port-file FILE when one was given, atomically, so that whoever polls
// for the file never reads a partial number. Throws std::runtime_error when it cannot.
void writePortFile(const CommandLine& cli, int port);

// Blocks `signals` in the calling thread and returns them as a set for sigwait(). Called
// before any other thread starts, so every thread inherits the mask and only the thread that
// waits sees them (processes started with common/spawn.h get a clean mask).
sigset_t blockSignals(std::initializer_list<int> signals);

// Waits for one of `signals` (blocked with blockSignals) and returns it.
int waitForSignal(const sigset_t& signals);

}  // namespace tide
