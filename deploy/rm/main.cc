// tide-rm: the built-in resource manager. Node managers (tide-nm) register and heartbeat;
// clients submit applications whose AM it starts in a container; AMs ask it for containers.
//
//   tide-rm [--properties-file F] [--conf k=v]... [--port-file FILE]

#include <signal.h>

#include <cstdio>
#include <memory>
#include <random>

#include "common/command_line.h"
#include "common/config.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "deploy/rm/rm_config.h"
#include "deploy/rm/rm_server.h"
#include "deploy/rm/state_store.h"
#include "rest/messages/credentials.h"

namespace {

// With authentication, the cluster secret from rm.secretFile (made there on the first start).
void loadClusterSecret(tide::rm::ResourceManagerServerOptions& options, tide::Logger& log) {
  if (options.config.authenticate) {
    bool created = false;
    try {
      options.clusterSecret =
          tide::rest::loadOrCreateClusterSecret(options.config.secretFile, &created);
    } catch (const std::runtime_error& error) {
      throw tide::ConfigError(std::string("rm.secretFile: ") + error.what());
    }
    // The path only: the content is the admin token.
    log.info() << (created ? "created the cluster secret " : "cluster secret from ")
               << options.config.secretFile
               << (created ? " (mode 0600): tide-nm and the tide commands need it "
                             "(--conf rm.secretFile=PATH)"
                           : "");
  } else {
    log.warn() << "rm.authentication=none: anyone who can connect to this resource "
                  "manager may submit applications (which run commands), kill them and "
                  "register nodes; use it only on a closed test network";
  }
}

std::unique_ptr<tide::rm::ResourceManagerServer> makeServer(
    const tide::rm::ResourceManagerServerOptions& options) {
  try {
    return std::make_unique<tide::rm::ResourceManagerServer>(options);
  } catch (const tide::rm::StateStoreError& error) {
    // Never a silent fresh start: the operator decides what to do with the store.
    throw tide::ConfigError(std::string("rm.stateStore.dir: ") + error.what());
  }
}

void logListening(tide::Logger& log, const tide::rm::RmConfig& config, int port) {
  log.info() << "tide-rm listening on " << config.host << ":" << port
             << " (spreadOut=" << (config.spreadOut ? "true" : "false")
             << ", nodeExpiry=" << tide::formatDuration(config.nodeExpiryMs)
             << ", amLivenessExpiry=" << tide::formatDuration(config.amLivenessExpiryMs)
             << ", maxAppAttempts=" << config.maxAppAttempts << ", stateStore="
             << (config.stateStoreDir.empty() ? std::string("none") : config.stateStoreDir) << ")";
  log.info() << "the cluster's page: " << config.tls.urlOf(config.host + ":" + std::to_string(port))
             << "/?token=TOKEN (a client token: `tide token`)";
}

int runResourceManager(const tide::CommandLine& cli) {
  tide::initLogging(cli.properties());
  tide::warnUnknownKeys(cli.properties());
  tide::Logger log("rm");

  // A connection per node manager and AM: thousands of nodes need more than the usual soft
  // limit of 1024 open files.
  const size_t openFiles = tide::raiseOpenFilesLimit();
  TIDE_LOG(log, debug) << "open files limit " << openFiles;

  tide::rm::ResourceManagerServerOptions options;
  options.config = tide::rm::RmConfig::fromProperties(cli.properties());
  options.placementSeed = std::random_device{}();
  options.version = "tide-rm " TIDE_VERSION;
  loadClusterSecret(options, log);

  // SIGINT and SIGTERM are taken synchronously below; blocked before any thread starts, so
  // every thread inherits the mask and none of them gets the signal instead.
  const sigset_t stopSignals = tide::blockSignals({SIGINT, SIGTERM});

  const std::unique_ptr<tide::rm::ResourceManagerServer> server = makeServer(options);
  const int port = server->start();
  tide::writePortFile(cli, port);
  logListening(log, options.config, port);

  const int received = tide::waitForSignal(stopSignals);
  log.info() << "tide-rm stopping on signal " << received;
  server->stop();
  tide::flushLogs();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tide::CommandLine cli = tide::daemonCommandLine(
      "tide-rm",
      "Runs tide's resource manager: node managers offer it their resources, applications ask it "
      "for containers.",
      "Write the bound port to FILE once listening");
  cli.showConfigKeys({"rm.", "tls.", "log."});
  return tide::parseAndRun(
      cli, argc, argv, [&]() -> int { return runResourceManager(cli); }, "tide-rm");
}
