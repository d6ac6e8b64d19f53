#include "deploy/nm/process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

namespace tide::nm {
namespace {

// Owns the posix_spawn attribute objects so that every exit path destroys them.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attributes_);
  }
  ~SpawnAttributes() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attributes_);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;

  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attributes() { return &attributes_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attributes_;
};

void check(int error, const char* what) {
  if (error != 0) throw std::system_error(error, std::generic_category(), what);
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (const std::string& s : strings) result.push_back(const_cast<char*>(s.c_str()));
  result.push_back(nullptr);
  return result;
}

}  // namespace

pid_t spawnProcessGroup(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw std::invalid_argument("spawnProcessGroup: empty argv");
  SpawnAttributes spawn;
  auto* actions = spawn.actions();
  check(posix_spawn_file_actions_addchdir_np(actions, spec.workDir.c_str()), "addchdir");
  check(posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0),
        "addopen stdin");
  constexpr int kOutputFlags = O_WRONLY | O_CREAT | O_TRUNC;
  check(posix_spawn_file_actions_addopen(actions, STDOUT_FILENO, spec.stdoutPath.c_str(),
                                         kOutputFlags, 0644),
        "addopen stdout");
  check(posix_spawn_file_actions_addopen(actions, STDERR_FILENO, spec.stderrPath.c_str(),
                                         kOutputFlags, 0644),
        "addopen stderr");
  // The node manager's sockets (its listening port above all) must not leak into containers:
  // a container outliving the NM would otherwise keep its port bound.
  check(posix_spawn_file_actions_addclosefrom_np(actions, STDERR_FILENO + 1), "addclosefrom");

  auto* attributes = spawn.attributes();
  // The NM blocks SIGTERM/SIGINT in its threads and ignores SIGPIPE; the child starts clean.
  sigset_t emptyMask;
  sigemptyset(&emptyMask);
  sigset_t allSignals;
  sigfillset(&allSignals);
  check(posix_spawnattr_setsigmask(attributes, &emptyMask), "setsigmask");
  check(posix_spawnattr_setsigdefault(attributes, &allSignals), "setsigdefault");
  // A new session: the child leads its own process group (pgid == pid), so the whole container
  // can be signalled at once, and a terminal's Ctrl-C meant for the NM does not reach it.
  check(posix_spawnattr_setflags(
            attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
        "setflags");

  std::vector<char*> argv = pointers(spec.argv);
  std::vector<char*> envp = pointers(spec.environment);
  pid_t pid = 0;
  check(posix_spawn(&pid, argv[0], actions, attributes, argv.data(), envp.data()),
        ("posix_spawn " + spec.argv[0]).c_str());
  return pid;
}

bool signalProcessGroup(pid_t pgid, int signal) {
  if (pgid <= 1) return false;  // never kill(0) or kill(-1): that would hit the NM or everyone
  return ::kill(-pgid, signal) == 0;
}

ExitDescription describeWaitStatus(int waitStatus) {
  ExitDescription description;
  if (WIFEXITED(waitStatus)) {
    description.exitStatus = WEXITSTATUS(waitStatus);
    description.diagnostics = "exited with code " + std::to_string(description.exitStatus);
  } else if (WIFSIGNALED(waitStatus)) {
    const int signal = WTERMSIG(waitStatus);
    description.exitStatus = 128 + signal;
    description.diagnostics = "killed by signal " + std::to_string(signal);
    if (const char* name = sigabbrev_np(signal)) {
      description.diagnostics += std::string(" (SIG") + name + ")";
    }
  } else {
    description.exitStatus = 255;
    description.diagnostics = "ended with wait status " + std::to_string(waitStatus);
  }
  return description;
}

std::map<pid_t, int64_t> residentBytesByProcessGroup() {
  static const int64_t pageSize = sysconf(_SC_PAGESIZE);
  std::map<pid_t, int64_t> totals;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return totals;
  while (dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // the process ended meanwhile
    // The command name (field 2) may itself contain spaces and parentheses: fields 3.. start
    // after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    pid_t pgrp = 0;
    int64_t rssPages = 0;
    // After ')': state is field 3, pgrp field 5, rss field 24.
    for (int number = 3; number <= 24 && (fields >> field); ++number) {
      if (number == 5) pgrp = static_cast<pid_t>(std::stol(field));
      if (number == 24) rssPages = std::stoll(field);
    }
    if (pgrp > 0) totals[pgrp] += rssPages * pageSize;
  }
  closedir(proc);
  return totals;
}

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return true;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

}  // namespace tide::nm
