#include "deploy/nm/container_manager.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/app_logs.h"
#include "common/child_process.h"
#include "common/file_tail.h"
#include "common/own_directory.h"
#include "common/process_tree.h"
#include "common/sorted_values.h"
#include "common/spawn.h"
#include "deploy/nm/process_group.h"
#include "rest/json.h"

namespace tide::nm {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// How long stop(wait) and stopAll() wait beyond the grace period for the SIGKILL to land.
constexpr DurationMs kKillMargin = 5000;
constexpr char kShell[] = "/bin/sh";
// How much of a failed container's stderr its diagnostics carry.
constexpr size_t kStderrTailLines = 10;
constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

// Container and application ids name directories and record files, so they must be plain
// path components: no separators, no "." or "..", nothing hidden.
void requirePathComponent(const std::string& value, const std::string& field) {
  if (!isPlainPathComponent(value)) {
    throw rest::JsonFieldError(
        field, "must be 1-200 letters, digits, '_', '-' or '.' and not start with '.'");
  }
}

int64_t toMiB(int64_t bytes) {
  return (bytes + kMiB - 1) / kMiB;
}

ContainerManagerOptions withDefaultLogDir(ContainerManagerOptions options) {
  if (options.logDir.empty()) options.logDir = options.workDir + "/logs";
  return options;
}

}  // namespace

ContainerManager::ContainerManager(ContainerManagerOptions options)
    : options_(withDefaultLogDir(std::move(options))),
      clock_(options_.clock != nullptr ? options_.clock : &steadyClock_),
      // Ids cannot start with '.', so this never collides with an application's directory.
      records_(options_.workDir + "/.containers"),
      bootId_(currentBootId()) {}

ContainerManager::~ContainerManager() {
  if (!started_) return;
  stopAll();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threadsExit_ = true;
  }
  changed_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  if (memoryMonitor_.joinable()) memoryMonitor_.join();
}

void ContainerManager::setNodeAddress(const std::string& host, int port) {
  // The REST server may already be answering /info, which reads the address.
  std::lock_guard<std::mutex> lock(mutex_);
  options_.nmAddress = host + ":" + std::to_string(port);
  if (options_.cgroupName.empty()) options_.cgroupName = "tide-nm-" + std::to_string(port);
}

std::string ContainerManager::nmAddress() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return options_.nmAddress;
}

void ContainerManager::start() {
  if (started_) throw std::logic_error("ContainerManager::start called twice");
  createDirectories();
  std::set<std::string> keptCgroups;
  std::vector<ContainerRecord> toRecover = takeOverPreviousRun(keptCgroups);
  chooseMemoryEnforcement(keptCgroups);
  prepareSupervision();
  if (!toRecover.empty()) recoverContainers(std::move(toRecover));

  started_ = true;
  reaper_ = std::thread([this] { reapLoop(); });
  if (enforcement_ != MemoryEnforcement::kOff) {
    memoryMonitor_ = std::thread([this] { monitorMemoryLoop(); });
  }
}

void ContainerManager::createDirectories() {
  // The work dir holds the recovery records, whose pids this node manager signals: it must be
  // this user's (its default is under /tmp, where another user could make it first).
  std::error_code ec;
  const bool created = !fs::exists(options_.workDir, ec);
  if (std::string why =
          makeOwnDirectory(options_.workDir, {/*rootMayOwn=*/false, /*followSymlink=*/true});
      !why.empty()) {
    throw std::runtime_error("nm.workDir: " + why + " (choose another nm.workDir)");
  }
  if (created) fs::permissions(options_.workDir, fs::perms::owner_all, ec);
  // Logs are private: a log dir tide-nm creates is its user's only.
  if (fs::create_directories(options_.logDir, ec) && !ec) {
    fs::permissions(options_.logDir, fs::perms::owner_all, ec);
  }
  if (ec)
    throw std::runtime_error("cannot create log dir " + options_.logDir + ": " + ec.message());
  records_.ensureDirectory();
}

