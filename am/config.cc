#include "am/config.h"

#include <unistd.h>

#include <cstdlib>

#include "am/control_auth.h"
#include "common/config.h"

namespace tide::am {

AmConfig AmConfig::fromProperties(const Properties& props, std::vector<std::string>* warnings) {
  AmConfig config;
  config.allocation = allocation::AllocationConfig::fromProperties(props, warnings);
  config.scheduler = SchedulerConfig::fromProperties(props);
  config.host = props.getString("am.host");
  const int64_t port = props.getInt("ui.port");
  if (port < 0 || port > 65535) throw ConfigError(props.describe("ui.port") + ": not a port");
  config.uiPort = static_cast<int>(port);
  const int64_t retries = props.getInt("port.maxRetries");
  if (retries < 0 || retries > 1000) {
    throw ConfigError(props.describe("port.maxRetries") + ": expected 0 to 1000");
  }
  config.portMaxRetries = static_cast<int>(retries);
  const int64_t rate = props.getInt("ui.maxRequestsPerSecond");
  if (rate < 0 || rate > 1000000) {
    throw ConfigError(props.describe("ui.maxRequestsPerSecond") +
                      ": expected 0 (no limit) to 1000000");
  }
  config.uiMaxRequestsPerSecond = static_cast<int>(rate);
  config.uiAuth = uiAuthFromProperties(props);
  config.heartbeatInterval = props.getDuration("am.heartbeatInterval");
  config.initialAllocationInterval = props.getDuration("am.initialAllocationInterval");
  config.networkTimeout = props.getDuration("network.timeout");
  config.executorSyncWait = props.getDuration("am.executorSyncWait");
  config.keepAlive = props.getDuration("am.keepAlive");
  if (config.keepAlive < 0) throw ConfigError(props.describe("am.keepAlive") + ": must be >= 0");
  for (const char* key : {"am.heartbeatInterval", "am.initialAllocationInterval", "network.timeout",
                          "am.executorSyncWait"}) {
    if (props.getDuration(key) <= 0) throw ConfigError(props.describe(key) + ": must be positive");
  }

  config.stagingDir = props.getOptionalString("am.stagingDir").value_or("");
  if (config.stagingDir == "none") {
    config.stagingDir.clear();
  } else if (config.stagingDir.empty()) {
    const char* home = std::getenv("HOME");
    config.stagingDir = home != nullptr && *home == '/'
                            ? std::string(home) + "/.tide/staging"
                            : "/tmp/tide-staging-" + std::to_string(::getuid());
  } else if (config.stagingDir.front() != '/') {
    throw ConfigError(props.describe("am.stagingDir") + ": expected an absolute path or 'none'");
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
