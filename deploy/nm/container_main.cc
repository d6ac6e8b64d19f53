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
// The launcher of an executor's command tasks: reads launch and reap requests on stdin (a Unix
// stream socket; common/supervisor_launch.h) and forks, for each launch, a supervisor that does
// all of the above with --die-with-parent set to the launcher. One exec per executor instead of
// one per task. It exits when the socket closes or, with --die-with-parent, when PID dies; the
// supervisors it forked then take their tasks down.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
      "  --serve                fork a supervisor for each launch request read on stdin (a\n"
      "                         socket from tide-executor) instead of running PROGRAM\n"
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

// Runs the command below us until it ends, then exits as it did. `environment`: the
// command's, when it is not ours (a supervisor forked by the launcher keeps the launcher's).
[[noreturn]] void superviseCommand(const Arguments& args,
                                   const std::vector<std::string>* environment) {
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
  if (environment != nullptr) spawn.environment = *environment;
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

// --- the launcher (--serve) ---

pid_t launcherParent = 0;
// The launcher's own command line, which a forked supervisor rewrites in place: ps and
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

// In the forked child, before it supervises anything: the reason goes to the task's stderr
// (the launcher is single-threaded, so the child may allocate) and the task fails with 127.
void failInChild(const char* what, const std::string& detail) {
  const std::string line =
      std::string("tide-container: ") + what + " " + detail + ": " + std::strerror(errno) + "\n";
  [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  std::_Exit(kCannotRunExit);
}

// In the forked child: becomes what `tide-container --die-with-parent LAUNCHER --grace MS --
// PROGRAM...` started with the request's descriptors and directory would be.
[[noreturn]] void becomeSupervisor(pid_t launcher, const LaunchRequest& request, int stdoutFd,
                                   int stderrFd) {
  // Still blocked (see serve): the launcher's handler must never run here, where our parent is
  // the launcher and it would end us with status 0, a task that never ran reported finished.
  ::signal(SIGHUP, SIG_DFL);
  renameSupervisor();
  ::setpgid(0, 0);  // the launcher sets it too, so that it holds before the executor hears the pid
  if (::dup2(stdoutFd, STDOUT_FILENO) < 0) failInChild("cannot set stdout", "");
  if (::dup2(stderrFd, STDERR_FILENO) < 0) failInChild("cannot set stderr", "");
  const int devNull = ::open("/dev/null", O_RDONLY);
  if (devNull < 0 || ::dup2(devNull, STDIN_FILENO) < 0) failInChild("cannot open", "/dev/null");
  ::closefrom(STDERR_FILENO + 1);  // the launcher's socket and the descriptors it was given
  if (!request.workDir.empty() && ::chdir(request.workDir.c_str()) != 0) {
    failInChild("cannot enter working directory", request.workDir);
  }
  Arguments args;
  args.dieWithParent = launcher;
  args.graceMs = request.graceMs;
  args.command = request.argv;
  superviseCommand(args, &request.environment);
}

void answer(int socket, int64_t value) {
  // A lost answer is the executor gone: the next read ends the loop.
  sendFrame(socket, encodeAnswer(value));
}

// Serves launch and reap requests on stdin (a Unix stream socket) until the executor closes it
// or dies. Never reaps a supervisor it was not asked to (see common/supervisor_launch.h).
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
  const pid_t self = ::getpid();
  std::string payload;
  std::vector<int> descriptors;
  while (receiveFrame(kSocket, payload, descriptors)) {
    LauncherMessage message;
    try {
      message = decodeLauncherMessage(payload);
      if (message.kind == LauncherMessage::Kind::kLaunch && descriptors.size() != 2) {
        throw std::runtime_error("a launch needs 2 descriptors (stdout, stderr), got " +
                                 std::to_string(descriptors.size()));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tide-container --serve: %s\n", e.what());
      for (int fd : descriptors) ::close(fd);
      answer(kSocket, -EINVAL);
      continue;
    }
    if (message.kind == LauncherMessage::Kind::kLaunch) {
      sigset_t hangup;
      sigemptyset(&hangup);
      sigaddset(&hangup, SIGHUP);
      ::sigprocmask(SIG_BLOCK, &hangup, nullptr);
      const pid_t pid = ::fork();
      if (pid == 0) becomeSupervisor(self, message.launch, descriptors[0], descriptors[1]);
      const int forkError = errno;
      ::sigprocmask(SIG_UNBLOCK, &hangup, nullptr);
      if (pid > 0) ::setpgid(pid, pid);
      for (int fd : descriptors) ::close(fd);
      answer(kSocket, pid > 0 ? pid : -forkError);
    } else {
      for (int fd : descriptors) ::close(fd);
      int status = 0;
      pid_t reaped;
      do {
        reaped = ::waitpid(message.pid, &status, 0);
      } while (reaped < 0 && errno == EINTR);
      answer(kSocket, reaped == message.pid ? status : -errno);
    }
  }
  // The executor closed its end or died: every supervisor below gets SIGHUP (its parent-death
  // signal) once we are gone, and takes its task down.
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  launcherArgv = argv;
  launcherArgc = argc;
  if (args.serve) serve(args);
  superviseCommand(args, nullptr);
}
