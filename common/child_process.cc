#include "common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>

extern char** environ;

namespace tide {
namespace {

int decodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) : ownGroup_(spec.newProcessGroup) {
  if (spec.argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  name_ = spec.argv[0];
  // Everything the child needs is prepared before posix_spawn: the caller may be threaded.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [key, value] : spec.environment) env[key] = value;
  std::vector<std::string> envStrings;
  for (const auto& [key, value] : env) envStrings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!spec.logPath.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, spec.logPath.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.newProcessGroup) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &all);
  const int rc = posix_spawnp(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start " + name_);
}

ChildProcess::~ChildProcess() {
  if (running()) stop();
}

std::optional<int> ChildProcess::exitStatus() {
  running();
  return exitStatus_;
}

bool ChildProcess::running() {
  if (exitStatus_ || pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exitStatus_ = decodeWaitStatus(status);
    return false;
  }
  if (r < 0 && errno == ECHILD) {
    exitStatus_ = -1;  // reaped elsewhere
    return false;
  }
  return true;
}

std::optional<int> ChildProcess::waitFor(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exitStatus_;
}

bool ChildProcess::signal(int sig) {
  if (!running()) return false;
  return ::kill(ownGroup_ ? -pid_ : pid_, sig) == 0;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (signal(SIGTERM)) {
    if (!waitFor(grace)) {
      signal(SIGKILL);
      waitFor(std::chrono::milliseconds(5000));
    }
  }
  // Whatever the leader did, nothing of its group outlives it.
  if (ownGroup_ && pid_ > 0) ::kill(-pid_, SIGKILL);
  return exitStatus_.value_or(-1);
}

std::string selfDirectory() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  std::string path(buffer, static_cast<size_t>(n));
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace tide
