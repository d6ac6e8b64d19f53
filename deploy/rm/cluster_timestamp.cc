#include "deploy/rm/cluster_timestamp.h"

#include <exception>

namespace tide::rm {

std::string clusterTimestampName(int64_t ms) {
  return "tide-rm-cluster-" + std::to_string(ms);
}

namespace {

// The claim of `ms`; nullopt when taken. An error of the socket layer becomes `error`.
std::optional<HostUniqueName> tryClaim(int64_t ms, std::string* error) {
  try {
    return HostUniqueName::claim(clusterTimestampName(ms));
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

}  // namespace

ClusterTimestamp claimClusterTimestamp(int64_t stored, int64_t nowMs, int maxTries) {
  ClusterTimestamp result;
  std::string error;
  if (stored > 0) {
    result.ms = stored;
    result.claim = tryClaim(stored, &error);
    if (!result.claim) {
      result.warning = "another tide-rm on this host holds the cluster timestamp " +
                       std::to_string(stored) + " of this state store" +
                       (error.empty() ? "" : " (" + error + ")") +
                       "; its application ids may repeat this cluster's";
    }
    return result;
  }
  for (int tries = 0; tries < maxTries && error.empty(); ++tries) {
    result.claim = tryClaim(nowMs + tries, &error);
    if (result.claim) {
      result.ms = nowMs + tries;
      return result;
    }
  }
  result.ms = nowMs;
  result.warning = "could not claim a cluster timestamp of its own on this host (" +
                   (error.empty() ? std::to_string(maxTries) + " milliseconds from " +
                                        std::to_string(nowMs) + " are held by other tide-rm"
                                  : error) +
                   "); application ids may repeat those of another tide-rm";
  return result;
}

}  // namespace tide::rm
