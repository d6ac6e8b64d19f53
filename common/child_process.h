#pragma once

// A child process this process started and must stop: `tide run`'s embedded tide-rm and
// tide-nm, and the integration tests' components. The destructor stops it (SIGTERM, then
// SIGKILL after the grace period), so nothing is left behind even when the caller throws.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tide {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH
  // Added to (or replacing in) this process's environment.
  std::vector<std::pair<std::string, std::string>> environment;
  std::string logPath;          // stdout and stderr go here (appended); empty: inherited
  std::string workDir;          // where it runs; empty: this process's current directory
  bool newProcessGroup = true;  // so that a terminal's Ctrl-C reaches only us, and we stop it
  // The signal it gets when this process dies, even by SIGKILL (tide binaries only: see
  // SpawnOptions::parentDeathSignal). 0: it outlives us.
  int parentDeathSignal = 0;
};

class ChildProcess {
 public:
  // Starts it; throws std::system_error naming the program when it cannot be started.
  explicit ChildProcess(const ChildSpec& spec);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  // Whether it is still running (reaps it if it has exited).
  bool running();
  // Its exit status once it ended: the code, or 128 + signal.
  std::optional<int> exitStatus();
  // Waits up to `timeout` for it to exit on its own.
  std::optional<int> waitFor(std::chrono::milliseconds timeout);
  // SIGTERM (to its group if it has one), then SIGKILL after `grace`; returns its exit status.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // Sends a signal to the process (or its group); false when it is gone.
  bool signal(int sig);

 private:
  pid_t pid_ = -1;
  bool ownGroup_ = false;
  std::string name_;
  std::optional<int> exitStatus_;
};

// This executable's path as /proc/self/exe names it; "" when it cannot be read.
std::string selfExecutable();

// The directory holding this executable: tide's binaries find their siblings there.
std::string selfDirectory();

}  // namespace tide
