#pragma once

// The containers of one node: starts each with its own work dir, reaps them, enforces their
// memory, stops them on request, and keeps their reports for the REST API and the heartbeat to
// the resource manager. No HTTP here: NodeManagerServer and NodeStatusUpdater drive it.
//
// Containment: a container's process is a supervisor (tide-container, deploy/nm/
// container_main.cc) leading a new session, a child subreaper that runs the container's command
// below it. Every process the command starts stays below the supervisor however it daemonises,
// and the whole tree goes when the command ends, when the container is stopped (SIGTERM to the
// tree, SIGKILL after the grace period) or when it is over its memory. Where cgroup v2 with the
// memory controller is delegated, the supervisor first joins the container's cgroup, and the
// cgroup is killed (cgroup.kill) when the container ends.
//
// Restarts (nm.recovery.enabled, YARN's NM recovery): every container is recorded on disk
// (container_records.h) and its supervisor does not depend on the node manager's life. A
// manager started on the work dir of one that died re-attaches to the containers still running
// (same pid, start time and boot: never an unrelated process that got a recorded pid), watches,
// enforces and stops them as its own, and reports those that ended meanwhile as completed
// "exited while the node manager was down". With recovery off it kills them instead.
//
// Threads: the caller's (launch/stop/report), a reaper (waitpid on each container, SIGKILL
// after the stop grace period) and, unless enforcement is off, a memory monitor. One mutex
// guards all container state; a process is signalled only while it is still unreaped (its
// pid cannot have been reused then).

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "deploy/nm/cgroup_memory.h"
#include "deploy/nm/container_records.h"
#include "deploy/nm/memory_enforcement.h"
#include "deploy/nm/process_group.h"
#include "rest/messages/node.h"

namespace tide::nm {

struct ContainerManagerOptions {
  std::string workDir;  // containers run in <workDir>/<appId>/<containerId>/
  // Their stdout and stderr (and their tasks', TIDE_LOG_DIR) are kept in
  // <logDir>/<appId>/<containerId>/ (common/app_logs.h), linked from the work dir; empty:
  // <workDir>/logs.
  std::string logDir;
  std::string nmAddress;  // "host:port", given to containers as TIDE_NM_ADDRESS
  // Set in every container's environment (the node's TLS files, rest/tls_settings.h).
  std::vector<std::pair<std::string, std::string>> environment;
  rest::Resource capacity;  // what the node offers; over-commit is logged, not refused
  MemoryEnforcement memoryEnforcement = MemoryEnforcement::kAuto;
  DurationMs stopGracePeriod = 2000;  // SIGTERM, then SIGKILL after this long
  DurationMs reapInterval = 50;
  DurationMs memoryCheckInterval = 250;
  // Completed containers the RM has already seen that GET still lists (newest kept).
  size_t completedRetained = 100;
  std::string cgroupRoot = "/sys/fs/cgroup";
  // The NM's own cgroup below the one it starts in; empty: "tide-nm-<port>" once
  // setNodeAddress() was called, else "tide-nm".
  std::string cgroupName;
  // The container supervisor; empty: tide-container next to this executable.
  std::string supervisorPath;
  // Makes this process a child subreaper too (prctl PR_SET_CHILD_SUBREAPER) and SIGKILLs every
  // child of it that is not a container's supervisor: what a supervisor killed by SIGKILL left
  // behind. Only for a process that starts no other children (tide-nm).
  bool adoptOrphans = false;
  // nm.recovery.enabled: start() re-attaches to the containers recorded by a previous node
  // manager on this work dir; false: it kills them.
  bool recovery = true;
  const Clock* clock = nullptr;  // null: steady clock
};

// A container id that is already known (running or retained).
class ContainerConflictError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class StopReason {
  kAppMaster,        // DELETE through the REST API: exit status -105
  kResourceManager,  // listed in a heartbeat response: keeps the exit it gets
  kShutdown,         // the node manager is stopping
};

class ContainerManager {
 public:
  static constexpr char kRunning[] = "RUNNING";
  static constexpr char kComplete[] = "COMPLETE";
  static constexpr char kStoppedOnRequest[] = "stopped on request";
  // How a recorded container that ended while no node manager ran is reported.
  static constexpr char kExitedWhileNmDown[] = "exited while the node manager was down";

