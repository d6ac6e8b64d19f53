#include "tests/support/child_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "tests/support/files.h"
#include "tests/support/polling.h"

namespace tide::testing_support {
namespace {

void reap(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
}

void killGroup(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

}  // namespace

pid_t ChildProcesses::start(const std::vector<std::string>& argv, const std::string& logFile) {
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

void ChildProcesses::kill(pid_t pid) {
  killGroup(pid);
  reap(pid);
}

bool ChildProcesses::running(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

void ChildProcesses::killAll(std::chrono::milliseconds grace) {
  // Adopted processes first, while the node managers that started them can still reap them.
  for (pid_t pid : adopted_) killGroup(pid);
  // Latest first: node managers go before the resource manager they keep connections to.
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (auto child = children_.rbegin(); child != children_.rend(); ++child) {
    ::kill(child->pid, SIGTERM);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    eventually([&] { return !running(child->pid); }, std::max(left, std::chrono::milliseconds(0)));
  }
  for (const Child& child : children_) killGroup(child.pid);
  for (const Child& child : children_) reap(child.pid);
  children_.clear();
  adopted_.clear();
}

std::string ChildProcesses::logs() const {
  std::ostringstream out;
  for (const Child& child : children_) {
    out << "==== " << child.logFile << " ====\n" << readFile(child.logFile) << "\n";
  }
  return out.str();
}

}  // namespace tide::testing_support
