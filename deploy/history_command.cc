// `tide history [--port P] [--host H] [--dir D] [--port-file F]`: serves the ended applications
// of a history.dir (deploy/history_server.h) until SIGINT or SIGTERM.

#include <signal.h>

#include <iostream>

#include "am/config.h"
#include "common/command_line.h"
#include "common/daemon.h"
#include "deploy/commands.h"
#include "deploy/history_server.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"
#include "rest/tls_settings.h"

namespace tide::deploy {

int runHistoryCommand(int argc, char** argv) {
  CommandLine cli("tide history",
                  "Serves the applications that have ended, from the event logs their AMs wrote "
                  "to history.dir: a list at /, and at /history/<application id>/ the AM's page "
                  "and read API as they were at its end.");
  cli.addOption("port", "P", "Port to listen on (default 18080; 0: any free port)");
  cli.addOption("host", "H", "Address to listen on (default 127.0.0.1)");
  cli.addOption("dir", "D", "The history directory (default: history.dir, ~/.tide/history)");
  cli.addOption("port-file", "FILE", "Write the port here once listening");
  cli.hideConfigKeys();
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        HistoryServerOptions options;
        options.dir = cli.option("dir").value_or(am::historyDirOf(cli.properties()));
        if (options.dir.empty()) {
          throw ConfigError("history.dir is 'none': give the directory with --dir D");
        }
        options.host = cli.option("host").value_or("127.0.0.1");
        if (auto port = cli.option("port")) {
          const bool digits = !port->empty() && port->size() <= 5 &&
                              port->find_first_not_of("0123456789") == std::string::npos;
          options.port = digits ? std::stoi(*port) : -1;
          if (options.port < 0 || options.port > 65535) {
            throw ConfigError("--port: expected a port number 0-65535, got '" + *port + "'");
          }
        }
        // The cluster's client token (docs/security.md): whoever may watch the applications
        // on tide-rm may read their history. Without a cluster secret, a token of its own.
        const std::optional<std::string> clientToken = rest::rmClientToken(cli.properties());
        options.token = clientToken ? *clientToken : rest::newRandomSecret();
        // TLS is cluster-wide (docs/security.md): with tls.certFile it serves HTTPS only.
        options.tls = rest::TlsSettings::fromProperties(cli.properties());
        const sigset_t stopSignals = blockSignals({SIGINT, SIGTERM});
        HistoryServer server(options);
        const int port = server.start();
        writePortFile(cli, port);
        std::string address =
            options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
        const std::string url =
            options.tls.scheme() + "://" + address + ":" + std::to_string(port) + "/";
        std::cerr << "tide history: serving " << options.dir << " at " << url << "\n";
        if (!clientToken)
          std::cerr << "tide history: page " << url << "?token=" << options.token << "\n";
        waitForSignal(stopSignals);
        server.stop();
        return 0;
      },
      "tide history");
}

}  // namespace tide::deploy
