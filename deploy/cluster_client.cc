#include "deploy/cluster_client.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "rest/json.h"

namespace tide::deploy {

namespace {

rest::HttpClientOptions withToken(const std::optional<std::string>& token,
                                  const std::string& caFile) {
  rest::HttpClientOptions options;
  options.caFile = caFile;
  if (token && !token->empty())
    options.defaultHeaders.push_back({"Authorization", "Bearer " + *token});
  return options;
}

}  // namespace

ClusterClient::ClusterClient(const std::string& rmAddress, const std::optional<std::string>& token,
                             std::string caFile)
    : address_(rmAddress),
      caFile_(std::move(caFile)),
      http_(rmAddress, withToken(token, caFile_)) {}

std::string ClusterClient::controlToken(const std::string& applicationId) {
  const rapidjson::Document answer =
      http_.getJson("/ws/v1/cluster/apps/" + applicationId + "/control-token");
  return rest::JsonObjectReader(answer).requireString("controlToken");
}

rest::NewApplicationResponse ClusterClient::newApplication() {
  return rest::newApplicationResponseFromJson(
      http_.postJson("/ws/v1/cluster/apps/new-application", std::string("{}")));
}

void ClusterClient::submit(const rest::ApplicationSubmission& submission) {
  http_.postJson("/ws/v1/cluster/apps", rest::toJson(submission));
}

rest::ApplicationReport ClusterClient::application(const std::string& applicationId) {
  return rest::applicationReportFromJson(http_.getJson("/ws/v1/cluster/apps/" + applicationId));
}

void ClusterClient::kill(const std::string& applicationId) {
  http_.putJson("/ws/v1/cluster/apps/" + applicationId + "/state",
                rest::toJson(rest::AppStateMessage{rest::app_state::kKilled}));
}

std::vector<rest::ApplicationReport> ClusterClient::applications(
    const std::vector<std::string>& states) {
  std::string query;
  for (const std::string& state : states) query += (query.empty() ? "?states=" : ",") + state;
  return rest::applicationReportsFromJson(http_.getJson("/ws/v1/cluster/apps" + query));
}

rest::ClusterMetrics ClusterClient::metrics() {
  return rest::clusterMetricsFromJson(http_.getJson("/ws/v1/cluster/metrics"));
}

rest::ClusterInfo ClusterClient::info() {
  return rest::clusterInfoFromJson(http_.getJson("/ws/v1/cluster/info"));
}

std::vector<rest::NodeReport> ClusterClient::nodes() {
  return rest::nodeReportsFromJson(http_.getJson("/ws/v1/cluster/nodes"));
}

rest::ApplicationReport applicationReportRidingOut(
    ClusterClient& cluster, const std::string& applicationId,
    const std::function<void(const std::string&)>& say, const OutagePatience& patience) {
  const auto started = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> outageSince;
  std::chrono::milliseconds delay = patience.initialDelay;
  while (true) {
    try {
      rest::ApplicationReport report = cluster.application(applicationId);
      if (outageSince && say) {
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::steady_clock::now() - *outageSince)
                                 .count();
        say("the resource manager at " + cluster.address() + " answers again (after " +
            std::to_string(seconds) + " s); " + applicationId + " is " + report.state);
      }
      return report;
    } catch (const rest::HttpError& error) {
      const long status = error.status();
      const bool unreachable =
          error.isTransportError() || status == 502 || status == 503 || status == 504;
      const auto now = std::chrono::steady_clock::now();
      if (!unreachable || now - started >= patience.total) throw;
      if (!outageSince) {
        outageSince = now;
        if (say) {
          say("the resource manager at " + cluster.address() + " does not answer (" +
              (error.isTransportError() ? error.detail() : "HTTP " + std::to_string(status)) +
              "); waiting up to " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(patience.total).count()) +
              " s for it to come back to learn how " + applicationId + " is doing");
        }
      }
      std::this_thread::sleep_for(delay);
      delay = std::min(patience.maxDelay, delay * 2);
    }
  }
}

std::string shellQuote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string pageUrlWithToken(const std::string& trackingUrl, const std::string& controlToken) {
  std::string url = trackingUrl;
  if (url.empty() || url.back() != '/') url += '/';
  return url + "?token=" + controlToken;
}

void stopOnInterrupt(const std::function<bool()>& interrupted, bool& stopped,
                     const std::string& applicationId, const std::string& doing,
                     const std::string& verb, const std::function<void()>& stop) {
  if (stopped || !interrupted || !interrupted()) return;
  stopped = true;
  std::cerr << "\ntide: interrupted; " << doing << " " << applicationId << "\n";
  try {
    stop();
  } catch (const std::exception& e) {
    std::cerr << "tide: could not " << verb << " " << applicationId << ": " << e.what() << "\n";
  }
}

bool isFinal(const rest::ApplicationReport& report) {
  return report.state == rest::app_state::kFinished || report.state == rest::app_state::kFailed ||
         report.state == rest::app_state::kKilled;
}

}  // namespace tide::deploy
