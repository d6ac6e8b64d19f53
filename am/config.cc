#include "am/config.h"

#include <unistd.h>

#include <cstdlib>

#include "am/control_auth.h"
#include "common/config.h"

namespace tide::am {

std::string directoryOf(const Properties& props, const std::string& key, const std::string& name) {
  const std::string dir = props.getOptionalString(key).value_or("");
  if (dir == "none") return "";
  if (dir.empty()) {
    const char* home = std::getenv("HOME");
    return home != nullptr && *home == '/' ? std::string(home) + "/.tide/" + name
                                           : "/tmp/tide-" + name + "-" + std::to_string(::getuid());
  }
  if (dir.front() != '/') {
    throw ConfigError(props.describe(key) + ": expected an absolute path or 'none'");
  }
  return dir;
}

std::string historyDirOf(const Properties& props) {
  return directoryOf(props, "history.dir", "history");
}

AmConfig AmConfig::fromProperties(const Properties& props, std::vector<std::string>* warnings) {
  AmConfig config;
  config.allocation = allocation::AllocationConfig::fromProperties(props, warnings);
  config.scheduler = SchedulerConfig::fromProperties(props);
  config.decommission = DecommissionConfig::fromProperties(props);
  config.host = props.getString("am.host");
  // The key table bounds every integer and refuses zero durations where they make no sense.
  config.uiPort = static_cast<int>(props.getInt("ui.port"));
  config.portMaxRetries = static_cast<int>(props.getInt("port.maxRetries"));
  config.uiMaxRequestsPerSecond = static_cast<int>(props.getInt("ui.maxRequestsPerSecond"));
  config.uiAuth = uiAuthFromProperties(props);
  config.heartbeatInterval = props.getDuration("am.heartbeatInterval");
  config.initialAllocationInterval = props.getDuration("am.initialAllocationInterval");
  config.networkTimeout = props.getDuration("network.timeout");
  config.executorSyncWait = props.getDuration("am.executorSyncWait");
  config.keepAlive = props.getDuration("am.keepAlive");

  config.stagingDir = directoryOf(props, "am.stagingDir", "staging");
  const int64_t compaction = props.getSizeBytes("am.journalCompactionSize");
  if (compaction != 0 && compaction < (1 << 20)) {
    throw ConfigError(props.describe("am.journalCompactionSize") +
                      ": expected 0 (never compact) or at least 1m");
  }
  config.journalCompactionBytes = static_cast<uint64_t>(compaction);
  config.historyDir = historyDirOf(props);
  if (const std::string address = props.getOptionalString("history.address").value_or("");
      !address.empty() && address.rfind("http://", 0) != 0 && address.rfind("https://", 0) != 0) {
    throw ConfigError(props.describe("history.address") +
                      ": expected the address of `tide history`, http(s)://HOST:PORT");
  }

  const int64_t memoryMb = props.getSizeBytes("executor.memory") / (1024 * 1024);
  if (memoryMb < 1) throw ConfigError(props.describe("executor.memory") + ": at least 1m");
  config.containers.executorResource = {memoryMb, config.allocation.executorCores};
  const int maxExecutors = config.allocation.enabled ? config.allocation.bounds.maxExecutors
                                                     : config.allocation.executorInstances;
  config.containers.maxNumExecutorFailures =
      props.has("executor.maxNumFailures")
          ? static_cast<int>(props.getInt("executor.maxNumFailures"))
          : defaultMaxNumExecutorFailures(maxExecutors);
  config.containers.failuresValidityInterval =
      props.has("executor.failuresValidityInterval")
          ? props.getDuration("executor.failuresValidityInterval")
          : kInfiniteMs;

  config.tls = rest::TlsSettings::fromProperties(props, rest::TlsSettings::processEnvironment());

  config.executorConf = {
      {"executor.cores", std::to_string(config.allocation.executorCores)},
      {"task.cpus", std::to_string(config.allocation.taskCpus)},
      {"network.timeout", std::to_string(config.networkTimeout) + "ms"},
      {"log.level", props.getString("log.level")},
      {"log.format", props.getString("log.format")},
  };
  // TLS files given to the AM itself go to its executors too (on Slurm their only source);
  // otherwise executors take their own node manager's, as the AM did.
  for (const auto& [key, path] : config.tls.conf()) {
    if (props.has(key)) config.executorConf.emplace_back(key, path);
  }
  return config;
}

}  // namespace tide::am
