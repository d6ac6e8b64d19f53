#pragma once

// tide-nm's configuration, read once from Properties (the nm.* keys) into an immutable
// struct; derived defaults (cores, memory, work dir) are resolved here.

#include <optional>
#include <string>

#include "common/clock.h"
#include "common/config.h"
#include "deploy/nm/memory_enforcement.h"
#include "rest/messages/node.h"

namespace tide::nm {

// Keys tide-nm reads that are not (yet) in common's key table; read with Properties::entry()
// meanwhile, so they work from --conf and properties files either way.
inline constexpr char kMemoryEnforcementKey[] = "nm.memoryEnforcement";  // auto|cgroup|watchdog|off
inline constexpr char kStopGracePeriodKey[] = "nm.stopGracePeriod";      // duration, bare: ms

struct NodeManagerConfig {
  std::string rmUrl;          // nm.rm
  std::string host;           // nm.host
  int port = 8042;            // nm.port; 0 = ephemeral
  rest::Resource capability;  // nm.cores, nm.memory (MiB)
  std::string workDir;        // nm.workDir; empty = derived once the port is known
  std::string logDir;         // nm.logDir; empty = <workDir>/logs
  DurationMs logRetention = 7 * 24 * 3600 * 1000LL;  // nm.logRetention
  // nm.heartbeatInterval when given explicitly (it then wins over the RM's suggestion).
  std::optional<DurationMs> heartbeatInterval;
  DurationMs defaultHeartbeatInterval = 1000;  // the table default of nm.heartbeatInterval
  MemoryEnforcement memoryEnforcement = MemoryEnforcement::kAuto;
  DurationMs stopGracePeriod = 2000;
  bool recoveryEnabled = true;  // nm.recovery.enabled

  // Throws ConfigError naming the key and value for anything invalid.
  static NodeManagerConfig fromProperties(const Properties& properties);
};

// Cores this process may run on (its CPU affinity), at least 1.
int detectCores();
// 80% of physical memory, in MiB: the rest is left to the OS and the NM itself.
int64_t detectMemoryMb();
// <$TMPDIR or /tmp>/tide-nm-<port>; for port 0, a fresh mkdtemp directory tide-nm-XXXXXX.
std::string defaultWorkDir(int port);

}  // namespace tide::nm