std::vector<ContainerRecord> ContainerManager::takeOverPreviousRun(
    std::set<std::string>& keptCgroups) {
  std::vector<ContainerRecord> toRecover;
  if (options_.recovery) {
    // Throws for a record it cannot read: never a silent fresh start over containers that may
    // still run.
    ContainerRecords::Contents contents = records_.load();
    for (pid_t pid : records_.killLegacy(contents.legacy)) {
      log_.warn() << "killed container supervisor " << pid
                  << " recorded by a tide-nm without recovery (a record without version)";
    }
    toRecover = std::move(contents.records);
    for (const ContainerRecord& record : toRecover) {
      if (!record.cgroupPath.empty() && !record.completion) keptCgroups.insert(record.containerId);
    }
  } else {
    const ContainerRecords::Cleanup cleanup = records_.killAll();
    for (pid_t pid : cleanup.killed) {
      log_.warn() << "killed container supervisor " << pid
                  << " (its whole tree) left behind by a previous node manager; "
                     "nm.recovery.enabled is false";
    }
    for (const std::string& problem : cleanup.unreadable) {
      log_.warn() << "removed " << problem << "; nothing it names was killed";
    }
    if (cleanup.recordsRemoved > 0) {
      log_.info() << "removed " << cleanup.recordsRemoved
                  << " container record(s) of a previous run";
    }
  }
  return toRecover;
}

void ContainerManager::chooseMemoryEnforcement(const std::set<std::string>& keptCgroups) {
  switch (options_.memoryEnforcement) {
    case MemoryEnforcement::kOff:
      enforcement_ = MemoryEnforcement::kOff;
      enforcementReason_ = "disabled by configuration";
      break;
    case MemoryEnforcement::kWatchdog:
      enforcement_ = MemoryEnforcement::kWatchdog;
      enforcementReason_ = "resident-set watchdog asked for by configuration";
      break;
    case MemoryEnforcement::kAuto:
    case MemoryEnforcement::kCgroup: {
      std::string whyNot;
      if (options_.cgroupName.empty()) options_.cgroupName = "tide-nm";
      cgroup_ = CgroupMemory::create(options_.cgroupRoot, options_.cgroupName, &whyNot);
      if (cgroup_) {
        enforcement_ = MemoryEnforcement::kCgroup;
        enforcementReason_ = "cgroup v2 memory controller at " + cgroup_->path();
        if (int leftovers = cgroup_->removeLeftovers(keptCgroups); leftovers > 0) {
          log_.warn() << "removed " << leftovers << " container cgroup(s) of a previous run";
        }
      } else if (options_.memoryEnforcement == MemoryEnforcement::kCgroup) {
        throw std::runtime_error("memory enforcement 'cgroup' is not available: " + whyNot);
      } else {
        enforcement_ = MemoryEnforcement::kWatchdog;
        enforcementReason_ = "resident-set watchdog, because cgroup v2 is not usable: " + whyNot;
      }
      break;
    }
  }
}

void ContainerManager::prepareSupervision() {
  if (options_.supervisorPath.empty())
    options_.supervisorPath = selfDirectory() + "/tide-container";
  if (::access(options_.supervisorPath.c_str(), X_OK) != 0) {
    throw std::runtime_error("the container supervisor " + options_.supervisorPath +
                             " is missing or not executable");
  }
  if (options_.adoptOrphans && ::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    throw std::runtime_error(std::string("cannot become a child subreaper: ") +
                             std::strerror(errno));
  }
}

std::vector<std::string> ContainerManager::containerEnvironment(
    const rest::ContainerLaunchRequest& request, const std::string& workDir) const {
  std::map<std::string, std::string> environment = request.environment;
  // A shell needs PATH to find anything; HOME is assumed by many tools.
  if (environment.count("PATH") == 0) {
    const char* path = std::getenv("PATH");
    environment["PATH"] = path != nullptr ? path : kDefaultPath;
  }
  if (environment.count("HOME") == 0) {
    const char* home = std::getenv("HOME");
    environment["HOME"] = home != nullptr ? home : workDir;
  }
  // The NM's own facts about the container win over anything the request says.
  for (const auto& [name, value] : options_.environment) environment[name] = value;
  environment["TIDE_CONTAINER_ID"] = request.containerId;
  environment["TIDE_APPLICATION_ID"] = request.applicationId;
  environment["TIDE_NM_ADDRESS"] = options_.nmAddress;
  // Where the executor keeps its tasks' stdout and stderr (executor/task_runner.h).
  environment["TIDE_LOG_DIR"] =
      containerLogDir(options_.logDir, request.applicationId, request.containerId);
  std::vector<std::string> entries;
  entries.reserve(environment.size());
  for (const auto& [name, value] : environment) entries.push_back(name + "=" + value);
  return entries;
}

