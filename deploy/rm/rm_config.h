#pragma once

// tide-rm's configuration: an immutable struct read once from the `rm.*` keys (whose defaults
// live in common's key table, the one place defaults are kept).

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/config.h"
#include "rest/tls_settings.h"

namespace tide::rm {

struct RmConfig {
  std::string host = "127.0.0.1";
  int port = 8088;  // 0 = ephemeral
  // Spread executor containers over as many nodes as possible (false: pack them).
  bool spreadOut = true;
  // A node without a heartbeat for this long is LOST and its containers with it.
  DurationMs nodeExpiryMs = 10000;
  // An AM attempt without an allocate (its heartbeat) for this long has failed.
  DurationMs amLivenessExpiryMs = 60000;
  // Upper bound on any application's attempts; an application may ask for fewer.
  int maxAppAttempts = 2;
  // rm.authentication=secret: every caller proves itself with a credential derived from the
  // cluster secret (rest/messages/credentials.h); false (none) lets anyone do anything.
  bool authenticate = true;
  // rm.secretFile, resolved (~/.tide/rm.secret when not set).
  std::string secretFile;
  // YARN's maximum-am-resource-percent: AM containers hold at most this share of the
  // cluster's memory and of its vCores (one AM may always run when none does).
  double maxAmShare = 0.5;
  // rm.maxCompletedApplications: finished applications kept (YARN's
  // max-completed-applications); the oldest are forgotten beyond it.
  int maxCompletedApplications = 1000;
  // rm.stateStore.dir, resolved: where applications, attempts and the id counters are kept
  // across restarts (deploy/rm/state_store.h); empty = none. The default is rm-state next to
  // rm.secretFile, or none with rm.port=0 (an ephemeral port cannot be restarted on).
  std::string stateStoreDir;

  // tls.*: HTTPS on rm.port, and node managers called over https://.
  rest::TlsSettings tls;

  // Reads rm.host, rm.port, rm.spreadOut, rm.nodeExpiry, rm.amLivenessExpiry,
  // rm.maxAppAttempts, rm.maxAmShare, rm.authentication, rm.secretFile, rm.stateStore.dir and
  // tls.*; throws ConfigError naming the key for values out of range.
  static RmConfig fromProperties(const Properties& properties);

  // What the RM tells node managers: often enough that a couple of lost heartbeats do not
  // expire a healthy node, and at most once a second.
  int64_t nodeHeartbeatIntervalMs() const;
};

}  // namespace tide::rm
