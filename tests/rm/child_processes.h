#pragma once

// Real processes for the integration tests, killed (SIGKILL) and reaped when the guard goes
// away, whatever happened in the test. Each child gets its own process group so that what it
// started goes with it; output goes to a log file the test can show when something fails.

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tide::rm::testing {

class ChildProcesses {
 public:
  ChildProcesses() = default;
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;
  ~ChildProcesses() { killAll(); }

  // Starts argv[0] with the arguments; stdout and stderr go to `logFile`. Returns the pid.
  pid_t start(const std::vector<std::string>& argv, const std::string& logFile) {
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      setpgid(0, 0);
      const int fd = ::open(logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        ::close(fd);
      }
      execv(args[0], args.data());
      _exit(127);
    }
    setpgid(pid, pid);  // also from here, so it holds before the child runs
    children_.push_back({pid, logFile});
    return pid;
  }

  // SIGKILLs one child's process group and reaps it.
  void kill(pid_t pid) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    reap(pid);
  }

  // Pids outside the guard's children (e.g. containers a killed node manager left behind)
  // to kill at the end too.
  void adopt(pid_t pid) {
    if (pid > 0) adopted_.push_back(pid);
  }

  bool running(pid_t pid) {
    int status = 0;
    return waitpid(pid, &status, WNOHANG) == 0;
  }

  // SIGKILLs the adopted processes, then SIGTERMs the children so that node managers stop
  // their containers, and SIGKILLs whatever is left after `grace`.
  void killAll(std::chrono::milliseconds grace = std::chrono::seconds(5)) {
    // Adopted processes first, while the node managers that started them can still reap them.
    for (pid_t pid : adopted_) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    // Latest first: node managers go before the resource manager they keep connections to.
    const auto deadline = std::chrono::steady_clock::now() + grace;
    for (auto child = children_.rbegin(); child != children_.rend(); ++child) {
      ::kill(child->pid, SIGTERM);
      int status = 0;
      while (waitpid(child->pid, &status, WNOHANG) == 0 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    for (const Child& child : children_) {
      ::kill(-child.pid, SIGKILL);
      ::kill(child.pid, SIGKILL);
    }
    for (const Child& child : children_) reap(child.pid);
    children_.clear();
    adopted_.clear();
  }

  // Every child's log, for failure messages.
  std::string logs() const {
    std::ostringstream out;
    for (const Child& child : children_) {
      std::ifstream in(child.logFile);
      out << "==== " << child.logFile << " ====\n" << in.rdbuf() << "\n";
    }
    return out.str();
  }

 private:
  struct Child {
    pid_t pid;
    std::string logFile;
  };

  static void reap(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
  }

  std::vector<Child> children_;
  std::vector<pid_t> adopted_;
};

}  // namespace tide::rm::testing
