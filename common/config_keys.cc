// The one table of configuration keys tide knows: names, kinds, defaults, bare units and help.
// Defaults are Spark's unless a comment says otherwise, so a Spark configuration means the same
// thing here.

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <unordered_map>

#include "common/config.h"
#include "common/enum_names.h"
#include "common/strings.h"

namespace tide {
namespace {

constexpr int64_t kMs = 1;          // bare number in a duration = milliseconds
constexpr int64_t kSeconds = 1000;  // bare number in a duration = seconds
constexpr int64_t kMiB = 1024 * 1024;
// The largest core, failure or rate count a key takes: beyond any real cluster, far within an int.
constexpr int64_t kMaxCount = 1'000'000;
constexpr int64_t kMaxAttempts = 1000;
constexpr int64_t kMaxPort = 65535;

KeyInfo key(std::string name, ValueKind kind, std::string defaultValue, std::string help,
            int64_t bareUnit = 1, std::vector<std::string> choices = {}) {
  KeyInfo info;
  info.name = std::move(name);
  info.kind = kind;
  info.defaultValue = std::move(defaultValue);
  info.bareUnit = bareUnit;
  info.help = std::move(help);
  info.choices = std::move(choices);
  return info;
}

// Dynamic allocation (Spark's ExecutorAllocationManager).
std::vector<KeyInfo> dynamicAllocationKeys() {
  using K = ValueKind;
  return {
      key("dynamicAllocation.enabled", K::kBool, "true",  // tide default; Spark's is false
          "Grow and shrink the executor set with the work (false: fixed executor.instances)"),
      key("dynamicAllocation.minExecutors", K::kInt, "0", "Lower bound on the number of executors"),
      key("dynamicAllocation.initialExecutors", K::kInt, "",
          "Executors requested at start (default: max(minExecutors, executor.instances))"),
      key("dynamicAllocation.maxExecutors", K::kInt, "2147483647",
          "Upper bound on the number of executors"),
      key("dynamicAllocation.executorAllocationRatio", K::kDouble, "1.0",
          "Fraction of the full parallelism to request executors for (0-1]"),
      key("dynamicAllocation.schedulerBacklogTimeout", K::kDuration, "1s",
          "Backlog age after which more executors are requested", kSeconds)
          .positive(),
      key("dynamicAllocation.sustainedSchedulerBacklogTimeout", K::kDuration, "",
          "Interval between further requests while the backlog lasts (default: "
          "schedulerBacklogTimeout)",
          kSeconds)
          .positive(),
      key("dynamicAllocation.executorIdleTimeout", K::kDuration, "60s",
          "Idle time after which an executor is removed", kSeconds),
      key("dynamicAllocation.cachedExecutorIdleTimeout", K::kDuration, "infinity",
          "Idle time after which an executor holding cached blocks is removed", kSeconds),
      key("dynamicAllocation.shuffleTracking.enabled", K::kBool, "true",
          "Keep executors that hold shuffle output of an active job (required with dynamic "
          "allocation: tide has no external shuffle service)"),
      key("dynamicAllocation.shuffleTracking.timeout", K::kDuration, "infinity",
          "Longest that shuffle output whose job has ended keeps an idle executor", kMs),
      key("dynamicAllocation.interval", K::kDuration, "100ms",
          "Period of the allocation loop",  // tide name; Spark hard-codes 100 ms
          kMs)
          .positive(),
      // tide's own: the policy that sizes the executor set.
      key("dynamicAllocation.policy", K::kString, "spark",
          "Allocation policy: spark (Spark's ExecutorAllocationManager) or adaptive (sized from "
          "the estimated work, see dynamicAllocation.adaptive.*)",
          1, {"spark", "adaptive"}),
      key("dynamicAllocation.adaptive.targetBacklogDuration", K::kDuration, "5s",
          "Adaptive policy: ask for the executors that finish the pending and running work "
          "within this time",
          kSeconds),
  };
}

// Executors and tasks.
std::vector<KeyInfo> executorKeys() {
  using K = ValueKind;
  return {
      key("executor.instances", K::kInt, "",
          "Executors to run when dynamic allocation is off (default 2 then, as in Spark; also "
          "raises initialExecutors)"),
      key("executor.cores", K::kInt, "1", "Cores per executor").within(1, kMaxCount),
      key("executor.memory", K::kSize, "1g", "Memory per executor", kMiB),
      key("executor.maxNumFailures", K::kInt, "",
          "Executor failures caused by the application (memory kills, non-zero exits) at which it "
          "fails (default: max(2*maxExecutors, 3))"),
      key("executor.failuresValidityInterval", K::kDuration, "",
          "Age after which an executor failure no longer counts (default: never)", kMs),
      key("task.cpus", K::kInt, "1", "Cores each task needs").within(1, kMaxCount),
      key("task.maxFailures", K::kInt, "4", "Failures of one task before its job fails")
          .within(1, kMaxCount),
  };
}

// Task scheduling.
std::vector<KeyInfo> schedulingKeys() {
  using K = ValueKind;
  return {
      key("locality.wait", K::kDuration, "3s",
          "Delay before a task falls back to a less local executor", kMs),
      key("locality.wait.process", K::kDuration, "",
          "Wait at PROCESS_LOCAL (default: locality.wait)", kMs),
      key("locality.wait.node", K::kDuration, "", "Wait at NODE_LOCAL (default: locality.wait)",
          kMs),
      key("locality.wait.rack", K::kDuration, "", "Wait at RACK_LOCAL (default: locality.wait)",
          kMs),
      key("scheduler.mode", K::kString, "FIFO", "Scheduling between jobs: FIFO or FAIR", 1,
          {"FIFO", "FAIR"}),
      key("scheduler.allocation.file", K::kString, "",
          "FAIR pools (weight, minShare, schedulingMode): a fairscheduler.xml or properties file"),
      // tide's own: Spark does not pipeline (0 here is Spark's behaviour).
      key("scheduler.queuedTasksPerExecutor", K::kInt, "32",
          "Tasks an executor is handed beyond its free slots, to start as soon as a slot frees "
          "(short tasks only, see scheduler.queuedTaskWait); 0: none, as in Spark")
          .within(0, 10000),
      key("scheduler.queuedTaskWait", K::kDuration, "50ms",
          "Longest a queued task should wait for a slot: stages are queued only when their mean "
          "task duration drains the queue within it, and a queued task waiting longer is handed "
          "back to run elsewhere",
          kMs)
          .positive(),
      key("speculation", K::kBool, "false", "Re-launch slow tasks speculatively"),
      key("speculation.quantile", K::kDouble, "0.9",
          "Fraction of a stage's tasks that must finish before speculating"),
      key("speculation.multiplier", K::kDouble, "3",
          "How many times slower than the median a task must be to be speculated"),
      key("speculation.minTaskRuntime", K::kDuration, "100ms",
          "Shortest a task runs before it may be speculated", kMs),
      key("speculation.task.duration.threshold", K::kDuration, "",
          "Before the quantile is reached, speculate tasks running longer than this in a stage "
          "with no more tasks than one executor has slots (default: unset)",
          kMs),
      key("speculation.interval", K::kDuration, "100ms", "How often to look for slow tasks", kMs),
      key("excludeOnFailure.enabled", K::kBool, "false",
          "Stop scheduling on executors and nodes where tasks keep failing"),
      key("excludeOnFailure.timeout", K::kDuration, "1h",
          "How long an executor or node stays excluded for the application", kMs)
          .positive(),
      key("excludeOnFailure.task.maxTaskAttemptsPerExecutor", K::kInt, "1",
          "Failures of one task on an executor before that task is not offered it again")
          .within(1, kMaxCount),
      key("excludeOnFailure.task.maxTaskAttemptsPerNode", K::kInt, "2",
          "Failures of one task on a node before that task is not offered the node again")
          .within(1, kMaxCount),
      key("excludeOnFailure.stage.maxFailedTasksPerExecutor", K::kInt, "2",
          "Different tasks of a stage failing on an executor before it is excluded for the stage")
          .within(1, kMaxCount),
      key("excludeOnFailure.stage.maxFailedExecutorsPerNode", K::kInt, "2",
          "Executors of a node excluded for a stage before the node is excluded for the stage")
          .within(1, kMaxCount),
      key("excludeOnFailure.application.maxFailedTasksPerExecutor", K::kInt, "2",
          "Failed tasks of successful stages on an executor before it is excluded for the "
          "application (for excludeOnFailure.timeout)")
          .within(1, kMaxCount),
      key("excludeOnFailure.application.maxFailedExecutorsPerNode", K::kInt, "2",
          "Executors of a node excluded for the application before the node is excluded too")
          .within(1, kMaxCount),
      key("excludeOnFailure.unschedulableTaskSetTimeout", K::kDuration, "120s",
          "How long a stage every executor is excluded for waits for a new executor before its "
          "job fails (without dynamic allocation it fails at once)",
          kMs),
      key("excludeOnFailure.killExcludedExecutors", K::kBool, "false",
          "Release executors (and a node's executors) once excluded for the application"),
      key("excludeOnFailure.application.fetchFailure.enabled", K::kBool, "false",
          "Exclude an executor for the application (for excludeOnFailure.timeout) as soon as a "
          "task cannot fetch the blocks it holds (with excludeOnFailure.enabled)"),
  };
}

// Graceful decommissioning (Spark's DECOMMISSION_ENABLED and STORAGE_DECOMMISSION_*).
std::vector<KeyInfo> decommissionKeys() {
  using K = ValueKind;
  return {
      key("decommission.enabled", K::kBool, "false",
          "Executors the allocation policy lets go are decommissioned: they stop taking tasks, "
          "migrate their blocks (storage.decommission.*), then exit; with shuffle block "
          "migration, shuffle data of a running job no longer needs shuffle tracking"),
      key("storage.decommission.enabled", K::kBool, "false",
          "A decommissioning executor's blocks are migrated to other executors before it exits"),
      key("storage.decommission.shuffleBlocks.enabled", K::kBool, "true",
          "Migrate shuffle output (task outputs a later stage reads) when decommissioning"),
      key("storage.decommission.rddBlocks.enabled", K::kBool, "true",
          "Migrate cached (persisted) blocks when decommissioning"),
      key("storage.decommission.maxReplicationFailuresPerBlock", K::kInt, "3",
          "Failed migrations of one task output (to different peers) before it is left to "
          "lineage")
          .within(1, kMaxCount),
      key("storage.decommission.fallbackStorage.path", K::kString, "",
          "Absolute directory (shared by the AM and the executors) where a decommissioning "
          "executor's shuffle blocks go when no peer takes them; readers fetch them there"),
      key("storage.decommission.fallbackStorage.cleanUp", K::kBool, "false",
          "Delete the application's fallback storage directory when the AM stops"),
      // tide default: Spark's is unset (never forced), and nothing in tide waits forever.
      key("executor.decommission.forceKillTimeout", K::kDuration, "120s",
          "Longest a decommissioning executor migrates before it is released anyway (its "
          "unmigrated outputs are then made again from lineage)",
          kMs)
          .positive(),
  };
}

// Application master.
std::vector<KeyInfo> applicationMasterKeys() {
  using K = ValueKind;
  return {
      key("am.heartbeatInterval", K::kDuration, "3s",
          "Interval between AM heartbeats to the resource manager", kMs)
          .positive(),
      key("am.initialAllocationInterval", K::kDuration, "200ms",
          "Heartbeat interval while container requests are pending", kMs)
          .positive(),
      key("am.maxAttempts", K::kInt, "",
          "Attempts to run the AM (default: the resource manager's rm.maxAppAttempts)")
          .within(1, kMaxAttempts),
      key("am.memory", K::kSize, "512m", "Memory of the AM's container", kMiB),
      key("am.cores", K::kInt, "1", "Cores of the AM's container").within(1, kMaxCount),
      key("am.host", K::kString, "127.0.0.1",
          "Address the AM serves its status port on and executors reach it at"),
      key("am.stagingDir", K::kString, "",
          "Where the AM keeps each application's recovery journal (<dir>/<application id>/), "
          "read by its next attempt and by executors looking for it; 'none' to keep nothing "
          "(an AM restart then starts over). Default: $HOME/.tide/staging"),
      key("am.journalCompactionSize", K::kSize, "64m",
          "Size past which the recovery journal (two records per task) is rewritten into a few "
          "records per stage, on a thread of its own, while the AM goes on; 0: never",
          kMiB),
      key("history.dir", K::kString, "",
          "Where the AM writes its event log (<dir>/<application id>.jsonl), which `tide "
          "history` and `tide status APP` read once the application has ended; 'none' to write "
          "none. Default: $HOME/.tide/history"),
      key("history.address", K::kString, "",
          "The address of `tide history` (http(s)://HOST:PORT); when set, the application's "
          "tracking URL at the resource manager becomes <address>/history/<application id> "
          "once it has ended"),
      key("am.executorSyncWait", K::kDuration, "1s",
          "Longest an executor's sync waits at the AM for work (its heartbeat interval)", kMs)
          .positive(),
      key("am.keepAlive", K::kDuration, "0",
          "How long the AM stays up after its job has ended, executors idling away meanwhile, "
          "before it ends with the job's status (0: at once; `tide run --keep-alive`)",
          kMs),
      key("am.resourceManager", K::kString, "tide",
          "Where executors come from: tide (tide-rm) or slurm"),
      key("network.timeout", K::kDuration, "120s", "Default timeout for network interactions",
          kSeconds)
          .positive(),
      key("ui.port", K::kInt, "4040", "Port of the AM's status server (0: any free port)")
          .within(0, kMaxPort),
      key("port.maxRetries", K::kInt, "16",
          "When ui.port is taken, how many of the next ports the AM tries (as Spark)")
          .within(0, 1000),
      key("ui.maxRequestsPerSecond", K::kInt, "1000",
          "Requests per second the AM's status port answers at most; more wait their turn "
          "(0: no limit)")
          .within(0, kMaxCount),
      key("ui.auth", K::kString, "writes",
          "What of the AM's status port needs the application's control token: writes (every "
          "request that changes something) or all (reads and /metrics too)",
          1, {"writes", "all"}),
      key("log.level", K::kString, "info", "Log level: trace, debug, info, warn or error", 1,
          {"trace", "debug", "info", "warn", "error"}),
      key("log.format", K::kString, "text", "Log format: text or json (one object per line)", 1,
          {"text", "json"}),
  };
}

// Built-in resource manager (tide-rm).
std::vector<KeyInfo> resourceManagerKeys() {
  using K = ValueKind;
  return {
      key("rm.host", K::kString, "127.0.0.1", "Address tide-rm listens on"),
      key("rm.port", K::kInt, "8088", "Port tide-rm listens on").within(0, kMaxPort),
      key("rm.spreadOut", K::kBool, "true",
          "Spread executors over nodes (false: pack them onto as few nodes as possible)"),
      key("rm.nodeExpiry", K::kDuration, "10s",
          "Time without heartbeat after which a node is considered lost", kMs)
          .positive(),
      key("rm.amLivenessExpiry", K::kDuration, "60s",
          "Time without heartbeat after which an AM is considered lost", kMs)
          .positive(),
      key("rm.maxAppAttempts", K::kInt, "2", "Attempts to run an application's AM")
          .within(1, kMaxAttempts),
      key("rm.authentication", K::kString, "secret",
          "How tide-rm authenticates callers: secret (tokens derived from rm.secretFile) or none "
          "(anyone who can connect may do anything: a closed test network only)",
          1, {"secret", "none"}),
      key("rm.secretFile", K::kString, "",
          "The cluster secret (mode 0600; created by tide-rm when missing); tide-nm and the tide "
          "commands derive their credentials from it (default: ~/.tide/rm.secret)"),
      key("rm.tokenFile", K::kString, "",
          "A file holding the token the tide commands send to tide-rm (instead of "
          "TIDE_RM_TOKEN or the secret file)"),
      key("rm.maxAmShare", K::kDouble, "0.5",
          "Share of the cluster's memory and vCores AM containers may hold at most; further "
          "applications wait ACCEPTED (one AM may always run)"),
      key("rm.maxCompletedApplications", K::kInt, "1000",
          "Finished applications kept for reports (the oldest go first)")
          .within(0, kMaxCount),
      key("rm.stateStore.dir", K::kString, "",
          "Where tide-rm keeps its applications, attempts and ids across restarts (none: "
          "nowhere; default: rm-state next to rm.secretFile, none with rm.port=0)"),
  };
}

// Node manager (tide-nm).
std::vector<KeyInfo> nodeManagerKeys() {
  using K = ValueKind;
  return {
      key("nm.rm", K::kString, "http://127.0.0.1:8088", "URL of the resource manager"),
      key("nm.host", K::kString, "127.0.0.1", "Address tide-nm listens on and advertises"),
      key("nm.port", K::kInt, "8042", "Port tide-nm listens on").within(0, kMaxPort),
      key("nm.cores", K::kInt, "", "Cores offered to containers (default: detected)")
          .within(1, kMaxCount),
      key("nm.memory", K::kSize, "", "Memory offered to containers (default: detected)", kMiB),
      key("nm.workDir", K::kString, "", "Directory for container working directories"),
      key("nm.logDir", K::kString, "",
          "Where the stdout and stderr of every container and task are kept after the "
          "application ends, as <logDir>/<appId>/<containerId>/ (default: <nm.workDir>/logs)"),
      key("nm.logRetention", K::kDuration, "7d",
          "How long an application's log directory is kept after its last change; tide-nm "
          "deletes older ones at start and every hour",
          kMs)
          .positive(),
      key("nm.memoryEnforcement", K::kString, "auto",
          "How container memory is enforced: auto (cgroup v2 when usable, else watchdog), "
          "cgroup, watchdog or off",
          1, {"auto", "cgroup", "watchdog", "off"}),
      key("nm.stopGracePeriod", K::kDuration, "2s",
          "Time between SIGTERM and SIGKILL when a container is stopped", kMs),
      key("nm.heartbeatInterval", K::kDuration, "1s",
          "Interval between node heartbeats to the resource manager", kMs)
          .positive(),
      key("nm.recovery.enabled", K::kBool, "true",
          "A restarted tide-nm re-attaches to the containers still running from its work dir's "
          "records (false: it kills them)"),
  };
}

// TLS (rest/tls_settings.h): every tide server and client, cluster-wide.
std::vector<KeyInfo> tlsKeys() {
  using K = ValueKind;
  return {
      key("tls.certFile", K::kString, "",
          "PEM certificate (chain) this process serves HTTPS with, on every port it opens; with "
          "it, tide servers found by host:port are called over https:// (default: plain HTTP)"),
      key("tls.keyFile", K::kString, "", "PEM private key of tls.certFile (unencrypted)"),
      key("tls.caFile", K::kString, "",
          "PEM CA certificate(s) every tide client verifies servers against (default: the "
          "system's CAs)"),
  };
}

// Slurm backend (through slurmrestd).
std::vector<KeyInfo> slurmKeys() {
  using K = ValueKind;
  return {
      key("slurm.url", K::kString, "http://127.0.0.1:6820", "URL of slurmrestd"),
      key("slurm.apiVersion", K::kString, "v0.0.38", "slurmrestd OpenAPI version in the path"),
      key("slurm.partition", K::kString, "", "Partition to submit executor jobs to"),
      key("slurm.account", K::kString, "", "Account to charge executor jobs to"),
      key("slurm.qos", K::kString, "", "Quality of service for executor jobs"),
      key("slurm.timeLimit", K::kString, "", "Time limit of each executor job (Slurm syntax)"),
      key("slurm.jobNamePrefix", K::kString, "tide", "Prefix of executor job names"),
      key("slurm.user", K::kString, "", "User name sent to slurmrestd (default: current user)"),
      key("slurm.tokenFile", K::kString, "",
          "File holding the JWT for slurmrestd (default: $SLURM_JWT)"),
      key("slurm.workDir", K::kString, "",
          "Executor jobs' working directory and logs; must exist on the compute nodes "
          "(default: /tmp/tide-slurm-<appId>)"),
  };
}

// The sections, in the order the table lists its keys.
std::vector<KeyInfo> buildKeyTable() {
  std::vector<KeyInfo> table;
  for (auto section :
       {&dynamicAllocationKeys, &executorKeys, &schedulingKeys, &decommissionKeys,
        &applicationMasterKeys, &resourceManagerKeys, &nodeManagerKeys, &tlsKeys, &slurmKeys}) {
    std::vector<KeyInfo> keys = section();
    table.insert(table.end(), std::make_move_iterator(keys.begin()),
                 std::make_move_iterator(keys.end()));
  }
  return table;
}

}  // namespace

const std::vector<KeyInfo>& knownKeys() {
  static const std::vector<KeyInfo> table = buildKeyTable();
  return table;
}

const KeyInfo* findKey(std::string_view name) {
  static const std::unordered_map<std::string_view, const KeyInfo*> byName = [] {
    std::unordered_map<std::string_view, const KeyInfo*> index;
    for (const KeyInfo& info : knownKeys()) index.emplace(info.name, &info);
    return index;
  }();
  constexpr std::string_view kSparkPrefix = "spark.";
  if (auto it = byName.find(name); it != byName.end()) return it->second;
  if (startsWith(name, kSparkPrefix)) {
    if (auto it = byName.find(name.substr(kSparkPrefix.size())); it != byName.end()) {
      return it->second;
    }
  }
  return nullptr;
}

std::string canonicalKey(std::string_view name) {
  if (const KeyInfo* info = findKey(name)) return info->name;
  return std::string(name);
}

std::string_view kindName(ValueKind kind) {
  static constexpr const char* kNames[] = {"string", "boolean",  "integer",
                                           "number", "duration", "size"};
  return enumName(kind, kNames, "value");
}

std::string formatKeyTable(const std::vector<std::string>& prefixes) {
  std::ostringstream out;
  for (const KeyInfo& info : knownKeys()) {
    const bool selected =
        prefixes.empty() || std::any_of(prefixes.begin(), prefixes.end(),
                                        [&](const auto& p) { return startsWith(info.name, p); });
    if (!selected) continue;
    out << "  " << info.name;
    if (info.defaultValue.empty()) {
      out << " (no default)";
    } else {
      out << " = " << info.defaultValue;
    }
    out << "  [" << kindName(info.kind);
    if (info.kind == ValueKind::kInt &&
        (info.minValue != 0 || info.maxValue != KeyInfo::kMaxIntValue)) {
      out << " " << info.minValue << " to " << info.maxValue;
    } else if (info.kind == ValueKind::kDuration && info.minValue == 1) {
      out << " > 0";
    }
    if (info.kind == ValueKind::kDuration) {
      out << "; bare number: " << (info.bareUnit == kSeconds ? "seconds" : "milliseconds");
    } else if (info.kind == ValueKind::kSize && info.bareUnit == kMiB) {
      out << "; bare number: MiB";
    }
    out << "]\n      " << info.help << "\n";
  }
  return out.str();
}

}  // namespace tide