  explicit ContainerManager(ContainerManagerOptions options);
  ~ContainerManager();  // stops every container (as on shutdown) and joins the threads
  ContainerManager(const ContainerManager&) = delete;
  ContainerManager& operator=(const ContainerManager&) = delete;

  // Creates the work dir, re-attaches to the containers a previous NM on it left running (with
  // recovery; without, kills them), picks the memory enforcement and starts the threads. Throws
  // ContainerRecordError for a record it cannot read (with recovery), std::runtime_error when
  // the work dir is unusable or enforcement "cgroup" was asked for but is not available.
  void start();
  // Where the NM serves: containers get "host:port" as TIDE_NM_ADDRESS, and without an explicit
  // cgroupName the NM's cgroup is "tide-nm-<port>" (so several NMs can share a host). Only
  // before start(): an ephemeral port is known only once the server is bound.
  void setNodeAddress(const std::string& host, int port);
  std::string nmAddress() const;

  // Starts a container. The request's token is not checked here (NodeManagerServer does).
  // Throws rest::JsonFieldError for an unusable field (the REST layer answers 400),
  // ContainerConflictError for a known id, std::runtime_error when it cannot be started.
  rest::ContainerReport launch(const rest::ContainerLaunchRequest& request);

  // Asks a running container to stop: SIGTERM to its group now, SIGKILL once the grace period
  // has passed. With `wait`, returns once it completed (bounded by the grace period plus a
  // margin); otherwise at once. nullopt for an unknown id; a completed one is left as is.
  std::optional<rest::ContainerReport> stop(const std::string& containerId, StopReason reason,
                                            bool wait);
  // Stops every running container and waits for all of them (bounded as above).
  void stopAll();

  std::optional<rest::ContainerReport> report(const std::string& containerId) const;
  std::vector<rest::ContainerReport> reports() const;  // in launch order
  // Whether `token` is the one the container was launched with (constant-time comparison).
  bool tokenMatches(const std::string& containerId, const std::string& token) const;

  // What the next heartbeat carries: every running container and every completed one the
  // RM has not yet been told of. `completedIds` lists the completed ones among them, to be
  // passed to markReported() once the RM has answered that heartbeat.
  rest::NodeHeartbeat heartbeat(std::vector<std::string>* completedIds) const;
  void markReported(const std::vector<std::string>& completedIds);

  // The memory enforcement in effect after start() (never kAuto), and why it was chosen.
  MemoryEnforcement memoryEnforcement() const { return enforcement_; }
  const std::string& memoryEnforcementReason() const { return enforcementReason_; }
  // The resources of running containers.
  rest::Resource allocated() const;
  // What start() found of a previous node manager: containers re-attached to, and recorded
  // containers reported completed (ended while it was down, or completed and not yet
  // acknowledged by the RM).
  struct RecoverySummary {
    int reattached = 0;
    int completed = 0;
  };
  RecoverySummary recoverySummary() const { return recoverySummary_; }
  const ContainerManagerOptions& options() const { return options_; }

  // Blocks until the container is COMPLETE or `bound` passes; returns whether it completed.
  bool waitForCompletion(const std::string& containerId, DurationMs bound) const;

