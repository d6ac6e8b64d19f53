#include "deploy/am_submission.h"

#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "am/config.h"
#include "am/scheduler/job.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::deploy {

void checkBeforeSubmitting(const std::string& jobFile, const Properties& props,
                           std::string* jobName, bool strictConf, std::string* jobOutput) {
  am::Job job;
  try {
    job = am::loadJobFile(jobFile);
    if (jobName != nullptr) *jobName = job.name;
    if (jobOutput != nullptr) *jobOutput = job.output;
  } catch (const am::JobError& e) {
    throw ConfigError(e.what());
  }
  props.validate();  // every known key parses by its kind
  std::vector<std::string> warnings = props.unknownKeyWarnings();
  const am::AmConfig config = am::AmConfig::fromProperties(props, &warnings);  // ConfigError
  if (strictConf && !warnings.empty()) {
    std::string message = "configuration warnings are errors with --strict-conf:";
    for (const auto& warning : warnings) message += "\n  " + warning;
    throw ConfigError(message);
  }
  for (const auto& warning : warnings) std::cerr << "tide: warning: " << warning << "\n";
  // A task runs inside one executor: one that needs more cores than an executor has could
  // never start, and the job would wait forever.
  const int executorCores = config.allocation.executorCores;
  for (size_t i = 0; i < job.stages.size(); ++i) {
    const am::StageSpec& stage = job.stages[i];
    if (stage.cpus && *stage.cpus > executorCores) {
      throw ConfigError(jobFile + ": stages[" + std::to_string(i) + "].cpus: stage '" + stage.id +
                        "' asks for " + std::to_string(*stage.cpus) +
                        " cores per task, more than an executor has (executor.cores=" +
                        std::to_string(executorCores) + ")");
    }
  }
}

void checkAgainstLargestNode(const rest::Resource& largest, const Properties& props) {
  if (largest.memoryMb <= 0 || largest.vCores <= 0) return;  // no node yet: it may join
  const auto check = [&](const char* key, int64_t asked, int64_t available, const char* unit,
                         const char* what) {
    if (asked <= available) return;
    throw ConfigError(props.describe(key) + ": " + what + " asks for " + std::to_string(asked) +
                      unit + ", above the largest node's " + std::to_string(available) + unit +
                      " (the resource manager's maximum allocation)");
  };
  check("executor.memory", props.getSizeBytes("executor.memory") / (1024 * 1024), largest.memoryMb,
        " MB", "each executor container");
  check("executor.cores", props.getInt("executor.cores"), largest.vCores, " vCores",
        "each executor container");
  check("am.memory", props.getSizeBytes("am.memory") / (1024 * 1024), largest.memoryMb, " MB",
        "the AM container");
  check("am.cores", props.getInt("am.cores"), largest.vCores, " vCores", "the AM container");
}

std::vector<std::pair<std::string, std::string>> commandLineConf(const Properties& props) {
  std::vector<std::pair<std::string, std::string>> conf;
  for (const auto& [key, entry] : props.entries()) {
    if (entry.origin.file.empty()) conf.emplace_back(key, entry.value);
  }
  return conf;
}

std::string submitApplicationMaster(ClusterClient& cluster, const AmSubmission& submission,
                                    const Properties& props, std::string* controlToken) {
  const rest::NewApplicationResponse created = cluster.newApplication();
  // Spark's "Required executor memory ... is above the max threshold of this cluster".
  checkAgainstLargestNode(created.maximumResourceCapability, props);
  std::string command = "exec " + shellQuote(submission.binDir + "/tide-am") + " --job " +
                        shellQuote(submission.jobFile);
  if (submission.propertiesFile) {
    command += " --properties-file " + shellQuote(*submission.propertiesFile);
  }
  for (const auto& [key, value] : submission.conf)
    command += " --conf " + shellQuote(key + "=" + value);
  if (submission.session) command += " --session";
  if (submission.reportFile) command += " --report " + shellQuote(*submission.reportFile);

  rest::ApplicationSubmission app;
  app.applicationId = created.applicationId;
  app.applicationName = submission.jobName;
  app.command = command;
  // The secret reaches the AM through its container's environment, never a command line.
  const std::string secret = rest::newRandomSecret();
  app.environment = {{"TIDE_APP_SECRET", secret}};
  if (controlToken != nullptr) *controlToken = rest::controlTokenOf(secret);
  app.resource = {props.getSizeBytes("am.memory") / (1024 * 1024),
                  static_cast<int>(props.getInt("am.cores"))};
  if (props.has("am.maxAttempts"))
    app.maxAppAttempts = static_cast<int>(props.getInt("am.maxAttempts"));
  if (auto history = props.getOptionalString("history.address"); history && !history->empty()) {
    std::string base = *history;
    while (!base.empty() && base.back() == '/') base.pop_back();
    app.historyUrl = base + "/history/" + created.applicationId;
  }
  cluster.submit(app);
  return created.applicationId;
}

