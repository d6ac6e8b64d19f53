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
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::deploy {

void checkBeforeSubmitting(const std::string& jobFile, const Properties& props,
                           std::string* jobName, bool strictConf) {
  try {
    am::Job job = am::loadJobFile(jobFile);
    if (jobName != nullptr) *jobName = job.name;
  } catch (const am::JobError& e) {
    throw ConfigError(e.what());
  }
  props.validate();  // every known key parses by its kind
  std::vector<std::string> warnings = props.unknownKeyWarnings();
  am::AmConfig::fromProperties(props, &warnings);  // throws ConfigError
  if (strictConf && !warnings.empty()) {
    std::string message = "configuration warnings are errors with --strict-conf:";
    for (const auto& warning : warnings) message += "\n  " + warning;
    throw ConfigError(message);
  }
  for (const auto& warning : warnings) std::cerr << "tide: warning: " << warning << "\n";
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
  cluster.submit(app);
  return created.applicationId;
}

namespace {

// "120/200 tasks  executors 7 live / 8 target  12.3s", from the AM's status API.
std::optional<std::string> progressLine(const std::string& trackingUrl, double elapsedSeconds,
                                        const std::string& token) {
  if (trackingUrl.empty()) return std::nullopt;
  try {
    rest::HttpClientOptions options;
    options.requestTimeout = std::chrono::milliseconds(1000);
    options.retry.maxAttempts = 1;
    if (!token.empty()) options.defaultHeaders.push_back({"Authorization", "Bearer " + token});
    rest::HttpClient client(trackingUrl, options);
    auto status = client.getJson("api/v1/status");
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
  while (true) {
    if (!killed && options.interrupted && options.interrupted()) {
      killed = true;
      std::cerr << "\ntide: interrupted; killing " << applicationId << "\n";
      try {
        cluster.kill(applicationId);
      } catch (const std::exception& e) {
        std::cerr << "tide: could not kill " << applicationId << ": " << e.what() << "\n";
      }
    }
    rest::ApplicationReport report = cluster.application(applicationId);
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
    if (options.progress) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (auto line = progressLine(report.trackingUrl, elapsed, options.statusToken)) {
        std::cerr << "\r\033[K" << *line << std::flush;
        lastLine = *line;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int exitStatusOf(const rest::ApplicationReport& report) {
  return report.state == rest::app_state::kFinished &&
                 report.finalStatus == rest::final_status::kSucceeded
             ? 0
             : 1;
}

}  // namespace tide::deploy