rest::ContainerReport ContainerManager::launch(const rest::ContainerLaunchRequest& request) {
  requirePathComponent(request.containerId, "containerId");
  requirePathComponent(request.applicationId, "applicationId");
  if (request.command.empty()) throw rest::JsonFieldError("command", "must not be empty");
  if (request.resource.memoryMb <= 0) {
    throw rest::JsonFieldError("resource.memory", "must be positive (MiB)");
  }

  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_ || stopping_)
    throw std::runtime_error("the node manager is not accepting containers");
  if (containers_.count(request.containerId) != 0) {
    throw ContainerConflictError("container " + request.containerId + " already exists");
  }

  Container container;
  container.request = request;
  container.workDir = options_.workDir + "/" + request.applicationId + "/" + request.containerId;
  const std::string logDir = prepareDirectories(container);
  spawnSupervisor(container, logDir);
  container.sequence = nextSequence_++;
  if (const auto info = readProcess(container.pid)) container.startTimeTicks = info->startTimeTicks;
  if (std::string error = records_.write(recordOf(container)); !error.empty()) {
    log_.warn() << "container " << request.containerId
                << ": no record, a restarted NM could neither re-attach to it nor clean it up: "
                << error;
  }
  log_.info() << "started container " << request.containerId << " of " << request.applicationId
              << " as pid " << container.pid << " (" << request.resource.memoryMb << " MiB, "
              << request.resource.vCores << " vCores) in " << container.workDir;
  warnIfOverCommitted(request.resource);
  auto [it, inserted] = containers_.emplace(request.containerId, std::move(container));
  (void)inserted;
  changed_.notify_all();
  return reportOf(it->second);
}

std::string ContainerManager::prepareDirectories(const Container& container) const {
  const rest::ContainerLaunchRequest& request = container.request;
  std::error_code ec;
  fs::create_directories(container.workDir, ec);
  if (ec) throw std::runtime_error("cannot create " + container.workDir + ": " + ec.message());

  // The output goes straight to the log dir, which outlives the application (nothing to copy
  // when it ends or is killed); the work dir links to it where it always was.
  const std::string logDir =
      containerLogDir(options_.logDir, request.applicationId, request.containerId);
  fs::create_directories(logDir, ec);
  if (ec) throw std::runtime_error("cannot create " + logDir + ": " + ec.message());
  for (const char* name : {"stdout", "stderr"}) {
    const fs::path link = fs::path(container.workDir) / name;
    fs::remove(link, ec);
    fs::create_symlink(fs::path(logDir) / name, link, ec);
  }
  if (const auto executor = request.environment.find("TIDE_EXECUTOR_ID");
      executor != request.environment.end()) {
    std::FILE* file = std::fopen((logDir + "/" + kExecutorIdFile).c_str(), "w");
    if (file != nullptr) {
      std::fputs(executor->second.c_str(), file);
      std::fclose(file);
    }
  }
  return logDir;
}

