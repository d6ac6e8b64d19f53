// `tide logs APP [--executor ID] [--task STAGE:INDEX] [--attempt N]`: an application's kept
// logs, as `yarn logs -applicationId` prints them. Every node manager of the cluster (found
// through tide-rm) is asked for the application's logs over REST (GET /api/v1/logs/{app}, with
// the client token); a node that cannot be reached is named and the others are printed. Without
// --master and $TIDE_MASTER, the logs a `tide run` in this directory kept (.tide/logs/APP) are
// read directly, so they can be read after its cluster is gone.

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/app_logs.h"
#include "common/command_line.h"
#include "deploy/cluster_client.h"
#include "deploy/commands.h"
#include "deploy/master_location.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "rest/tls_settings.h"

namespace tide::deploy {
namespace {

// Which of the application's logs to print.
struct LogSelection {
  std::optional<std::string> executorId;
  std::optional<std::string> taskPrefix;  // "tasks/<stage>-<index>-"
  std::optional<int> attempt;

  bool containerSelected(const ContainerLogs& container) const {
    return !executorId || container.executorId == *executorId;
  }
  bool fileSelected(const std::string& path) const {
    if (!taskPrefix && !attempt) return true;
    if (path.rfind("tasks/", 0) != 0) return false;
    if (taskPrefix && path.rfind(*taskPrefix, 0) != 0) return false;
    if (!attempt) return true;
    // tasks/<stage>-<index>-<attempt>/<file>: the attempt is the last '-' of the folder.
    const size_t slash = path.find('/', 6);
    const std::string folder = path.substr(6, slash == std::string::npos ? slash : slash - 6);
    return folder.substr(folder.rfind('-') + 1) == std::to_string(*attempt);
  }
};

LogSelection selectionOf(CommandLine& cli) {
  LogSelection selection;
  selection.executorId = cli.option("executor");
  if (auto task = cli.option("task")) {
    const size_t colon = task->rfind(':');
    const std::string index = colon == std::string::npos ? "" : task->substr(colon + 1);
    if (colon == std::string::npos || colon == 0 || index.empty() ||
        index.find_first_not_of("0123456789") != std::string::npos || index.size() > 9) {
      throw ConfigError("--task " + *task + ": expected STAGE:INDEX, e.g. count:3");
    }
    const std::string name = taskDirName(task->substr(0, colon), std::stoll(index), 0);
    selection.taskPrefix = "tasks/" + name.substr(0, name.size() - 1);  // without the attempt
  }
  if (auto attempt = cli.option("attempt")) {
    if (attempt->empty() || attempt->size() > 6 ||
        attempt->find_first_not_of("0123456789") != std::string::npos) {
      throw ConfigError("--attempt " + *attempt + ": expected a number (0 is the first attempt)");
    }
    selection.attempt = std::stoi(*attempt);
  }
  return selection;
}

void printLog(const std::string& node, const ContainerLogs& container, const LogFile& file,
              const std::string& content, std::ostream& out) {
  out << "Container: " << container.containerId << " on " << node;
  if (!container.executorId.empty()) out << " (executor " << container.executorId << ")";
  out << "\nLogType: " << file.path << "\nLogLength: " << content.size() << "\nLog Contents:\n"
      << content;
  if (!content.empty() && content.back() != '\n') out << "\n";
  out << "End of LogType: " << file.path << "\n\n";
}

// One node's logs of the application: listed, then each selected file fetched.
class NodeLogSource {
 public:
  virtual ~NodeLogSource() = default;
  virtual std::string name() const = 0;
  // NOT_FOUND: the node has no logs of the application; UNAVAILABLE: it cannot be asked.
  virtual Status list(const std::string& appId, std::vector<ContainerLogs>* containers) = 0;
  virtual Status read(const std::string& appId, const std::string& containerId,
                      const std::string& path, std::string* content) = 0;
};

class LocalLogSource final : public NodeLogSource {
 public:
  explicit LocalLogSource(std::string logDir) : logDir_(std::move(logDir)) {}
  std::string name() const override { return "this machine (" + logDir_ + ")"; }
  Status list(const std::string& appId, std::vector<ContainerLogs>* containers) override {
    return listApplicationLogs(logDir_, appId, containers);
  }
  Status read(const std::string& appId, const std::string& containerId, const std::string& path,
              std::string* content) override {
    std::string file;
    if (Status resolved = resolveLogFile(logDir_, appId, containerId, path, &file); !resolved.ok())
      return resolved;
    return readLogFile(file, std::nullopt, content);
  }

