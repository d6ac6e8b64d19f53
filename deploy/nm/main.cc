// tide-nm: the node manager. Serves the container API, registers with tide-rm and heartbeats
// until SIGTERM/SIGINT, then stops its containers and exits 0.

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "common/command_line.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "deploy/nm/container_manager.h"
#include "deploy/nm/log_retention.h"
#include "deploy/nm/nm_config.h"
#include "deploy/nm/node_identity.h"
#include "deploy/nm/node_manager_server.h"
#include "deploy/nm/node_status_updater.h"
#include "rest/messages/credentials.h"
#include "rest/tls_settings.h"

namespace {

using namespace tide;
using namespace tide::nm;

void warnUnknownKeysExceptOurs(const Properties& properties) {
  Logger log("config");
  for (const std::string& warning : properties.unknownKeyWarnings()) {
    // Our own keys that common's table does not list yet are not typos.
    if (warning.find(std::string("'") + kMemoryEnforcementKey + "'") != std::string::npos ||
        warning.find(std::string("'") + kStopGracePeriodKey + "'") != std::string::npos) {
      continue;
    }
    log.warn() << warning;
  }
}

// What the NM's configuration means for its container manager.
ContainerManagerOptions containerManagerOptionsOf(const NodeManagerConfig& config,
                                                  const rest::TlsSettings& tls) {
  ContainerManagerOptions options;
  options.workDir = config.workDir;
  // Absolute: containers are given it (TIDE_LOG_DIR) and run elsewhere.
  options.logDir =
      std::filesystem::absolute(config.logDir.empty() ? config.workDir + "/logs" : config.logDir)
          .lexically_normal()
          .string();
  options.capacity = config.capability;
  options.memoryEnforcement = config.memoryEnforcement;
  options.stopGracePeriod = config.stopGracePeriod;
  // tide-nm starts nothing but container supervisors: any other child of it is what a killed
  // supervisor left behind.
  options.adoptOrphans = true;
  options.recovery = config.recoveryEnabled;
  // The AM and executors in this node's containers serve and call with the node's TLS files.
  options.environment = tls.containerEnvironment();
  return options;
}

rest::HttpServerOptions serverOptionsOf(const NodeManagerConfig& config,
                                        const rest::TlsSettings& tls, const Logger& log) {
  rest::HttpServerOptions options;
  options.bindAddress = config.host;
  options.port = config.port;
  // HttpServer::stop() waits for idle kept-alive connections to time out; a short timeout
  // keeps shutdown (SIGTERM) prompt, and callers of the NM reconnect cheaply.
  options.keepAliveTimeout = std::chrono::seconds(1);
  options.log = [log](const std::string& line) { log.warn() << line; };
  tls.applyTo(options);
  return options;
}

// Starts the container manager, which first recovers the containers a previous tide-nm left.
void startContainers(ContainerManager& containers) {
  try {
    containers.start();
  } catch (const ContainerRecordError& e) {
    throw std::runtime_error(std::string(e.what()) +
                             "; to start without recovering those containers, use --conf "
                             "nm.recovery.enabled=false (it kills what the readable records name "
                             "and removes every record)");
  }
}

// Logs of applications with no running container here age out after nm.log.retention.
LogRetentionOptions logRetentionOptionsOf(const NodeManagerConfig& config,
                                          const ContainerManager& containers) {
  LogRetentionOptions options;
  options.logDir = containers.options().logDir;
  options.retention = config.logRetention;
  options.activeApplications = [&containers] {
    std::set<std::string> running;
    for (const rest::ContainerReport& report : containers.reports()) {
      if (report.state == ContainerManager::kRunning) running.insert(report.applicationId);
    }
    return running;
  };
  return options;
}

void logStarted(const Logger& log, const NodeManagerConfig& config,
                const ContainerManager& containers, const std::string& address) {
  log.info() << "memory enforcement: " << memoryEnforcementName(containers.memoryEnforcement())
             << " (" << containers.memoryEnforcementReason() << ")";
  if (config.recoveryEnabled) {
    const ContainerManager::RecoverySummary recovered = containers.recoverySummary();
    if (recovered.reattached + recovered.completed > 0) {
      log.info() << "recovered from a previous tide-nm on " << config.workDir << ": "
                 << recovered.reattached << " running container(s) re-attached, "
                 << recovered.completed << " reported completed";
    }
  }
  log.info() << "offering " << config.capability.memoryMb << " MiB and " << config.capability.vCores
             << " vCores; work dir " << config.workDir << "; logs kept in "
             << containers.options().logDir << " for " << formatDuration(config.logRetention);
  log.info() << "tide-nm listening on " << address;
}

// How the node registers and heartbeats. tide-rm writes its cluster secret file on its first
// start: a node started before it has no credential yet (or an unreadable file). It registers
// without one, and every refusal (401) reads the file again, with growing delays, logging what
// it waits for.
NodeStatusUpdaterOptions updaterOptionsOf(const NodeManagerConfig& config,
                                          const rest::TlsSettings& tls, int port,
                                          const Properties& properties, const Logger& log) {
  NodeStatusUpdaterOptions options;
  options.rmUrl = config.rmUrl;
  options.caFile = tls.caFile;
  options.host = config.host;
  options.port = port;
  options.capability = config.capability;
  options.heartbeatInterval = config.heartbeatInterval;
  options.defaultHeartbeatInterval = config.defaultHeartbeatInterval;
  const std::string tokenFile =
      properties.has("rm.tokenFile") ? properties.getString("rm.tokenFile") : "";
  options.credentialSource =
      tokenFile.empty()
          ? "the cluster secret file " + rest::clusterSecretFile(properties) + " (rm.secretFile)"
          : "the node credential file " + tokenFile + " (rm.tokenFile)";
  options.reloadCredential = [&properties] { return rest::rmNodeCredential(properties); };
  std::optional<std::string> credential;
  std::string unreadable;
  try {
    credential = rest::rmNodeCredential(properties);
  } catch (const ConfigError& e) {
    unreadable = e.what();
  }
  if (credential) {
    options.registrationCredential = *credential;
  } else {
    log.warn() << "no credential for the resource manager yet"
               << (unreadable.empty() ? "" : " (" + unreadable + ")") << ": waiting for "
               << options.credentialSource
               << ", read again whenever the resource manager refuses this node (a tide-rm run "
                  "with rm.authentication=none needs none)";
  }
  return options;
}

int run(CommandLine& cli) {
  initLogging(cli.properties());
  warnUnknownKeysExceptOurs(cli.properties());
  Logger log("nm");
  NodeManagerConfig config = NodeManagerConfig::fromProperties(cli.properties());
  const rest::TlsSettings tls = rest::TlsSettings::fromProperties(cli.properties());
  if (auto mode = cli.option("memory-enforcement")) {
    auto parsed = parseMemoryEnforcement(*mode);
    if (!parsed) {
      throw ConfigError("--memory-enforcement '" + *mode +
                        "': expected auto, cgroup, watchdog or off");
    }
    config.memoryEnforcement = *parsed;
  }

  // Every thread started from here on inherits this mask, so the signals reach only the
  // sigwait below and shutdown runs in one ordinary thread. Containers get a clean mask.
  const sigset_t shutdownSignals = blockSignals({SIGTERM, SIGINT});
  signal(SIGPIPE, SIG_IGN);

  if (config.workDir.empty()) config.workDir = defaultWorkDir(config.port);

  NodeIdentity identity;
  ContainerManager containers(containerManagerOptionsOf(config, tls));
  NodeManagerServer server(containers, identity, serverOptionsOf(config, tls, log));
  const int port = server.start();
  const std::string address = config.host + ":" + std::to_string(port);

  containers.setNodeAddress(config.host, port);
  startContainers(containers);
  LogRetention retention(logRetentionOptionsOf(config, containers));
  retention.start();
  logStarted(log, config, containers, address);
  writePortFile(cli, port);

  NodeStatusUpdater updater(updaterOptionsOf(config, tls, port, cli.properties(), log), containers,
                            identity);
  updater.start();

  const int received = waitForSignal(shutdownSignals);
  log.info() << "received signal " << received << " (SIG" << sigabbrev_np(received)
             << "); stopping containers and exiting";
  updater.stop();
  retention.stop();
  containers.stopAll();
  server.stop();
  log.info() << "tide-nm stopped";
  flushLogs();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tide::CommandLine cli = tide::daemonCommandLine(
      "tide-nm",
      "Runs a node manager: starts containers for tide-rm and reports them in heartbeats.",
      "Write the bound REST port to FILE once serving");
  cli.addOption("memory-enforcement", "MODE",
                "auto, cgroup, watchdog or off (overrides nm.memoryEnforcement)");
  cli.showConfigKeys({"nm.", "tls.", "log."});
  return tide::parseAndRun(
      cli, argc, argv, [&]() -> int { return run(cli); }, "tide-nm");
}