void ContainerManager::spawnSupervisor(Container& container, const std::string& logDir) {
  const rest::ContainerLaunchRequest& request = container.request;
  SpawnOptions spawn;
  spawn.workDir = container.workDir;
  spawn.stdoutPath = logDir + "/stdout";
  spawn.stderrPath = logDir + "/stderr";
  spawn.environment = containerEnvironment(request, container.workDir);
  // A new session: the supervisor leads its own session and process group (pgid == pid), and a
  // terminal's Ctrl-C meant for the NM does not reach it. No parent-death signal: a container
  // outlives a crashed NM, for its restart to find (DESIGN.md, trust model).
  spawn.grouping = ProcessGrouping::kNewSession;
  // The supervisor leaves how the command ended in the exit file, for a restarted NM that is
  // not its parent.
  records_.erase(request.containerId);
  spawn.argv = {options_.supervisorPath, "--grace", std::to_string(options_.stopGracePeriod),
                "--exit-file", records_.exitFile(request.containerId)};
  if (cgroup_) {
    container.cgroupPath =
        cgroup_->createContainerGroup(request.containerId, request.resource.memoryMb * kMiB);
    // The supervisor joins the container's cgroup before it runs the command, so nothing the
    // command starts can escape the limit (posix_spawn cannot place the child itself).
    spawn.argv.insert(spawn.argv.end(),
                      {"--cgroup-procs", CgroupMemory::procsFile(container.cgroupPath)});
  }
  spawn.argv.insert(spawn.argv.end(), {"--", kShell, "-c", request.command});
  try {
    container.pid = spawnProcess(spawn);
  } catch (...) {
    if (!container.cgroupPath.empty()) CgroupMemory::remove(container.cgroupPath);
    throw;
  }
}

void ContainerManager::warnIfOverCommitted(const rest::Resource& launched) const {
  rest::Resource inUse = launched;
  for (const auto& [id, other] : containers_) {
    if (other.state == kRunning) {
      inUse.memoryMb += other.request.resource.memoryMb;
      inUse.vCores += other.request.resource.vCores;
    }
  }
  if (inUse.memoryMb > options_.capacity.memoryMb || inUse.vCores > options_.capacity.vCores) {
    // The RM never over-commits a node; when it happens anyway (e.g. a stopped container
    // still in its grace period) the NM runs the container and says so.
    log_.warn() << "node over-committed: containers hold " << inUse.memoryMb << " of "
                << options_.capacity.memoryMb << " MiB and " << inUse.vCores << " of "
                << options_.capacity.vCores << " vCores";
  }
}

void ContainerManager::requestStop(Container& container, StopReason reason) {
  if (container.state != kRunning || container.stopReason) return;
  container.stopReason = reason;
  container.killDeadline = addSaturating(now(), options_.stopGracePeriod);
  if (options_.stopGracePeriod <= 0) {
    killContainerTree(container);
  } else if (container.adopted) {
    // Not our child: only through its pidfd, which reaches it and nobody else. It passes
    // SIGTERM on to every process below it.
    container.adopted->signal(SIGTERM);
  } else {
    // The supervisor passes it on to every process below it, and SIGKILLs them once the grace
    // period has passed; the group gets it at once too.
    signalProcessGroup(container.pid, SIGTERM);
  }
  changed_.notify_all();
}

void ContainerManager::killContainerTree(Container& container) {
  container.killSent = true;
  if (container.adopted) {
    // Its pid is its own as long as it has not ended, which the stopped supervisor cannot do
    // but by our SIGKILL: only then may its tree and group be found by that pid.
    if (container.adopted->signal(SIGSTOP) && !container.adopted->exited()) {
      killDescendants(container.pid);
      signalProcessGroup(container.pid, SIGKILL);
    }
    container.adopted->signal(SIGKILL);
    killRememberedTree(container);
    return;
  }
  // Descendants first: the supervisor, a subreaper, holds them all while it lives; stopped, it
  // can neither exit (which would hand its tree to us) nor act while they are killed.
  ::kill(container.pid, SIGSTOP);
  killDescendants(container.pid);
  signalProcessGroup(container.pid, SIGKILL);
  ::kill(container.pid, SIGKILL);  // it left its group? never: but it must not survive
  container.killSent = true;
  orphansMayExist_ = true;
}

void ContainerManager::killAdoptedOrphans() {
  orphansMayExist_ = false;
  if (!options_.adoptOrphans) return;
  const pid_t self = ::getpid();
  const std::vector<ProcessInfo> table = readProcessTable();
  for (const ProcessInfo& info : table) {
    if (info.ppid != self) continue;
    const bool supervisor =
        std::any_of(containers_.begin(), containers_.end(), [&](const auto& entry) {
          return entry.second.state == kRunning && entry.second.pid == info.pid;
        });
    if (supervisor) continue;
    // A child of ours that is no container's supervisor came from a container whose supervisor
    // died: it is unreaped, so its pid is still its own.
    if (info.state != 'Z') {
      log_.warn() << "killing process " << info.pid << " left behind by an ended container";
      killDescendants(info.pid);
      ::kill(info.pid, SIGKILL);
    }
    orphansMayExist_ = true;  // reaped on a later round, once it is a zombie
    int status = 0;
    if (::waitpid(info.pid, &status, WNOHANG) == info.pid) continue;
  }
}

