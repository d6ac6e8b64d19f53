#pragma once

// Where the tide commands that talk to a running tide-rm (`tide app`, `tide status`) find it
// when no --master is given: $TIDE_MASTER, else the embedded cluster of a `tide run` still
// running in this directory, else tide-rm's default address. `tide run` leaves a pointer to its
// cluster in `.tide/embedded-cluster` for as long as it runs: the RM's address and the cluster
// secret file its clients authenticate with (the path, never the secret).

#include <optional>
#include <string>

#include "common/config.h"

namespace tide::deploy {

struct MasterLocation {
  std::string url;
  // The embedded cluster's secret file, when the address came from a `tide run`.
  std::optional<std::string> secretFile;
  // Where the address came from, for messages: "--master", "TIDE_MASTER", "the tide run in
  // this directory (pid N)" or "the default".
  std::string origin;
};

constexpr char kDefaultMaster[] = "http://127.0.0.1:8088";
// Relative to the directory `tide run` was started in.
constexpr char kEmbeddedClusterFile[] = ".tide/embedded-cluster";
// Where the node of `tide run`'s embedded cluster keeps the logs of its containers and tasks
// (nm.logDir), so that they outlive the run: `tide logs APP` reads them there.
constexpr char kEmbeddedLogDir[] = ".tide/logs";

// The master to use: `option` (--master) when given, else $TIDE_MASTER, else a live `tide run`
// of `directory` (a pointer file whose writer has died is ignored), else kDefaultMaster.
// Throws ConfigError when the URL chosen is not http(s)://.
MasterLocation resolveMaster(const std::optional<std::string>& option,
                             const std::string& directory = ".");

// Makes the tide-rm clients of this command authenticate as `location` says: with the
// embedded cluster's secret file, unless a token or secret was given explicitly
// (rm.tokenFile, rm.secretFile, TIDE_RM_TOKEN).
void useMasterCredentials(const MasterLocation& location, Properties& props);

// `tide run`'s side: writes the pointer file for this process (mode 0600) and removes it on
// destruction if it is still this process's. Never throws: a directory `tide run` cannot
// write in just has no pointer (`warn` gets one line saying so).
class EmbeddedClusterPointer {
 public:
  EmbeddedClusterPointer(const std::string& directory, const std::string& rmAddress,
                         const std::string& secretFile, std::ostream& warn);
  ~EmbeddedClusterPointer();
  EmbeddedClusterPointer(const EmbeddedClusterPointer&) = delete;
  EmbeddedClusterPointer& operator=(const EmbeddedClusterPointer&) = delete;

 private:
  std::string path_;
};

}  // namespace tide::deploy
