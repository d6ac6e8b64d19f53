#pragma once

// The cluster timestamp of a tide-rm start: epoch ms of the cluster's first start, in every
// application, attempt and container id (YARN's clusterTimestamp). Ids key state that all of a
// user's clusters share (the AM's staging directory and recovery journal, the history's event
// logs), so no two live tide-rm on one host may use one timestamp: each holds its own as a
// HostUniqueName ("tide-rm-cluster-<ms>") for as long as it runs. A first start that finds its
// millisecond taken (tide-rm started together, as tests and parallel `tide run` do) takes the
// next free one; a restart keeps the stored one, which its store's lock makes its own.

#include <cstdint>
#include <optional>
#include <string>

#include "common/host_unique_name.h"

namespace tide::rm {

struct ClusterTimestamp {
  int64_t ms = 0;
  std::optional<HostUniqueName> claim;  // empty when the timestamp could not be claimed
  std::string warning;                  // why not, for the log; "" when claimed
};

// The name a tide-rm with cluster timestamp `ms` holds.
std::string clusterTimestampName(int64_t ms);

// `stored` > 0 (a restart: the timestamp from the state store) is kept, claimed if free. Else the
// first free millisecond from `nowMs` on, trying at most `maxTries`; past them `nowMs` unclaimed.
ClusterTimestamp claimClusterTimestamp(int64_t stored, int64_t nowMs, int maxTries = 1000);

}  // namespace tide::rm