std::optional<rest::ContainerReport> ContainerManager::stop(const std::string& containerId,
                                                            StopReason reason, bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = containers_.find(containerId);
  if (it == containers_.end()) return std::nullopt;
  if (it->second.state == kRunning) {
    log_.info() << "stopping container " << containerId
                << (reason == StopReason::kAppMaster         ? " on request"
                    : reason == StopReason::kResourceManager ? " for the resource manager"
                                                             : " for shutdown");
    requestStop(it->second, reason);
  }
  if (wait) {
    changed_.wait_for(lock, std::chrono::milliseconds(options_.stopGracePeriod + kKillMargin), [&] {
      auto found = containers_.find(containerId);
      return found == containers_.end() || found->second.state != kRunning;
    });
    it = containers_.find(containerId);
    if (it == containers_.end()) return std::nullopt;
  }
  return reportOf(it->second);
}

void ContainerManager::stopAll() {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  int running = 0;
  for (auto& [id, container] : containers_) {
    if (container.state == kRunning) {
      requestStop(container, StopReason::kShutdown);
      ++running;
    }
  }
  if (running == 0) return;
  log_.info() << "stopping " << running << " container(s)";
  const bool allDone = changed_.wait_for(
      lock, std::chrono::milliseconds(options_.stopGracePeriod + kKillMargin), [&] {
        return std::none_of(containers_.begin(), containers_.end(),
                            [](const auto& entry) { return entry.second.state == kRunning; });
      });
  if (!allDone) log_.error() << "some containers did not end after SIGKILL";
}

void ContainerManager::reapLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t sweepCounter = 0;
  uint64_t treeCounter = 0;
  while (!threadsExit_) {
    const TimeMs nowMs = now();
    for (auto& [id, container] : containers_) {
      if (container.state != kRunning) continue;
      reapIfExited(container);
      if (container.state == kRunning && container.stopReason && !container.killSent &&
          nowMs >= container.killDeadline) {
        log_.info() << "container " << id << " outlived its stop grace period; sending SIGKILL";
        killContainerTree(container);
      }
    }
    if (orphansMayExist_ || ++sweepCounter % 20 == 0) killAdoptedOrphans();
    if (++treeCounter % 5 == 0) rememberAdoptedTrees();
    dropOldCompleted();
    changed_.wait_for(lock, std::chrono::milliseconds(options_.reapInterval));
  }
}

