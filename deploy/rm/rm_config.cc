#include "deploy/rm/rm_config.h"

#include <algorithm>
#include <filesystem>

#include "common/strings.h"
#include "rest/messages/credentials.h"

namespace tide::rm {

RmConfig RmConfig::fromProperties(const Properties& properties) {
  RmConfig config;
  config.host = properties.getString("rm.host");
  config.port = static_cast<int>(properties.getInt("rm.port"));  // the key table bounds it
  config.spreadOut = properties.getBool("rm.spreadOut");
  config.nodeExpiryMs = properties.getDuration("rm.nodeExpiry");
  config.amLivenessExpiryMs = properties.getDuration("rm.amLivenessExpiry");
  config.maxAppAttempts = static_cast<int>(properties.getInt("rm.maxAppAttempts"));
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
  config.maxCompletedApplications =
      static_cast<int>(properties.getInt("rm.maxCompletedApplications"));
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
