// tide-container: the supervisor at the root of every container (started by tide-nm) and of
// every command task (started by tide-executor). It makes containment hold without any
// cgroup: it is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every process below it
// stays below it however it daemonises (setsid, double fork, a new process group), and when it
// must stop it kills its whole tree, found by parent links in /proc.
//
//   tide-container [--cgroup-procs FILE] [--die-with-parent PID] [--grace MS] [--exit-file FILE]
//                  -- PROGRAM ARG...
//
// It runs PROGRAM (looked up in PATH when it has no '/') in its own process group and session,
// with its own environment and descriptors, and then:
// - when PROGRAM exits, SIGKILLs whatever PROGRAM left running below it, reaps everything and
//   exits as PROGRAM did (the same code, or the same signal raised on itself);
// - on SIGTERM or SIGINT, passes SIGTERM to every process below it, and SIGKILLs them all once
//   --grace (default 2000 ms) has passed;
// - with --die-with-parent PID: when PID (its parent) dies, even by SIGKILL, SIGKILLs every
//   process below it at once (PR_SET_PDEATHSIG delivers SIGHUP; a task never outlives its
//   executor);
// - with --cgroup-procs FILE: first moves itself into that cgroup (writes its pid to FILE), so
//   that everything it starts is counted against the cgroup's limits;
// - with --exit-file FILE: just before it exits, writes how PROGRAM ended to FILE
//   (container_exit_file.h), for a node manager that is not its parent (one restarted after a
//   crash cannot wait for it).
// It is never tied to the life of whoever started it unless --die-with-parent says so: a
// container outlives a node manager that crashed, for the restarted one to re-attach to it.
// Exit 125: bad usage or the cgroup could not be joined; 127: PROGRAM could not be started
// (the reason is on stderr).
//
//   tide-container --serve [--die-with-parent PID]
//
// The launcher of an executor's command tasks: on each request read on stdin (a Unix stream
// socket; common/supervisor_launch.h) it forks a slot supervisor and hands the executor a socket
// to it. A slot supervisor is a subreaper that runs the tasks the executor sends, one at a time,
// as above, and after each task kills what it left running. One exec per executor and one fork
// per slot, instead of one of each per task. The launcher exits when its socket closes or, with
// --die-with-parent, when PID dies; a slot supervisor ends, taking its task down, when its
// socket to the executor closes.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/process_tree.h"
#include "common/spawn.h"
#include "common/supervisor_launch.h"
#include "deploy/nm/container_exit_file.h"

namespace {

using namespace tide;
using Clock = std::chrono::steady_clock;

constexpr int kUsageExit = 125;
constexpr int kCannotRunExit = 127;

struct Arguments {
  std::string cgroupProcs;
  pid_t dieWithParent = 0;
  long graceMs = 2000;
  std::string exitFile;
  bool serve = false;
  std::vector<std::string> command;
};

constexpr char kUsageLine[] =
    "[--cgroup-procs FILE] [--die-with-parent PID] [--grace MS] [--exit-file FILE] -- PROGRAM "
    "[ARG...]\n       tide-container --serve [--die-with-parent PID]";

// tide-nm and tide-executor start it; a person reading `ps` may ask it what it is.
[[noreturn]] void help() {
  std::printf(
      "Usage: tide-container %s\n\n"
      "The supervisor of a container or a command task: runs PROGRAM in its own process group\n"
      "and session, keeps every process it starts below it, and leaves none of them running\n"
      "when PROGRAM exits or it is stopped. Started by tide-nm and tide-executor.\n\n"
      "Options:\n"
      "  --cgroup-procs FILE    join this cgroup (write its pid to FILE) before starting\n"
      "  --die-with-parent PID  kill everything below it when its parent PID dies\n"
      "  --grace MS             after SIGTERM, how long before SIGKILL (default 2000)\n"
      "  --exit-file FILE       write how PROGRAM ended to FILE just before exiting\n"
      "  --serve                fork a slot supervisor, which runs tasks one at a time, for\n"
      "                         each request read on stdin (a socket from tide-executor)\n"
      "                         instead of running PROGRAM\n"
      "  -h, --help             print this and exit\n\n"
      "Exit status: PROGRAM's (or its signal raised again); 125 bad usage or the cgroup could\n"
      "not be joined; 127 PROGRAM could not be started.\n",
      kUsageLine);
  std::exit(0);
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "tide-container: %s\nusage: tide-container %s\n", problem.c_str(),
               kUsageLine);
  std::exit(kUsageExit);
}