namespace {

// The AM's status (GET api/v1/status), or nullopt when it does not answer.
std::optional<std::string> fetchStatus(const std::string& trackingUrl, const std::string& token,
                                       const std::string& caFile) {
  if (trackingUrl.empty()) return std::nullopt;
  try {
    rest::HttpClientOptions options;
    options.caFile = caFile;
    options.requestTimeout = std::chrono::milliseconds(1000);
    options.retry.maxAttempts = 1;
    if (!token.empty()) options.defaultHeaders.push_back({"Authorization", "Bearer " + token});
    rest::HttpClient client(trackingUrl, options);
    rest::HttpResponse response = client.request("GET", "api/v1/status");
    if (response.status != 200) return std::nullopt;
    return response.body;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "120/200 tasks  executors 7 live / 8 target  12.3s", from the AM's status.
std::optional<std::string> progressLine(const std::string& statusJson, double elapsedSeconds) {
  try {
    auto status = rest::parseJson(statusJson);
    const auto& tasks = status["tasks"];
    const auto& allocation = status["allocation"];
    int64_t total = 0;
    for (const auto& job : status["jobs"].GetArray()) total += job["tasks"].GetInt64();
    std::ostringstream line;
    line << tasks["succeeded"].GetInt64() << "/" << total << " tasks  executors "
         << allocation["live"].GetInt() << " live / " << allocation["target"].GetInt()
         << " target  " << std::fixed << std::setprecision(1) << elapsedSeconds << "s";
    return line.str();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

rest::ApplicationReport followApplication(ClusterClient& cluster, const std::string& applicationId,
                                          const FollowOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  bool killed = false;
  std::string lastLine;
  bool pageShown = false;
  auto lastPoll = started - std::chrono::seconds(10);
  while (true) {
    stopOnInterrupt(options.interrupted, killed, applicationId, "killing", "kill",
                    [&] { cluster.kill(applicationId); });
    rest::ApplicationReport report =
        applicationReportRidingOut(cluster, applicationId, [&](const std::string& line) {
          if (!lastLine.empty()) std::cerr << "\n";
          lastLine.clear();
          std::cerr << "tide: " << line << "\n";
        });
    if (isFinal(report)) {
      if (options.progress && !lastLine.empty()) std::cerr << "\n";
      return report;
    }
    if (!pageShown && !options.controlToken.empty() && !report.trackingUrl.empty()) {
      pageShown = true;
      if (!lastLine.empty()) std::cerr << "\n";
      lastLine.clear();
      std::cerr << "tide: status page "
                << pageUrlWithToken(report.trackingUrl, options.controlToken) << "\n";
    }
    // The status feeds the progress line (every 200 ms) and the summary (every second).
    const auto now = std::chrono::steady_clock::now();
    if (options.progress || (options.lastStatusJson && now - lastPoll >= std::chrono::seconds(1))) {
      lastPoll = now;
      if (auto status = fetchStatus(report.trackingUrl, options.statusToken, cluster.caFile())) {
        if (options.lastStatusJson) *options.lastStatusJson = *status;
        const double elapsed = std::chrono::duration<double>(now - started).count();
        if (auto line = options.progress ? progressLine(*status, elapsed) : std::nullopt) {
          std::cerr << "\r\033[K" << *line << std::flush;
          lastLine = *line;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string formatRunSummary(const rest::ApplicationReport& report, const SummarySources& sources) {
  std::ostringstream out;
  out << "  final status  " << report.finalStatus << "\n";
  // The AM's report is exact; its last status seen is what there is for a remote AM.
  std::optional<rapidjson::Document> amReport;
  std::optional<rapidjson::Document> lastStatus;
  try {
    if (!sources.amReportJson.empty()) amReport = rest::parseJson(sources.amReportJson);
    if (!sources.lastStatusJson.empty()) lastStatus = rest::parseJson(sources.lastStatusJson);
  } catch (const std::exception&) {
    // a partial file: say less
  }
  auto intAt = [](const rapidjson::Value& object, const char* a, const char* b) -> int64_t {
    if (!object.IsObject() || !object.HasMember(a) || !object[a].IsObject() ||
        !object[a].HasMember(b) || !object[a][b].IsNumber()) {
      return -1;
    }
    return object[a][b].GetInt64();
  };
  if (amReport && amReport->IsObject()) {
    const rapidjson::Value& r = *amReport;
    out << "  tasks         " << intAt(r, "tasks", "succeeded") << " succeeded, "
        << intAt(r, "tasks", "failed") << " failed attempts\n";
    out << "  executors     peak " << intAt(r, "executors", "peak") << ", launched "
        << intAt(r, "executors", "launched");
    if (r.HasMember("executor_seconds") && r["executor_seconds"].IsNumber()) {
      out << ", " << std::fixed << std::setprecision(1) << r["executor_seconds"].GetDouble()
          << " executor-seconds";
    }
    if (r.HasMember("duration_seconds") && r["duration_seconds"].IsNumber()) {
      out << " in " << std::fixed << std::setprecision(1) << r["duration_seconds"].GetDouble()
          << " s";
    }
    out << "\n";
  } else if (lastStatus && lastStatus->IsObject()) {
    const rapidjson::Value& st = *lastStatus;
    out << "  tasks         " << intAt(st, "tasks", "succeeded") << " succeeded, "
        << intAt(st, "tasks", "failed") << " failed attempts (as last seen)\n";
    out << "  executors     peak " << intAt(st, "allocation", "peak") << ", launched "
        << intAt(st, "allocation", "launched") << " (as last seen)\n";
  }
  if (!sources.output.empty()) out << "  output        " << sources.output << "\n";
  if (!sources.logs.empty()) out << "  logs          " << sources.logs << "\n";
  return out.str();
}

int exitStatusOf(const rest::ApplicationReport& report) {
  return report.state == rest::app_state::kFinished &&
                 report.finalStatus == rest::final_status::kSucceeded
             ? 0
             : 1;
}

}  // namespace tide::deploy