 private:
  struct Container {
    rest::ContainerLaunchRequest request;
    pid_t pid = 0;
    uint64_t sequence = 0;
    uint64_t startTimeTicks = 0;  // of the supervisor: with its pid, its identity
    std::string workDir;
    std::string cgroupPath;  // empty unless enforcement is cgroup
    // Re-attached after a restart: a supervisor a previous NM started, not our child.
    std::optional<AdoptedProcess> adopted;
    // Adopted only: its processes (pid, start time) at the last look, so that what a killed
    // supervisor leaves (re-parented to init, not to us) can still be killed.
    std::vector<std::pair<pid_t, uint64_t>> lastTree;
    // Set when it ended while no node manager watched it: why we know.
    std::string endedWhileNmDown;
    std::string state = kRunning;
    int exitStatus = 0;
    std::string diagnostics;
    int64_t memoryUsedBytes = 0;
    std::optional<StopReason> stopReason;
    TimeMs killDeadline = 0;
    bool killSent = false;
    std::string memoryKillDiagnostics;  // set when killed for its memory
    TimeMs completedAt = 0;
    bool reportedToRm = false;
  };

  void reapLoop();
  void monitorMemoryLoop();
  // With adoptOrphans: SIGKILLs and reaps the children of this process that are not a running
  // container's supervisor. Called with mutex_ held.
  void killAdoptedOrphans();
  // SIGKILL to everything below the container's supervisor, then to its group. mutex_ held.
  void killContainerTree(Container& container);
  // Reaps the container's process if it exited; called with mutex_ held.
  void reapIfExited(Container& container);
  // Completes it; nullopt: how it ended is unknown. mutex_ held (or before the threads run).
  void complete(Container& container, std::optional<int> waitStatus);
  // start() with recovery: the records of a previous NM become containers again.
  void recoverContainers(std::vector<ContainerRecord> records);
  // Adopted containers: remembers their trees (lastTree); mutex_ held.
  void rememberAdoptedTrees();
  // SIGKILLs what is left of an adopted container's remembered tree. mutex_ held.
  void killRememberedTree(Container& container);
  // start()'s steps: the work and log dirs; the previous run's records, recovered (returned,
  // with the containers whose cgroups stay) or killed; cgroup or watchdog; the supervisor binary
  // and the child subreaper that adopts orphaned containers.
  void createDirectories();
  std::vector<ContainerRecord> takeOverPreviousRun(std::set<std::string>& keptCgroups);
  void chooseMemoryEnforcement(const std::set<std::string>& keptCgroups);
  void prepareSupervision();
  ContainerRecord recordOf(const Container& container) const;
  // launch()'s steps, with mutex_ held: the work dir and the log dir it links to (returned),
  // the supervisor started in the container's cgroup, a warning when the node is over-committed.
  std::string prepareDirectories(const Container& container) const;
  void spawnSupervisor(Container& container, const std::string& logDir);
  void warnIfOverCommitted(const rest::Resource& launched) const;
  void dropOldCompleted();
  void requestStop(Container& container, StopReason reason);
  std::vector<std::string> containerEnvironment(const rest::ContainerLaunchRequest& request,
                                                const std::string& workDir) const;
  rest::ContainerReport reportOf(const Container& container) const;
  TimeMs now() const { return clock_->nowMs(); }

  ContainerManagerOptions options_;
  SteadyClock steadyClock_;
  const Clock* clock_;
  Logger log_{"nm"};
  ContainerRecords records_;
  std::string bootId_;
  RecoverySummary recoverySummary_;
  MemoryEnforcement enforcement_ = MemoryEnforcement::kOff;
  std::string enforcementReason_;
  std::unique_ptr<CgroupMemory> cgroup_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;  // a container completed, or stopping_ was set
  std::map<std::string, Container> containers_;
  uint64_t nextSequence_ = 1;
  bool started_ = false;
  bool stopping_ = false;         // stopAll() ran: no more launches
  bool threadsExit_ = false;      // the destructor asks the threads to return
  bool orphansMayExist_ = false;  // a supervisor ended since the last orphan sweep
  std::thread reaper_;
  std::thread memoryMonitor_;
};

}  // namespace tide::nm