Arguments parse(int argc, char** argv) {
  Arguments args;
  int i = 1;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) usage(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    try {
      if (arg == "--") {
        ++i;
        break;
      } else if (arg == "-h" || arg == "--help") {
        help();
      } else if (arg == "--cgroup-procs") {
        args.cgroupProcs = value(arg);
      } else if (arg == "--die-with-parent") {
        args.dieWithParent = static_cast<pid_t>(std::stol(value(arg)));
      } else if (arg == "--grace") {
        args.graceMs = std::stol(value(arg));
      } else if (arg == "--exit-file") {
        args.exitFile = value(arg);
      } else if (arg == "--serve") {
        args.serve = true;
      } else {
        usage("unknown option '" + arg + "'");
      }
    } catch (const std::exception&) {
      usage("bad value for " + arg);
    }
  }
  for (; i < argc; ++i) args.command.emplace_back(argv[i]);
  if (args.serve) {
    if (!args.command.empty()) usage("--serve runs no program of its own");
    if (!args.cgroupProcs.empty() || !args.exitFile.empty()) {
      usage("--serve takes no --cgroup-procs or --exit-file");
    }
  } else if (args.command.empty()) {
    usage("no program given");
  }
  return args;
}

// Reaps every child that has ended; records the main one's status.
void reapExited(pid_t mainPid, bool& mainEnded, int& mainStatus) {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == mainPid) {
      mainEnded = true;
      mainStatus = status;
    }
  }
}

// Reaps every child that has ended; true when no child is left, so nothing is below us (every
// process below us is a child of ours or below one).
bool reapAllEnded() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
  }
  return pid < 0 && errno == ECHILD;
}

// Kills everything below us and reaps it, until nothing is left. With no child left (a task
// that started nothing that outlived it, the common case) there is nothing to look for in
// /proc, whose walk is most of what a short task's supervisor costs on a busy host.
void killAndReapAll() {
  if (reapAllEnded()) return;
  for (int round = 0; round < 100; ++round) {
    killDescendants(::getpid());
    if (reapAllEnded()) return;
    ::usleep(10000);
  }
}

// Written under a temporary name and renamed: a reader sees the whole line or no file.
void writeExitFile(const std::string& path, int status) {
  if (path.empty()) return;
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = tide::nm::formatExitFile(status);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (written) {
    ::rename(temporary.c_str(), path.c_str());
  } else {
    ::unlink(temporary.c_str());
  }
}

[[noreturn]] void exitAs(int status, const std::string& exitFile) {
  writeExitFile(exitFile, status);
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const rlimit noCore{0, 0};
    ::setrlimit(RLIMIT_CORE, &noCore);
    ::signal(signal, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::raise(signal);
    std::_Exit(128 + signal);
  }
  std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 255);
}

// Runs the command below us until it ends, then exits as it did.
[[noreturn]] void superviseCommand(const Arguments& args) {
  sigset_t handled;
  sigemptyset(&handled);
  for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT}) sigaddset(&handled, signal);
  ::sigprocmask(SIG_BLOCK, &handled, nullptr);

  if (args.dieWithParent > 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGHUP);
    if (::getppid() != args.dieWithParent) std::_Exit(kUsageExit);  // already gone: run nothing
  }
  if (!args.cgroupProcs.empty()) {
    std::ofstream procs(args.cgroupProcs);
    procs << ::getpid() << "\n" << std::flush;
    if (!procs) {
      std::fprintf(stderr, "tide-container: cannot join cgroup %s: %s\n", args.cgroupProcs.c_str(),
                   std::strerror(errno));
      writeExitFile(args.exitFile, W_EXITCODE(kUsageExit, 0));
      std::_Exit(kUsageExit);
    }
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    std::fprintf(stderr, "tide-container: cannot become a child subreaper: %s\n",
                 std::strerror(errno));
    std::_Exit(kUsageExit);
  }

  SpawnOptions spawn;
  spawn.argv = args.command;
  spawn.searchPath = true;
  spawn.stdinPath = "";  // ours, already set up by whoever started us
  spawn.closeOtherDescriptors = false;
  spawn.resetSignals = true;
  pid_t mainPid = -1;
  try {
    mainPid = spawnProcess(spawn);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tide-container: %s\n", e.what());
    writeExitFile(args.exitFile, W_EXITCODE(kCannotRunExit, 0));
    std::_Exit(kCannotRunExit);
  }

  bool mainEnded = false;
  int mainStatus = 0;
  bool terminating = false;
  Clock::time_point killAt{};
  const timespec tick{0, 100 * 1000 * 1000};
  while (true) {
    siginfo_t info{};
    const int signal = ::sigtimedwait(&handled, &info, &tick);
    if (signal == SIGHUP && args.dieWithParent > 0 && ::getppid() != args.dieWithParent) {
      // Our parent died (not merely the thread that started us): nothing may outlive it.
      killAndReapAll();
      exitAs(W_EXITCODE(0, SIGKILL), args.exitFile);
    }
    if ((signal == SIGTERM || signal == SIGINT || signal == SIGQUIT ||
         (signal == SIGHUP && args.dieWithParent == 0)) &&
        !terminating) {
      terminating = true;
      killAt = Clock::now() + std::chrono::milliseconds(args.graceMs);
      signalProcessTree(::getpid(), SIGTERM, false);
    }
    reapExited(mainPid, mainEnded, mainStatus);
    if (mainEnded) {
      // A container (or task) ends with its main process: nothing it started survives it.
      killAndReapAll();
      exitAs(mainStatus, args.exitFile);
    }
    if (terminating && Clock::now() >= killAt) killDescendants(::getpid());
  }
}