void ContainerManager::reapIfExited(Container& container) {
  if (container.adopted) {
    if (!container.adopted->exited()) return;
    // Its supervisor killed its tree before it exited, unless it was SIGKILLed: then what was
    // below it went to init, not to us, and is found from the last look at its tree.
    killRememberedTree(container);
    std::optional<int> status = records_.readExitStatus(container.request.containerId);
    if (!status && container.killSent) status = W_EXITCODE(0, SIGKILL);
    container.adopted.reset();
    complete(container, status);
    return;
  }
  siginfo_t info{};
  // WNOWAIT leaves the exited leader a zombie, so its pid (the group id) cannot be reused
  // while the rest of its group is killed below.
  if (::waitid(P_PID, static_cast<id_t>(container.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == ECHILD) {
      container.diagnostics = "the node manager lost track of its process";
      complete(container, W_EXITCODE(255, 0));
    }
    return;
  }
  if (info.si_pid != container.pid) return;  // still running
  // A container ends with its supervisor, which took its tree with it; whatever is left in its
  // group goes too, and what a killed supervisor left behind came to us (adoptOrphans).
  signalProcessGroup(container.pid, SIGKILL);
  orphansMayExist_ = true;
  int waitStatus = 0;
  while (::waitpid(container.pid, &waitStatus, 0) < 0 && errno == EINTR) {
  }
  complete(container, waitStatus);
}

void ContainerManager::complete(Container& container, std::optional<int> waitStatus) {
  const ExitDescription exit =
      waitStatus ? describeExit(*waitStatus)
                 : ExitDescription{rest::exit_status::kAborted, "its exit status is unknown"};
  const std::string& id = container.request.containerId;
  if (!container.cgroupPath.empty()) {
    if (container.memoryKillDiagnostics.empty() && CgroupMemory::oomKilled(container.cgroupPath)) {
      container.memoryKillDiagnostics =
          "Container " + id + " is running beyond physical memory limits: " +
          std::to_string(container.request.resource.memoryMb) +
          " MB physical memory allowed; killed by the kernel (cgroup oom_kill)";
    }
    CgroupMemory::remove(container.cgroupPath);
  }
  if (!container.memoryKillDiagnostics.empty()) {
    container.exitStatus = rest::exit_status::kKilledExceededPmem;
    container.diagnostics = container.memoryKillDiagnostics;
  } else if (container.stopReason == StopReason::kAppMaster) {
    container.exitStatus = rest::exit_status::kKilledByAppMaster;
    container.diagnostics = kStoppedOnRequest;
  } else if (container.stopReason == StopReason::kResourceManager) {
    container.exitStatus = exit.exitStatus;
    container.diagnostics = "stopped by the resource manager; " + exit.diagnostics;
  } else if (container.stopReason == StopReason::kShutdown) {
    container.exitStatus = exit.exitStatus;
    container.diagnostics =
        "stopped because the node manager is shutting down; " + exit.diagnostics;
  } else if (container.diagnostics.empty()) {
    container.exitStatus = exit.exitStatus;
    container.diagnostics = exit.diagnostics;
    if (!container.endedWhileNmDown.empty()) {
      container.diagnostics = std::string(kExitedWhileNmDown) + " (" + container.endedWhileNmDown +
                              "): " + exit.diagnostics;
    }
    // A process that failed on its own usually said why on stderr: its last lines go to the
    // RM (and so to whoever follows the application), one summary line then the lines.
    if (exit.exitStatus != 0) {
      const std::string tail = lastLinesOf(container.workDir + "/stderr", kStderrTailLines);
      if (!tail.empty()) container.diagnostics += "\nlast lines of its stderr:\n" + tail;
    }
  } else {
    container.exitStatus = exit.exitStatus;
  }
  container.state = kComplete;
  container.completedAt = now();
  // Kept (with its completion) until the RM has acknowledged it: a restart in between still
  // reports it.
  if (std::string error = records_.write(recordOf(container)); !error.empty()) {
    log_.warn() << "container " << id << ": cannot record its completion: " << error;
  }
  log_.info() << "container " << id << " completed: exit status " << container.exitStatus << ", "
              << container.diagnostics;
  changed_.notify_all();
}

ContainerRecord ContainerManager::recordOf(const Container& container) const {
  ContainerRecord record;
  record.containerId = container.request.containerId;
  record.applicationId = container.request.applicationId;
  record.token = container.request.token;
  record.resource = container.request.resource;
  record.workDir = container.workDir;
  record.cgroupPath = container.cgroupPath;
  record.pid = container.pid;
  record.startTimeTicks = container.startTimeTicks;
  record.bootId = bootId_;
  if (container.state == kComplete) {
    record.completion = ContainerRecord::Completion{container.exitStatus, container.diagnostics};
  }
  return record;
}

void ContainerManager::recoverContainers(std::vector<ContainerRecord> records) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (ContainerRecord& record : records) {
    const RecoveryDecision decision = decideRecovery(record, bootId_, readProcess(record.pid));
    Container container;
    container.request.containerId = record.containerId;
    container.request.applicationId = record.applicationId;
    container.request.token = record.token;
    container.request.resource = record.resource;
    container.pid = record.pid;
    container.startTimeTicks = record.startTimeTicks;
    container.workDir = record.workDir;
    container.cgroupPath = record.cgroupPath;
    container.sequence = nextSequence_++;
    const std::string id = record.containerId;
    auto [it, inserted] = containers_.emplace(id, std::move(container));
    if (!inserted) continue;  // file names are unique, so are ids
    Container& recovered = it->second;
    switch (decision.action) {
      case RecoveryAction::kAdopt:
        recovered.adopted = AdoptedProcess::open(record.pid, record.startTimeTicks);
        if (recovered.adopted) {
          ++recoverySummary_.reattached;
          log_.info() << "re-attached to container " << id << " of " << record.applicationId << ": "
                      << decision.why;
          break;
        }
        // It ended just now: as if it had while the NM was down.
        recovered.endedWhileNmDown = "its supervisor (pid " + std::to_string(record.pid) +
                                     ") ended while it was being re-attached";
        ++recoverySummary_.completed;
        complete(recovered, records_.readExitStatus(id));
        break;
      case RecoveryAction::kReportCompleted:
        recovered.state = kComplete;
        recovered.exitStatus = record.completion->exitStatus;
        recovered.diagnostics = record.completion->diagnostics;
        recovered.completedAt = now();
        ++recoverySummary_.completed;
        log_.info() << "container " << id << " completed before the restart (exit status "
                    << recovered.exitStatus << "); reporting it to the resource manager";
        break;
      case RecoveryAction::kEndedWhileNmDown: {
        recovered.endedWhileNmDown = decision.why;
        ++recoverySummary_.completed;
        // The exit file is only its own while its record is of this boot.
        std::optional<int> status;
        if (record.bootId == bootId_) status = records_.readExitStatus(id);
        complete(recovered, status);
        break;
      }
    }
  }
  rememberAdoptedTrees();
  log_.info() << "recovery: re-attached to " << recoverySummary_.reattached
              << " running container(s); " << recoverySummary_.completed
              << " recorded container(s) reported completed";
}

