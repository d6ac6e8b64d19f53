#include "deploy/embedded_cluster.h"

#include <signal.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "deploy/cluster_client.h"
#include "rest/messages/credentials.h"

namespace tide::deploy {

std::vector<std::string> withConf(std::vector<std::string> argv,
                                  const std::vector<std::pair<std::string, std::string>>& conf) {
  for (const auto& [key, value] : conf) {
    argv.push_back("--conf");
    argv.push_back(key + "=" + value);
  }
  return argv;
}

namespace {

std::string logTail(const std::string& path) {
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

}  // namespace

int waitForPortFile(const std::string& file, ChildProcess& child, const std::string& logPath,
                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(file);
    int port = 0;
    if (in >> port && port > 0) return port;
    if (!child.running()) {
      throw std::runtime_error(
          child.name() + " exited with status " + std::to_string(child.exitStatus().value_or(-1)) +
          " before listening; its log (" + logPath + "):\n" + logTail(logPath));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error(child.name() + " did not start listening within " +
                           std::to_string(timeout.count()) + "ms; see " + logPath);
}

EmbeddedCluster::EmbeddedCluster(EmbeddedClusterOptions options) : options_(std::move(options)) {
  if (options_.binDir.empty()) options_.binDir = selfDirectory();
  std::filesystem::create_directories(options_.workDir);
  const std::string rmPortFile = options_.workDir + "/rm.port";
  std::filesystem::remove(rmPortFile);
  secretFile_ = options_.workDir + "/rm.secret";
  for (const auto& [key, value] : options_.rmConf) {
    if (key == "rm.secretFile" || key == "spark.rm.secretFile") secretFile_ = value;
  }
  std::vector<std::pair<std::string, std::string>> rmConf = {
      {"rm.host", "127.0.0.1"}, {"rm.port", "0"}, {"rm.secretFile", secretFile_}};
  const auto tls = options_.tls.conf();
  rmConf.insert(rmConf.end(), tls.begin(), tls.end());
  rmConf.insert(rmConf.end(), options_.rmConf.begin(), options_.rmConf.end());
  ChildSpec rmSpec;
  rmSpec.argv = withConf({options_.binDir + "/tide-rm", "--port-file", rmPortFile}, rmConf);
  rmSpec.logPath = rmLogPath();
  rmSpec.parentDeathSignal = SIGTERM;
  rm_ = std::make_unique<ChildProcess>(rmSpec);
  rmPort_ = waitForPortFile(rmPortFile, *rm_, rmLogPath(), options_.startTimeout);
  rmAddress_ = options_.tls.urlOf("127.0.0.1:" + std::to_string(rmPort_));
  // Written (mode 0600) before the RM listens; absent only with rm.authentication=none.
  if (std::filesystem::exists(secretFile_)) adminToken_ = rest::readSecretFile(secretFile_);

  for (int i = 0; i < options_.nodes; ++i) startNodeManager(static_cast<size_t>(i));

  // Ready when every node has registered with the RM.
  ClusterClient client(rmAddress_, adminToken_, options_.tls.caFile);
  const auto deadline = std::chrono::steady_clock::now() + options_.startTimeout;
  while (true) {
    try {
      if (client.metrics().activeNodes >= options_.nodes) break;
    } catch (const std::exception&) {
      // not answering yet
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("the node managers did not register with tide-rm within " +
                               std::to_string(options_.startTimeout.count()) + "ms; see " +
                               rmLogPath() + " and " + nmLogPath(0));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void EmbeddedCluster::restartNodeManager(size_t i) {
  if (nms_.at(i)->running()) {
    throw std::logic_error("node manager " + std::to_string(i) + " is still running");
  }
  startNodeManager(i, nmPorts_.at(i));
}

void EmbeddedCluster::startNodeManager(size_t index, int port) {
  const std::string dir = options_.workDir + "/nm" + std::to_string(index);
  std::filesystem::create_directories(dir);
  const std::string portFile = dir + "/nm.port";
  std::filesystem::remove(portFile);
  std::vector<std::pair<std::string, std::string>> conf = {{"nm.rm", rmAddress_},
                                                           {"nm.host", "127.0.0.1"},
                                                           {"nm.port", std::to_string(port)},
                                                           {"nm.workDir", dir + "/work"}};
  if (!adminToken_.empty()) conf.emplace_back("rm.secretFile", secretFile_);
  const auto tls = options_.tls.conf();
  conf.insert(conf.end(), tls.begin(), tls.end());
  conf.insert(conf.end(), options_.nmConf.begin(), options_.nmConf.end());
  ChildSpec spec;
  spec.argv = withConf({options_.binDir + "/tide-nm", "--port-file", portFile}, conf);
  spec.logPath = nmLogPath(index);
  // When this process dies, however (SIGKILL included), the NM gets SIGTERM and stops its
  // containers: `tide run`'s cluster never outlives it.
  spec.parentDeathSignal = SIGTERM;
  auto child = std::make_unique<ChildProcess>(spec);
  const int bound = waitForPortFile(portFile, *child, spec.logPath, options_.startTimeout);
  if (index < nms_.size()) {
    nms_[index] = std::move(child);
    nmPorts_[index] = bound;
  } else {
    nms_.push_back(std::move(child));
    nmPorts_.push_back(bound);
  }
}

std::string EmbeddedCluster::rmLogPath() const {
  return options_.workDir + "/tide-rm.log";
}

std::string EmbeddedCluster::nmLogPath(size_t i) const {
  return options_.workDir + "/nm" + std::to_string(i) + "/tide-nm.log";
}

void EmbeddedCluster::stop() {
  for (auto& nm : nms_) {
    if (nm) nm->stop();
  }
  if (rm_) rm_->stop();
}

EmbeddedCluster::~EmbeddedCluster() {
  stop();
}

}  // namespace tide::deploy
