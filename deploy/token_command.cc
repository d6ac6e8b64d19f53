// `tide token [--node]`: prints a credential derived from the cluster secret, to hand to
// someone who should not hold the secret itself: a client token (tide submit, tide status and
// REST callers: TIDE_RM_TOKEN or --conf rm.tokenFile) or, with --node, the node credential
// (tide-nm: --conf rm.tokenFile). See docs/security.md.

#include <iostream>

#include "common/command_line.h"
#include "deploy/commands.h"
#include "rest/messages/credentials.h"

namespace tide::deploy {

int runTokenCommand(int argc, char** argv) {
  CommandLine cli("tide token",
                  "Prints a client token (or with --node the node credential) derived from the "
                  "cluster secret file (--conf rm.secretFile=PATH, default ~/.tide/rm.secret).");
  cli.addFlag("node", "Print the node credential tide-nm registers with instead");
  cli.hideConfigKeys();
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        const std::string path = rest::clusterSecretFile(cli.properties());
        std::string secret;
        try {
          secret = rest::readSecretFile(path);
        } catch (const std::runtime_error& error) {
          throw ConfigError(std::string("rm.secretFile: ") + error.what());
        }
        std::cout << (cli.flag("node") ? rest::nodeCredentialOf(secret)
                                       : rest::clientTokenOf(secret))
                  << std::endl;
        return 0;
      },
      "tide token");
}

}  // namespace tide::deploy
