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

int main(int argc, char** argv) {
  tide::CommandLine cli = tide::daemonCommandLine(
      "tide-rm",
      "Runs tide's resource manager: node managers offer it their resources, applications ask it "
      "for containers.",
      "Write the bound port to FILE once listening");
  cli.showConfigKeys({"rm.", "tls.", "log."});
  return tide::runMain(
      [&] {
        if (!cli.parse(argc, argv)) return 0;
        tide::initLogging(cli.properties());
        tide::warnUnknownKeys(cli.properties());
        tide::Logger log("rm");

        // A connection per node manager and AM: thousands of nodes need more than the usual
        // soft limit of 1024 open files.
        const size_t openFiles = tide::raiseOpenFilesLimit();
        TIDE_LOG(log, debug) << "open files limit " << openFiles;

        tide::rm::ResourceManagerServerOptions options;
        options.config = tide::rm::RmConfig::fromProperties(cli.properties());
        options.placementSeed = std::random_device{}();
        options.version = "tide-rm " TIDE_VERSION;
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

        // SIGINT and SIGTERM are taken synchronously below; blocked before any thread starts,
        // so every thread inherits the mask and none of them gets the signal instead.
        const sigset_t stopSignals = tide::blockSignals({SIGINT, SIGTERM});

        std::unique_ptr<tide::rm::ResourceManagerServer> serverHolder;
        try {
          serverHolder = std::make_unique<tide::rm::ResourceManagerServer>(options);
        } catch (const tide::rm::StateStoreError& error) {
          // Never a silent fresh start: the operator decides what to do with the store.
          throw tide::ConfigError(std::string("rm.stateStore.dir: ") + error.what());
        }
        tide::rm::ResourceManagerServer& server = *serverHolder;
        const int port = server.start();
        tide::writePortFile(cli, port);
        log.info() << "tide-rm listening on " << options.config.host << ":" << port
                   << " (spreadOut=" << (options.config.spreadOut ? "true" : "false")
                   << ", nodeExpiry=" << tide::formatDuration(options.config.nodeExpiryMs)
                   << ", amLivenessExpiry="
                   << tide::formatDuration(options.config.amLivenessExpiryMs)
                   << ", maxAppAttempts=" << options.config.maxAppAttempts << ", stateStore="
                   << (options.config.stateStoreDir.empty() ? std::string("none")
                                                            : options.config.stateStoreDir)
                   << ")";
        log.info() << "the cluster's page: "
                   << options.config.tls.urlOf(options.config.host + ":" + std::to_string(port))
                   << "/?token=TOKEN (a client token: `tide token`)";

        const int received = tide::waitForSignal(stopSignals);
        log.info() << "tide-rm stopping on signal " << received;
        server.stop();
        tide::flushLogs();
        return 0;
      },
      "tide-rm");
}