void ContainerManager::rememberAdoptedTrees() {
  const bool anyAdopted = std::any_of(containers_.begin(), containers_.end(), [](const auto& e) {
    return e.second.state == kRunning && e.second.adopted;
  });
  if (!anyAdopted) return;
  const std::vector<ProcessInfo> table = readProcessTable();
  for (auto& [id, container] : containers_) {
    if (container.state != kRunning || !container.adopted || container.adopted->exited()) continue;
    container.lastTree.clear();
    for (const ProcessInfo& process : descendantsOf(container.pid, table)) {
      container.lastTree.emplace_back(process.pid, process.startTimeTicks);
    }
  }
}

void ContainerManager::killRememberedTree(Container& container) {
  for (const auto& [pid, startTicks] : container.lastTree) {
    const auto info = readProcess(pid);
    if (!info || info->state == 'Z' || info->startTimeTicks != startTicks) continue;
    ::kill(pid, SIGSTOP);
    killDescendants(pid);
    ::kill(pid, SIGKILL);
  }
}

void ContainerManager::dropOldCompleted() {
  std::vector<const Container*> droppable;
  for (const auto& [id, container] : containers_) {
    if (container.state == kComplete && container.reportedToRm) droppable.push_back(&container);
  }
  if (droppable.size() <= options_.completedRetained) return;
  std::sort(droppable.begin(), droppable.end(), [](const Container* a, const Container* b) {
    return a->completedAt != b->completedAt ? a->completedAt < b->completedAt
                                            : a->sequence < b->sequence;
  });
  const size_t excess = droppable.size() - options_.completedRetained;
  std::vector<std::string> ids;
  for (size_t i = 0; i < excess; ++i) ids.push_back(droppable[i]->request.containerId);
  for (const std::string& id : ids) containers_.erase(id);
}