 private:
  std::string logDir_;
};

class NodeManagerLogSource final : public NodeLogSource {
 public:
  NodeManagerLogSource(std::string nodeAddress, const std::string& url,
                       const std::optional<std::string>& token, const std::string& caFile)
      : node_(std::move(nodeAddress)), http_(url, options(token, caFile)) {}
  std::string name() const override { return node_; }
  Status list(const std::string& appId, std::vector<ContainerLogs>* containers) override {
    std::string body;
    if (Status got = get("/api/v1/logs/" + appId, &body); !got.ok()) return got;
    try {
      const rapidjson::Document json = rest::parseJson(body);
      const rest::JsonObjectReader reader(json);
      const rest::JsonArrayReader entries = reader.requireArray("containers");
      for (size_t i = 0; i < entries.size(); ++i) {
        const rest::JsonObjectReader item = entries.objectAt(i);
        ContainerLogs container;
        container.containerId = item.requireString("containerId");
        container.executorId = item.optionalString("executorId");
        const rest::JsonArrayReader files = item.requireArray("files");
        for (size_t f = 0; f < files.size(); ++f) {
          const rest::JsonObjectReader file = files.objectAt(f);
          container.files.push_back({file.requireString("path"), file.requireInt64("size")});
        }
        containers->push_back(std::move(container));
      }
    } catch (const std::exception& e) {
      return Status::unavailable("unexpected answer from node " + node_ + ": " + e.what());
    }
    return Status();
  }
  Status read(const std::string& appId, const std::string& containerId, const std::string& path,
              std::string* content) override {
    return get("/api/v1/logs/" + appId + "/" + containerId + "/" + path, content);
  }

 private:
  static rest::HttpClientOptions options(const std::optional<std::string>& token,
                                         const std::string& caFile) {
    rest::HttpClientOptions options;
    options.caFile = caFile;
    options.connectTimeout = std::chrono::milliseconds(2000);
    options.requestTimeout = std::chrono::milliseconds(20000);
    options.retry.maxAttempts = 2;
    options.log = [](const std::string&) {};
    if (token && !token->empty())
      options.defaultHeaders.push_back({"Authorization", "Bearer " + *token});
    return options;
  }
  Status get(const std::string& path, std::string* body) {
    try {
      const rest::HttpResponse response = http_.request("GET", path);
      if (response.status == 404) return Status::notFound(response.body);
      if (response.status < 200 || response.status >= 300) {
        return Status::unavailable("node " + node_ + " answered HTTP " +
                                   std::to_string(response.status) + ": " + response.body);
      }
      *body = response.body;
      return Status();
    } catch (const std::exception& e) {
      return Status::unavailable("node " + node_ + " cannot be reached: " + e.what());
    }
  }

