#pragma once

// The one way tide starts a process: posix_spawn (safe in a multithreaded parent, since the
// child runs no code of ours between fork and exec) with every attribute and file action
// checked, so a failure names the step that failed and the program.
//
// Used by `tide run` and tests (ChildProcess), the node manager (containers) and the executor
// (command tasks).

#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace tide {

enum class ProcessGrouping {
  kInherit,          // stays in the parent's process group and session
  kNewProcessGroup,  // leads a new process group (pgid == pid) in the parent's session
  kNewSession,       // leads a new session and process group (sid == pgid == pid)
};

struct SpawnOptions {
  // argv[0]: a path (absolute, or relative to workDir once it is set), or with searchPath a
  // name looked up in this process's PATH.
  std::vector<std::string> argv;
  bool searchPath = false;
  // "NAME=value" entries: exactly the child's environment. nullopt: this process's environment.
  std::optional<std::vector<std::string>> environment;
  std::string workDir;                  // empty: the parent's
  std::string stdinPath = "/dev/null";  // empty: inherited
  int stdinFd = -1;                     // the child's stdin instead of stdinPath (caller keeps it)
  std::string stdoutPath;               // empty: inherited
  std::string stderrPath;               // empty: inherited; may equal stdoutPath (one file)
  bool appendOutput = false;            // append to stdout/stderr files instead of truncating
  // Descriptors the child gets as stdout and stderr instead of opening the paths (the caller
  // keeps and closes them): a caller that opened them ahead of time. -1: the path above.
  int stdoutFd = -1;
  int stderrFd = -1;
  ProcessGrouping grouping = ProcessGrouping::kInherit;
  // Closes every descriptor above 2 (the parent's sockets must not leak into the child).
  bool closeOtherDescriptors = true;
  // Signal mask emptied, and every signal's disposition reset to its default (a parent that
  // blocks SIGTERM for sigwait or ignores SIGPIPE must not pass that on).
  bool resetSignals = true;
  // The signal the child gets when this process dies (prctl PR_SET_PDEATHSIG). posix_spawn
  // cannot set it, so it travels in the environment (kParentDeathEnv) and only tide's own
  // binaries honour it, by calling applyParentDeathSignal() first thing in main.
  int parentDeathSignal = 0;
};

// The environment variable carrying "<signal>:<parent pid>" to a tide binary.
inline constexpr char kParentDeathEnv[] = "TIDE_PARENT_DEATH_SIGNAL";

// A process that could not be started: what() names the program and the step.
class SpawnError : public std::system_error {
 public:
  using std::system_error::system_error;
};

// Starts the process and returns its pid. Throws SpawnError (a failing attribute call, a file
// that cannot be opened, a program that cannot be executed: glibc reports a failed exec as the
// return value of posix_spawn) and std::invalid_argument for an empty argv.
pid_t spawnProcess(const SpawnOptions& options);

// The absolute path posix_spawnp would run for `program` with this PATH ("" for the default
// path); a name with a '/' is returned as is. nullopt when no executable file is found.
std::optional<std::string> findProgram(const std::string& program, const std::string& path);

// Called first thing in the main() of a tide binary: when its parent asked (kParentDeathEnv),
// sets PR_SET_PDEATHSIG and, if the parent already died meanwhile, raises the signal itself.
// Removes the variable so that the binary's own children do not inherit it.
void applyParentDeathSignal();

// "exited with code 3", "killed by signal 9 (SIGKILL)".
std::string describeWaitStatus(int waitStatus);
// The exit code, or 128 + the signal (as a shell reports it).
int exitCodeOf(int waitStatus);

}  // namespace tide
