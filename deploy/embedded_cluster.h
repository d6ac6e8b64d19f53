#pragma once

// A resource manager and node managers started as child processes on this machine: what
// `tide run` stands on, and what the integration tests start. Everything listens on
// 127.0.0.1 with ephemeral ports; everything is stopped when the object goes, and when this
// process dies without running destructors (SIGKILL) the daemons get SIGTERM from the kernel
// (PR_SET_PDEATHSIG) and stop their containers. The parent-death signal fires when the thread
// that created the cluster ends: create it on a thread that lives as long as the cluster. The
// RM creates its cluster secret in the work directory and the NMs read it from there.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/child_process.h"
#include "rest/tls_settings.h"

namespace tide::deploy {

// `argv` followed by `--conf key=value` for each pair of `conf`: a daemon's command line.
std::vector<std::string> withConf(std::vector<std::string> argv,
                                  const std::vector<std::pair<std::string, std::string>>& conf);

struct EmbeddedClusterOptions {
  std::string binDir;   // where tide-rm and tide-nm are; default: next to this executable
  std::string workDir;  // logs, port files and the nodes' container dirs; created if missing
  int nodes = 1;
  // `--conf` pairs for the RM and for every NM (e.g. nm.cores, nm.memory, rm.spreadOut).
  std::vector<std::pair<std::string, std::string>> rmConf;
  std::vector<std::pair<std::string, std::string>> nmConf;
  // tls.* for the RM and every NM (and so for the AMs and executors in the NMs' containers);
  // the RM is then at https://, verified against tls.caFile.
  rest::TlsSettings tls;
  std::chrono::milliseconds startTimeout{20000};
};

class EmbeddedCluster {
 public:
  // Starts the RM, then the NMs, and waits until every node has registered. Throws
  // std::runtime_error (naming the log to read) when something does not come up in time.
  explicit EmbeddedCluster(EmbeddedClusterOptions options);
  ~EmbeddedCluster();

  const std::string& rmAddress() const { return rmAddress_; }
  // The cluster secret file (<workDir>/rm.secret unless rm.secretFile is in rmConf) and its
  // content, the admin token: what this process's clients of the RM send.
  const std::string& secretFile() const { return secretFile_; }
  const std::string& adminToken() const { return adminToken_; }
  int rmPort() const { return rmPort_; }
  ChildProcess& resourceManager() { return *rm_; }
  ChildProcess& nodeManager(size_t i) { return *nms_.at(i); }
  int nodeManagerPort(size_t i) const { return nmPorts_.at(i); }
  size_t nodeCount() const { return nms_.size(); }
  std::string rmLogPath() const;
  std::string nmLogPath(size_t i) const;
  // Starts node manager i again once it has ended (a test kill -9'd it), on the same port and
  // work directory, as an operator restarts a crashed tide-nm: with nm.recovery.enabled it
  // re-attaches to the containers it left running. Returns once it serves; throws as above.
  void restartNodeManager(size_t i);
  // Stops the node managers (their containers with them), then the resource manager.
  void stop();

 private:
  // Starts node manager `index` on `port` (0: any) and waits until it serves.
  void startNodeManager(size_t index, int port = 0);

  EmbeddedClusterOptions options_;
  std::unique_ptr<ChildProcess> rm_;
  std::vector<std::unique_ptr<ChildProcess>> nms_;
  std::vector<int> nmPorts_;
  std::string rmAddress_;
  int rmPort_ = 0;
  std::string secretFile_;
  std::string adminToken_;
};

// Waits until `file` holds a port number (a component writes it once it listens) or the
// child exits or the time is up; returns the port or throws naming the log.
int waitForPortFile(const std::string& file, ChildProcess& child, const std::string& logPath,
                    std::chrono::milliseconds timeout);

}  // namespace tide::deploy
