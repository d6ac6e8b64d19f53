#include "deploy/cluster_client.h"

#include <stdexcept>

namespace tide::deploy {

ClusterClient::ClusterClient(const std::string& rmAddress)
    : address_(rmAddress), http_(rmAddress) {}

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

rest::ClusterMetrics ClusterClient::metrics() {
  return rest::clusterMetricsFromJson(http_.getJson("/ws/v1/cluster/metrics"));
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

bool isFinal(const rest::ApplicationReport& report) {
  return report.state == rest::app_state::kFinished || report.state == rest::app_state::kFailed ||
         report.state == rest::app_state::kKilled;
}

}  // namespace tide::deploy