// --- the launcher (--serve) and its slot supervisors ---

pid_t launcherParent = 0;
// The launcher's own command line, which a slot supervisor rewrites in place: ps and
// /proc/PID/cmdline must not show every supervisor as one more launcher.
char** launcherArgv = nullptr;
int launcherArgc = 0;

// Rewrites the bytes after argv[0] (the rest of the command line the kernel shows) to
// "--task-supervisor", cut to fit, the rest zeroed: ps shows "tide-container --task-supervisor".
void renameSupervisor() {
  if (launcherArgc < 2) return;
  char* start = launcherArgv[1];
  char* last = launcherArgv[launcherArgc - 1];
  const size_t room = static_cast<size_t>(last + std::strlen(last) - start);
  std::memset(start, 0, room);
  std::strncpy(start, "--task-supervisor", room);
}

// PR_SET_PDEATHSIG fires when the thread that started us ends, not only the process: only a
// new parent means the executor is gone.
void onHangup(int) {
  if (::getppid() != launcherParent) std::_Exit(0);
}

void answer(int socket, int64_t value) {
  // A lost answer is the peer gone: the next read ends its loop.
  sendFrame(socket, encodeAnswer(value));
}

// A task that cannot be started still gets a pid, whose exit status (127) and stderr say why,
// as an exec'd supervisor's would: the executor reports every launch through one path.
pid_t startCannotRun(const std::string& reason, int stderrFd) {
  const std::string line = "tide-container: " + reason + "\n";
  [[maybe_unused]] ssize_t ignored = ::write(stderrFd, line.data(), line.size());
  const pid_t pid = ::fork();
  if (pid == 0) std::_Exit(kCannotRunExit);
  if (pid > 0) ::setpgid(pid, pid);
  return pid > 0 ? pid : -errno;
}

// Starts a task: its own process group, stdin /dev/null, the request's descriptors, directory
// and environment, default signals, none of our descriptors.
pid_t startTask(const LaunchRequest& request, int stdoutFd, int stderrFd) {
  SpawnOptions spawn;
  spawn.argv = request.argv;
  spawn.searchPath = true;
  spawn.environment = request.environment;
  spawn.workDir = request.workDir;
  spawn.stdinPath = "";  // ours: /dev/null
  spawn.stdoutFd = stdoutFd;
  spawn.stderrFd = stderrFd;
  spawn.grouping = ProcessGrouping::kNewProcessGroup;
  try {
    return spawnProcess(spawn);
  } catch (const std::exception& e) {
    // A failed chdir comes back as the exec's error: say which it was.
    if (!request.workDir.empty() && ::access(request.workDir.c_str(), X_OK) != 0) {
      return startCannotRun(
          "cannot enter working directory " + request.workDir + ": " + std::strerror(errno),
          stderrFd);
    }
    return startCannotRun(e.what(), stderrFd);
  }
}

