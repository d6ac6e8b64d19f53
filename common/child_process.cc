#include "common/child_process.h"

#include "common/spawn.h"

#include <signal.h>
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
  return exitCodeOf(status);
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) : ownGroup_(spec.newProcessGroup) {
  if (spec.argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  name_ = spec.argv[0];
  // Everything the child needs is prepared before the spawn: the caller may be threaded.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [key, value] : spec.environment) env[key] = value;
  std::vector<std::string> envStrings;
  for (const auto& [key, value] : env) envStrings.push_back(key + "=" + value);

  SpawnOptions options;
  options.argv = spec.argv;
  options.searchPath = true;
  options.environment = std::move(envStrings);
  options.stdoutPath = spec.logPath;
  options.stderrPath = spec.logPath;
  options.appendOutput = true;
  options.workDir = spec.workDir;
  options.grouping =
      spec.newProcessGroup ? ProcessGrouping::kNewProcessGroup : ProcessGrouping::kInherit;
  options.parentDeathSignal = spec.parentDeathSignal;
  pid_ = spawnProcess(options);
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

std::string selfExecutable() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

std::string selfDirectory() {
  const std::string path = selfExecutable();
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace tide
