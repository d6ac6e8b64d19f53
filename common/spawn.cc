#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace tide {
namespace {

// Owns the posix_spawn attribute and file-action objects, so every exit path destroys them;
// every call that fills them is checked and a failure names the step and the program.
class SpawnSetup {
 public:
  explicit SpawnSetup(std::string program) : program_(std::move(program)) {
    check(posix_spawn_file_actions_init(&actions_), "posix_spawn_file_actions_init");
    if (int error = posix_spawnattr_init(&attributes_); error != 0) {
      posix_spawn_file_actions_destroy(&actions_);
      fail(error, "posix_spawnattr_init");
    }
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attributes_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  void check(int error, const std::string& step) const {
    if (error != 0) fail(error, step);
  }
  [[noreturn]] void fail(int error, const std::string& step) const {
    throw SpawnError(error, std::generic_category(),
                     "cannot start '" + program_ + "' (" + step + ")");
  }

  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attributes() { return &attributes_; }

 private:
  std::string program_;
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attributes_;
};

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

std::vector<std::string> currentEnvironmentEntries() {
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) entries.emplace_back(*e);
  return entries;
}

void setEntry(std::vector<std::string>& entries, const std::string& name,
              const std::string& value) {
  const std::string prefix = name + "=";
  for (std::string& entry : entries) {
    if (entry.compare(0, prefix.size(), prefix) == 0) {
      entry = prefix + value;
      return;
    }
  }
  entries.push_back(prefix + value);
}

// One standard stream: a descriptor the caller keeps, else a file opened by path, else
// inherited (empty path). `what` names it in an error ("stdout to").
void redirect(SpawnSetup& setup, int stream, const char* what, int fromFd, const std::string& path,
              int openFlags) {
  if (fromFd >= 0) {
    setup.check(posix_spawn_file_actions_adddup2(setup.actions(), fromFd, stream),
                std::string(what) + " descriptor " + std::to_string(fromFd));
  } else if (!path.empty()) {
    setup.check(
        posix_spawn_file_actions_addopen(setup.actions(), stream, path.c_str(), openFlags, 0644),
        std::string(what) + " " + path);
  }
}

// Files first (absolute paths, opened in the parent's cwd), then the directory change.
void addFileActions(SpawnSetup& setup, const SpawnOptions& options) {
  posix_spawn_file_actions_t* actions = setup.actions();
  const int outputFlags = O_WRONLY | O_CREAT | (options.appendOutput ? O_APPEND : O_TRUNC);
  redirect(setup, STDIN_FILENO, "stdin from", options.stdinFd, options.stdinPath, O_RDONLY);
  redirect(setup, STDOUT_FILENO, "stdout to", options.stdoutFd, options.stdoutPath, outputFlags);
  if (options.stderrFd < 0 && !options.stderrPath.empty() &&
      options.stderrPath == options.stdoutPath) {
    setup.check(posix_spawn_file_actions_adddup2(actions, STDOUT_FILENO, STDERR_FILENO),
                "stderr to stdout");
  } else {
    redirect(setup, STDERR_FILENO, "stderr to", options.stderrFd, options.stderrPath, outputFlags);
  }
  if (!options.workDir.empty()) {
    setup.check(posix_spawn_file_actions_addchdir_np(actions, options.workDir.c_str()),
                "working directory " + options.workDir);
  }
  if (options.closeOtherDescriptors) {
    setup.check(posix_spawn_file_actions_addclosefrom_np(actions, STDERR_FILENO + 1),
                "close inherited descriptors");
  }
}

// The signal mask and dispositions, and the process group or session.
void setAttributes(SpawnSetup& setup, const SpawnOptions& options) {
  posix_spawnattr_t* attributes = setup.attributes();
  short flags = 0;
  if (options.resetSignals) {
    sigset_t emptyMask;
    sigemptyset(&emptyMask);
    sigset_t allSignals;
    sigfillset(&allSignals);
    setup.check(posix_spawnattr_setsigmask(attributes, &emptyMask), "signal mask");
    setup.check(posix_spawnattr_setsigdefault(attributes, &allSignals), "signal dispositions");
    flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  }
  switch (options.grouping) {
    case ProcessGrouping::kInherit:
      break;
    case ProcessGrouping::kNewProcessGroup:
      setup.check(posix_spawnattr_setpgroup(attributes, 0), "new process group");
      flags |= POSIX_SPAWN_SETPGROUP;
      break;
    case ProcessGrouping::kNewSession:
      flags |= POSIX_SPAWN_SETSID;
      break;
  }
  setup.check(posix_spawnattr_setflags(attributes, flags), "spawn flags");
}

std::vector<std::string> childEnvironment(const SpawnOptions& options) {
  std::vector<std::string> environment =
      options.environment ? *options.environment : currentEnvironmentEntries();
  if (options.parentDeathSignal != 0) {
    setEntry(environment, kParentDeathEnv,
             std::to_string(options.parentDeathSignal) + ":" + std::to_string(getpid()));
  }
  return environment;
}

}  // namespace

pid_t spawnProcess(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    throw std::invalid_argument("spawnProcess: empty argv");
  }
  const std::string& program = options.argv[0];
  SpawnSetup setup(program);
  addFileActions(setup, options);
  setAttributes(setup, options);

  std::vector<std::string> args = options.argv;
  std::vector<std::string> environment = childEnvironment(options);
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(environment);
  posix_spawn_file_actions_t* actions = setup.actions();
  posix_spawnattr_t* attributes = setup.attributes();
  pid_t pid = -1;
  const int error = options.searchPath
                        ? posix_spawnp(&pid, argv[0], actions, attributes, argv.data(), envp.data())
                        : posix_spawn(&pid, argv[0], actions, attributes, argv.data(), envp.data());
  setup.check(error, "exec");
  return pid;
}

std::optional<std::string> findProgram(const std::string& program, const std::string& path) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) return program;
  std::istringstream directories(path.empty() ? "/usr/local/bin:/usr/bin:/bin" : path);
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    const std::string candidate = (directory.empty() ? "." : directory) + "/" + program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

void applyParentDeathSignal() {
  const char* value = std::getenv(kParentDeathEnv);
  if (value == nullptr) return;
  const std::string text = value;
  ::unsetenv(kParentDeathEnv);
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return;
  try {
    const int signal = std::stoi(text.substr(0, colon));
    const pid_t parent = static_cast<pid_t>(std::stol(text.substr(colon + 1)));
    if (signal <= 0 || signal >= NSIG) return;
    ::prctl(PR_SET_PDEATHSIG, signal);
    // The parent may have died between our spawn and the prctl: then nobody would tell us.
    if (::getppid() != parent) ::raise(signal);
  } catch (const std::exception&) {
    // A malformed value is ignored: the variable is ours, nobody else sets it.
  }
}

std::string describeWaitStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) return "exited with code " + std::to_string(WEXITSTATUS(waitStatus));
  if (WIFSIGNALED(waitStatus)) {
    const int signal = WTERMSIG(waitStatus);
    std::string text = "killed by signal " + std::to_string(signal);
    if (const char* name = sigabbrev_np(signal)) text += std::string(" (SIG") + name + ")";
    return text;
  }
  return "ended with wait status " + std::to_string(waitStatus);
}

int exitCodeOf(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 255;
}

}  // namespace tide