// A slot supervisor (forked by the launcher; `socket` its end of the pair whose other end went
// to the executor): runs the tasks the executor sends, one at a time. It is a child subreaper,
// so whatever a task orphans (setsid, double fork) comes to it, and came from its current task;
// reaping a task kills and reaps all of that before the answer, so the next task starts below
// an empty supervisor. It ends, taking its task down, when the socket closes: the executor
// closed it or died (nothing else holds that end).
[[noreturn]] void superviseSlot(int socket) {
  renameSupervisor();
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    std::fprintf(stderr, "tide-container: cannot become a child subreaper: %s\n",
                 std::strerror(errno));
    std::_Exit(kUsageExit);
  }
  std::string payload;
  std::vector<int> descriptors;
  pid_t task = 0;
  while (receiveFrame(socket, payload, descriptors)) {
    int64_t result = -EINVAL;
    try {
      const LauncherMessage message = decodeLauncherMessage(payload);
      if (message.kind == LauncherMessage::Kind::kLaunch) {
        if (descriptors.size() != 2) {
          throw std::runtime_error("a launch needs 2 descriptors (stdout, stderr), got " +
                                   std::to_string(descriptors.size()));
        }
        if (task != 0)
          throw std::runtime_error("a launch while task " + std::to_string(task) + " runs");
        result = startTask(message.launch, descriptors[0], descriptors[1]);
        if (result > 0) task = static_cast<pid_t>(result);
      } else if (message.kind == LauncherMessage::Kind::kReap ||
                 message.kind == LauncherMessage::Kind::kStop) {
        if (task == 0 || message.pid != task) {
          throw std::runtime_error(std::string(message.kind == LauncherMessage::Kind::kReap
                                                   ? "a reap of "
                                                   : "a stop of ") +
                                   std::to_string(message.pid) + ", which is not the task it runs");
        }
        if (message.kind == LauncherMessage::Kind::kStop) {
          // Everything below us: the task, its group, and what it orphaned here (in groups and
          // sessions of its own).
          signalProcessTree(::getpid(), SIGTERM, false);
          result = 0;
        } else {
          // Its group first: the task is our child, so the group id is still its own.
          ::kill(-task, SIGKILL);
          int status = 0;
          pid_t reaped;
          do {
            reaped = ::waitpid(task, &status, 0);
          } while (reaped < 0 && errno == EINTR);
          result = reaped > 0 ? status : -errno;
          task = 0;
          killAndReapAll();  // what the task left behind
        }
      } else {
        throw std::runtime_error("a slot supervisor takes launches, stops and reaps only");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tide-container --task-supervisor: %s\n", e.what());
    }
    for (int fd : descriptors) ::close(fd);
    answer(socket, result);
  }
  killAndReapAll();
  std::_Exit(0);
}

// Forks a slot supervisor; its pid, `executorEnd` set to the socket end for the executor, or
// -errno.
pid_t startSlot(int launcherSocket, int& executorEnd) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return -errno;
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &hangup, nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The launcher's SIGHUP handler must never run here: a slot supervisor is tied to the
    // executor by its socket, not to the launcher.
    ::signal(SIGHUP, SIG_DFL);
    ::sigprocmask(SIG_UNBLOCK, &hangup, nullptr);
    ::prctl(PR_SET_PDEATHSIG, 0);
    ::close(launcherSocket);
    ::close(ends[0]);
    // Only stdout, stderr and our socket.
    const int socket = ends[1];
    for (int fd = STDERR_FILENO + 1; fd < socket; ++fd) ::close(fd);
    ::closefrom(socket + 1);
    // stdin /dev/null, inherited by every task (no open per task).
    const int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull < 0) std::_Exit(kUsageExit);
    if (devNull != STDIN_FILENO) {
      ::dup2(devNull, STDIN_FILENO);
      ::close(devNull);
    }
    superviseSlot(socket);
  }
  const int forkError = errno;
  ::sigprocmask(SIG_UNBLOCK, &hangup, nullptr);
  ::close(ends[1]);
  if (pid < 0) {
    ::close(ends[0]);
    return -forkError;
  }
  executorEnd = ends[0];
  return pid;
}

// Serves requests for new slot supervisors on stdin (a Unix stream socket) until the executor
// closes it or dies (see common/supervisor_launch.h).
[[noreturn]] void serve(const Arguments& args) {
  constexpr int kSocket = STDIN_FILENO;
  launcherParent = args.dieWithParent;
  if (launcherParent > 0) {
    struct sigaction hangup {};
    hangup.sa_handler = onHangup;
    sigemptyset(&hangup.sa_mask);
    ::sigaction(SIGHUP, &hangup, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGHUP);
    if (::getppid() != launcherParent) std::_Exit(kUsageExit);
  }
  std::string payload;
  std::vector<int> descriptors;
  while (receiveFrame(kSocket, payload, descriptors)) {
    for (int fd : descriptors) ::close(fd);
    int status = 0;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
      // slot supervisors that have ended
    }
    int64_t result = -EINVAL;
    try {
      if (decodeLauncherMessage(payload).kind != LauncherMessage::Kind::kSlot) {
        throw std::runtime_error("the launcher takes requests for slots only");
      }
      int executorEnd = -1;
      result = startSlot(kSocket, executorEnd);
      if (result > 0) {
        sendFrame(kSocket, encodeAnswer(result), {executorEnd});
        ::close(executorEnd);
        continue;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tide-container --serve: %s\n", e.what());
    }
    answer(kSocket, result);
  }
  // The executor closed its end or died. The slot supervisors do not depend on us: each ends
  // when its own socket to the executor closes.
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  launcherArgv = argv;
  launcherArgc = argc;
  if (args.serve) serve(args);
  superviseCommand(args);
}
