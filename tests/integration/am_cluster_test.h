#pragma once

// The fixture of the end-to-end tests: a real tide-rm with node managers on 127.0.0.1, an
// ApplicationMaster submitted to it, and the AM's status API to watch. Every wait is bounded.

#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deploy/am_submission.h"
#include "deploy/embedded_cluster.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "tests/support/certificates.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide::testing_support {

class AmClusterTest : public ::testing::Test {
 protected:
  using Conf = std::vector<std::pair<std::string, std::string>>;

  // `nodes` node managers with `coresPerNode` cores each (the AM takes one core of one).
  void startCluster(int nodes = 2, int coresPerNode = 5, const std::string& nodeExpiry = "5s") {
    deploy::EmbeddedClusterOptions options;
    options.binDir = TIDE_BIN_DIR;
    options.workDir = (dir.path() / "cluster").string();
    options.nodes = nodes;
    options.nmConf = {{"nm.cores", std::to_string(coresPerNode)},
                      {"nm.memory", "4g"},
                      {"nm.heartbeatInterval", "200ms"}};
    options.rmConf = {{"rm.nodeExpiry", nodeExpiry}};
    options.tls = tls;
    cluster = std::make_unique<deploy::EmbeddedCluster>(options);
    client = std::make_unique<deploy::ClusterClient>(cluster->rmAddress(), cluster->adminToken(),
                                                     tls.caFile);
  }

  // Submits the AM with `jobJson` and waits until its status API answers. Small containers
  // and quick timers by default; the test's own `conf` comes after them and wins.
  void submit(const std::string& jobJson, Conf conf, bool session,
              std::optional<std::string> propertiesFile = std::nullopt) {
    conf.insert(conf.begin(), {{"executor.memory", "256m"},
                               {"am.memory", "256m"},
                               {"ui.port", "0"},
                               {"network.timeout", "20s"},
                               {"am.heartbeatInterval", "500ms"},
                               {"dynamicAllocation.schedulerBacklogTimeout", "200ms"},
                               // The event logs stay with the test, not in $HOME.
                               {"history.dir", (dir.path() / "history").string()}});
    Properties props;
    if (propertiesFile) props.loadFile(*propertiesFile);
    for (const auto& [key, value] : conf) props.set(key, value);
    deploy::AmSubmission submission;
    submission.jobFile = dir.writeFile("job.json", jobJson);
    submission.jobName = "test";
    submission.conf = conf;
    submission.propertiesFile = propertiesFile;
    submission.session = session;
    submission.binDir = TIDE_BIN_DIR;
    appId = deploy::submitApplicationMaster(*client, submission, props, &controlToken);
    ASSERT_TRUE(eventually(
        [&] {
          auto report = client->application(appId);
          if (report.state == "RUNNING" && !report.trackingUrl.empty()) {
            trackingUrl = report.trackingUrl;
            // The AM's control token goes with every call (writes need it).
            rest::HttpClientOptions withToken;
            withToken.defaultHeaders = {{"Authorization", "Bearer " + controlToken}};
            tls.applyTo(withToken);
            am = std::make_unique<rest::HttpClient>(report.trackingUrl, withToken);
            return true;
          }
          return deploy::isFinal(report);
        },
        std::chrono::seconds(30)))
        << "the AM did not start; RM log:\n"
        << readFile(cluster->rmLogPath());
    ASSERT_TRUE(am) << "the AM ended before it served its status: "
                    << client->application(appId).diagnostics << "\n"
                    << amLog();
  }

  rapidjson::Document status() { return am->getJson("api/v1/status"); }
  rapidjson::Document executors() { return am->getJson("api/v1/executors"); }
  int liveExecutors() { return static_cast<int>(executors()["executors"].Size()); }
  rapidjson::Document job(const std::string& jobId) { return am->getJson("api/v1/jobs/" + jobId); }

  // RUNNING until the job ends; GONE once the AM itself has ended.
  std::string jobState(const std::string& jobId) {
    try {
      return job(jobId)["state"].GetString();
    } catch (const std::exception&) {
      // Not submitted yet (the AM serves before it submits its job), or the AM has finished.
      return deploy::isFinal(client->application(appId)) ? "GONE" : "RUNNING";
    }
  }

  static const rapidjson::Value* stage(const rapidjson::Document& doc, const std::string& id) {
    for (const auto& s : doc["stages"].GetArray()) {
      if (id == s["id"].GetString()) return &s;
    }
    return nullptr;
  }

  // An executor running tasks right now, with its process id.
  bool busyExecutor(std::string* id, int64_t* pid) {
    const rapidjson::Document listed = executors();  // outlives the loop
    for (const auto& e : listed["executors"].GetArray()) {
      if (e["runningTasks"].GetInt() > 0 && e["pid"].GetInt64() > 0) {
        *id = e["id"].GetString();
        *pid = e["pid"].GetInt64();
        return true;
      }
    }
    return false;
  }

  struct Executor {
    std::string id;
    pid_t pid = 0;
  };
  // An executor running tasks, once there is one within `bound`; nothing when there is none.
  std::optional<Executor> waitForBusyExecutor(std::chrono::milliseconds bound) {
    std::string id;
    int64_t pid = 0;
    if (!eventually([&] { return busyExecutor(&id, &pid); }, bound)) return std::nullopt;
    return Executor{id, static_cast<pid_t>(pid)};
  }

  // True once `jobId` is no longer RUNNING, within `bound`.
  bool jobEnds(const std::string& jobId, std::chrono::milliseconds bound) {
    return eventually([&] { return jobState(jobId) != "RUNNING"; }, bound);
  }

  rest::ApplicationReport waitForEnd(std::chrono::milliseconds timeout) {
    rest::ApplicationReport report;
    EXPECT_TRUE(eventually(
        [&] {
          report = client->application(appId);
          return deploy::isFinal(report);
        },
        timeout))
        << "the application did not end; state " << report.state;
    return report;
  }

  // The AM's log (the stderr of the first container), for failure messages.
  std::string amLog() {
    std::error_code ec;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path(), ec)) {
      const std::string path = entry.path().string();
      if (entry.path().filename() == "stderr" && path.find("_000001") != std::string::npos) {
        const std::string text = readFile(path);
        return "AM log (" + path + "):\n" +
               text.substr(text.size() > 6000 ? text.size() - 6000 : 0);
      }
    }
    return "(no AM log found)";
  }

  void TearDown() override {
    if (HasFailure() && am) std::cerr << amLog() << "\n";
    if (client && !appId.empty()) {
      try {
        client->kill(appId);
      } catch (const std::exception&) {
        // already gone
      }
    }
  }

  // Before startCluster(): a throwaway CA and a certificate for 127.0.0.1 under the test's dir,
  // and `tls` set from them, so that the cluster serves HTTPS only.
  void serveTls() {
    std::filesystem::create_directories(dir.path() / "tls");
    certificates = std::make_unique<TestCertificates>(dir.path() / "tls");
    tls = rest::TlsSettings{certificates->certFile(), certificates->keyFile(),
                            certificates->caFile()};
  }

  TempDir dir;
  // Set before startCluster() for a cluster (and its AMs and executors) serving HTTPS.
  rest::TlsSettings tls;
  std::unique_ptr<TestCertificates> certificates;  // serveTls()'s
  std::unique_ptr<deploy::EmbeddedCluster> cluster;
  std::unique_ptr<deploy::ClusterClient> client;
  std::unique_ptr<rest::HttpClient> am;
  std::string appId;
  std::string trackingUrl;
  std::string controlToken;  // the application's, from its submission
};

}  // namespace tide::testing_support