void ContainerManager::monitorMemoryLoop() {
  struct Watched {
    std::string id;
    pid_t pid;
    int64_t limitBytes;
    std::string cgroupPath;
    int64_t usedBytes = 0;
  };
  while (true) {
    std::vector<Watched> watched;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(options_.memoryCheckInterval),
                        [this] { return threadsExit_; });
      if (threadsExit_) return;
      for (const auto& [id, container] : containers_) {
        if (container.state != kRunning) continue;
        watched.push_back(
            {id, container.pid, container.request.resource.memoryMb * kMiB, container.cgroupPath});
      }
    }
    if (watched.empty()) continue;
    // Measured without the lock: a scan of /proc takes a while on a busy host.
    if (enforcement_ == MemoryEnforcement::kWatchdog) {
      // The whole container: its supervisor and every process below it, whatever group or
      // session they moved to.
      const std::vector<ProcessInfo> table = readProcessTable();
      for (Watched& w : watched) w.usedBytes = treeResidentBytes(w.pid, table);
    } else {
      for (Watched& w : watched) w.usedBytes = CgroupMemory::currentBytes(w.cgroupPath);
    }

    std::lock_guard<std::mutex> lock(mutex_);
    for (const Watched& w : watched) {
      auto it = containers_.find(w.id);
      // Only a container still unreaped may be signalled: its pid cannot have been reused.
      if (it == containers_.end() || it->second.state != kRunning || it->second.pid != w.pid) {
        continue;
      }
      Container& container = it->second;
      container.memoryUsedBytes = w.usedBytes;
      if (enforcement_ == MemoryEnforcement::kWatchdog && w.usedBytes > w.limitBytes &&
          container.memoryKillDiagnostics.empty()) {
        // YARN's words, so that people and tools that know them recognise it.
        container.memoryKillDiagnostics =
            "Container " + w.id + " is running beyond physical memory limits. Current usage: " +
            std::to_string(toMiB(w.usedBytes)) + " MB of " +
            std::to_string(container.request.resource.memoryMb) +
            " MB physical memory used (resident set of all its processes); killing container";
        log_.warn() << container.memoryKillDiagnostics;
        killContainerTree(container);
      }
    }
  }
}

rest::ContainerReport ContainerManager::reportOf(const Container& container) const {
  rest::ContainerReport report;
  report.containerId = container.request.containerId;
  report.applicationId = container.request.applicationId;
  report.state = container.state;
  report.exitStatus = container.exitStatus;
  report.diagnostics = container.diagnostics;
  report.pid = container.pid;
  report.resource = container.request.resource;
  report.workDir = container.workDir;
  report.memoryUsedMb = toMiB(container.memoryUsedBytes);
  return report;
}

std::optional<rest::ContainerReport> ContainerManager::report(
    const std::string& containerId) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = containers_.find(containerId);
  if (it == containers_.end()) return std::nullopt;
  return reportOf(it->second);
}

std::vector<rest::ContainerReport> ContainerManager::reports() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<rest::ContainerReport> result;
  for (const Container* container : valuesSortedBy(containers_, &Container::sequence)) {
    result.push_back(reportOf(*container));
  }
  return result;
}

bool ContainerManager::tokenMatches(const std::string& containerId,
                                    const std::string& token) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = containers_.find(containerId);
  return it != containers_.end() && !token.empty() &&
         rest::secretsEqual(it->second.request.token, token);
}

rest::NodeHeartbeat ContainerManager::heartbeat(std::vector<std::string>* completedIds) const {
  rest::NodeHeartbeat heartbeat;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto toReport = [](const Container& container) {
    return container.state == kRunning || !container.reportedToRm;
  };
  for (const Container* container : valuesSortedBy(containers_, &Container::sequence, toReport)) {
    heartbeat.containers.push_back({container->request.containerId, container->state,
                                    container->exitStatus, container->diagnostics,
                                    container->request.resource});
    if (container->state == kComplete && completedIds != nullptr) {
      completedIds->push_back(container->request.containerId);
    }
  }
  return heartbeat;
}

void ContainerManager::markReported(const std::vector<std::string>& completedIds) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& id : completedIds) {
    auto it = containers_.find(id);
    if (it != containers_.end() && it->second.state == kComplete) {
      it->second.reportedToRm = true;
      records_.erase(id);
    }
  }
  dropOldCompleted();
}

rest::Resource ContainerManager::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  rest::Resource total;
  for (const auto& [id, container] : containers_) {
    if (container.state != kRunning) continue;
    total.memoryMb += container.request.resource.memoryMb;
    total.vCores += container.request.resource.vCores;
  }
  return total;
}

bool ContainerManager::waitForCompletion(const std::string& containerId, DurationMs bound) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::milliseconds(bound), [&] {
    auto it = containers_.find(containerId);
    return it != containers_.end() && it->second.state == kComplete;
  });
}

}  // namespace tide::nm