  std::string node_;
  rest::HttpClient http_;
};

// Prints what `source` holds of the application; returns false when it has nothing of it.
bool printNode(NodeLogSource& source, const std::string& appId, const LogSelection& selection,
               int& problems, int& printed, std::ostream& out) {
  std::vector<ContainerLogs> containers;
  const Status listed = source.list(appId, &containers);
  if (listed.code() == StatusCode::kNotFound) return false;
  if (!listed.ok()) {
    std::cerr << "tide logs: " << listed.message() << "\n";
    ++problems;
    return false;
  }
  for (const ContainerLogs& container : containers) {
    if (!selection.containerSelected(container)) continue;
    for (const LogFile& file : container.files) {
      if (!selection.fileSelected(file.path)) continue;
      std::string content;
      if (Status read = source.read(appId, container.containerId, file.path, &content);
          !read.ok()) {
        std::cerr << "tide logs: " << container.containerId << " " << file.path << " on "
                  << source.name() << ": " << read.message() << "\n";
        ++problems;
        continue;
      }
      printLog(source.name(), container, file, content, out);
      ++printed;
    }
  }
  return true;
}

}  // namespace

int runLogsCommand(int argc, char** argv) {
  CommandLine cli("tide logs",
                  "Prints an application's logs: the stdout and stderr of its containers and of "
                  "every task attempt, from every node manager (as `yarn logs`). In a directory "
                  "where `tide run` ran, reads the logs it kept (.tide/logs) even once its "
                  "cluster is gone.");
  cli.addPositional("APP", "The application id (application_...)");
  cli.addOption("master", "URL",
                "The resource manager (default: $TIDE_MASTER, else the logs a `tide run` kept "
                "in this directory, else the cluster of a `tide run` running here, else "
                "http://127.0.0.1:8088)");
  cli.addOption("executor", "ID", "Only the container of this executor (e.g. e2)");
  cli.addOption("task", "STAGE:INDEX", "Only this task's attempts (e.g. count:3)");
  cli.addOption("attempt", "N", "Only this attempt of the tasks (0 is the first)");
  cli.showConfigKeys({"rm.secretFile", "rm.tokenFile", "tls."});
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        const std::string appId = *cli.positional("APP");
        if (!isPlainPathComponent(appId)) {
          throw ConfigError("bad application id '" + appId + "': expected application_...");
        }
        const LogSelection selection = selectionOf(cli);
        int problems = 0;
        int nodesWithLogs = 0;
        const char* envMaster = std::getenv("TIDE_MASTER");
        const bool masterGiven = cli.option("master") || (envMaster != nullptr && *envMaster);
        const std::string localDir = std::filesystem::absolute(kEmbeddedLogDir).string();
        int printed = 0;
        // What to say when the logs exist but the options select none of them.
        const auto noneSelected = [&](const std::string& where) {
          std::cerr << "tide logs: no log of " << appId << " " << where
                    << " matches --executor, --task and --attempt\n";
          return 1;
        };
        if (!masterGiven && std::filesystem::is_directory(localDir + "/" + appId)) {
          LocalLogSource local(localDir);
          printNode(local, appId, selection, problems, printed, std::cout);
          if (problems == 0 && printed == 0) return noneSelected("in " + localDir);
          return problems == 0 ? 0 : 1;
        }
        const MasterLocation master = resolveMaster(cli.option("master"));
        Properties& props = cli.properties();
        useMasterCredentials(master, props);
        const rest::TlsSettings tls = rest::TlsSettings::fromProperties(props);
        const std::optional<std::string> token = rest::rmClientToken(props);
        ClusterClient cluster(master.url, token, tls.caFile);
        cluster.application(appId);  // an unknown application is a 404 naming it
        const bool https = master.url.rfind("https://", 0) == 0;
        const std::vector<rest::NodeReport> nodes = cluster.nodes();
        for (const rest::NodeReport& node : nodes) {
          NodeManagerLogSource source(node.nodeHTTPAddress,
                                      (https ? "https://" : "http://") + node.nodeHTTPAddress,
                                      token, tls.caFile);
          if (printNode(source, appId, selection, problems, printed, std::cout)) ++nodesWithLogs;
        }
        if (nodesWithLogs == 0 && problems == 0) {
          std::cerr << "tide logs: no node manager of " << master.url << " (" << nodes.size()
                    << " node(s)) has logs of " << appId
                    << " (deleted after nm.logRetention, or on a node that is gone)\n";
          return 1;
        }
        if (problems == 0 && printed == 0) return noneSelected("on the node managers");
        return problems == 0 ? 0 : 1;
      },
      "tide logs");
}

}  // namespace tide::deploy
