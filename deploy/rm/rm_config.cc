#include "deploy/rm/rm_config.h"

#include <algorithm>
#include <filesystem>

#include "common/strings.h"
#include "rest/messages/credentials.h"

namespace tide::rm {

RmConfig RmConfig::fromProperties(const Properties& properties) {
  RmConfig config;
  config.host = properties.getString("rm.host");
  const int64_t port = properties.getInt("rm.port");
  if (port < 0 || port > 65535) {
    throw ConfigError(properties.describe("rm.port") + ": must be a port number (0-65535)");
  }
  config.port = static_cast<int>(port);
  config.spreadOut = properties.getBool("rm.spreadOut");
  config.nodeExpiryMs = properties.getDuration("rm.nodeExpiry");
  if (config.nodeExpiryMs <= 0) {
    throw ConfigError(properties.describe("rm.nodeExpiry") + ": must be positive");
  }
  config.amLivenessExpiryMs = properties.getDuration("rm.amLivenessExpiry");
  if (config.amLivenessExpiryMs <= 0) {
    throw ConfigError(properties.describe("rm.amLivenessExpiry") + ": must be positive");
  }
  const int64_t attempts = properties.getInt("rm.maxAppAttempts");
  if (attempts < 1 || attempts > 1000) {
    throw ConfigError(properties.describe("rm.maxAppAttempts") + ": must be between 1 and 1000");
  }
  config.maxAppAttempts = static_cast<int>(attempts);
  const std::string authentication = toLower(properties.getString("rm.authentication"));
  if (authentication != "secret" && authentication != "none") {
    throw ConfigError(properties.describe("rm.authentication") + ": expected secret or none");
  }
  config.authenticate = authentication == "secret";
  config.secretFile = rest::clusterSecretFile(properties);
  config.maxAmShare = properties.getDouble("rm.maxAmShare");
  if (!(config.maxAmShare > 0.0 && config.maxAmShare <= 1.0)) {
    throw ConfigError(properties.describe("rm.maxAmShare") +
                      ": must be above 0 and at most 1 (a share of the cluster)");
  }
  const int64_t completed = properties.getInt("rm.maxCompletedApplications");
  if (completed < 0 || completed > 1'000'000) {
    throw ConfigError(properties.describe("rm.maxCompletedApplications") +
                      ": must be between 0 and 1000000");
  }
  config.maxCompletedApplications = static_cast<int>(completed);
  const std::string store =
      properties.has("rm.stateStore.dir") ? properties.getString("rm.stateStore.dir") : "";
  if (toLower(store) == "none") {
    config.stateStoreDir.clear();
  } else if (!store.empty()) {
    config.stateStoreDir = store;
  } else if (config.port != 0) {
    config.stateStoreDir =
        (std::filesystem::path(config.secretFile).parent_path() / "rm-state").string();
  }
  config.tls = rest::TlsSettings::fromProperties(properties);
  return config;
}

int64_t RmConfig::nodeHeartbeatIntervalMs() const {
  if (nodeExpiryMs == kInfiniteMs) return 1000;
  return std::clamp<int64_t>(nodeExpiryMs / 4, 1, 1000);
}

}  // namespace tide::rm
