#pragma once

// Real processes for the integration tests, killed (SIGKILL) and reaped when the guard goes
// away, whatever happened in the test. Each child gets its own process group so that what it
// started goes with it; output goes to a log file the test can show when something fails.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace tide::testing_support {

class ChildProcesses {
 public:
  ChildProcesses() = default;
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;
  ~ChildProcesses() { killAll(); }

  // Starts argv[0] with the arguments; stdout and stderr go to `logFile`. Returns the pid.
  pid_t start(const std::vector<std::string>& argv, const std::string& logFile);

  // SIGKILLs one child's process group and reaps it.
  void kill(pid_t pid);

  // Pids outside the guard's children (e.g. containers a killed node manager left behind)
  // to kill at the end too.
  void adopt(pid_t pid) {
    if (pid > 0) adopted_.push_back(pid);
  }

  bool running(pid_t pid);

  // SIGKILLs the adopted processes, then SIGTERMs the children so that node managers stop
  // their containers, and SIGKILLs whatever is left after `grace`.
  void killAll(std::chrono::milliseconds grace = std::chrono::seconds(5));

  // Every child's log, for failure messages.
  std::string logs() const;

 private:
  struct Child {
    pid_t pid;
    std::string logFile;
  };

  std::vector<Child> children_;
  std::vector<pid_t> adopted_;
};

}  // namespace tide::testing_support
