#pragma once

#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "am/containers/container_allocator.h"
#include "am/scheduler/task_scheduler.h"
#include "common/clock.h"
#include "rest/tls_settings.h"

namespace tide {
class Properties;
}

namespace tide::am {

// What of the status port needs the application's control token (ui.auth; am/control_auth.h).
enum class UiAuth { kWrites, kAll };

// Everything the ApplicationMaster reads from its configuration, checked once at start.
struct AmConfig {
  allocation::AllocationConfig allocation;
  SchedulerConfig scheduler;
  // storage.decommission.* and executor.decommission.forceKillTimeout (decommission.enabled is
  // the policy's: allocation.decommissionEnabled).
  DecommissionConfig decommission;
  ContainerAllocatorConfig containers;
  std::string host = "127.0.0.1";     // am.host
  int uiPort = 4040;                  // ui.port; 0 = ephemeral
  int portMaxRetries = 16;            // port.maxRetries: ui.port taken, try the next ones
  int uiMaxRequestsPerSecond = 1000;  // ui.maxRequestsPerSecond; 0 = no limit
  UiAuth uiAuth = UiAuth::kWrites;    // ui.auth
  DurationMs heartbeatInterval = 3000;
  DurationMs initialAllocationInterval = 200;
  DurationMs networkTimeout = 120000;  // executors silent this long are lost
  DurationMs executorSyncWait = 1000;  // long-poll bound and executors' heartbeat
  bool session = false;
  DurationMs keepAlive = 0;  // how long the AM stays up after its job ended
  // --report: where the run's JSON summary goes, written before the AM unregisters so that
  // whoever follows the application finds it once the application has ended. "" = none.
  std::string reportFile;
  // am.stagingDir resolved: the base directory of applications' recovery journals; "" for none.
  std::string stagingDir;
  // am.journalCompactionSize: the journal's size past which it is compacted (0: never).
  uint64_t journalCompactionBytes = 64ull << 20;
  // history.dir resolved: where the AM writes its event log (am/status/event_log.h); "" for none.
  std::string historyDir;
  // tls.*, or the node's TLS files from the container's environment: HTTPS on the status and
  // executor ports, https:// for node managers and executors' block servers.
  rest::TlsSettings tls;
  // --conf pairs every executor is started with (cores, cpus, timeouts, logging).
  std::vector<std::pair<std::string, std::string>> executorConf;

  // Throws ConfigError naming the key and value; appends warnings.
  static AmConfig fromProperties(const Properties& props, std::vector<std::string>* warnings);
};

// A directory key of the am.stagingDir kind: its absolute path; the default ($HOME/.tide/<name>,
// or /tmp/tide-<name>-<uid> without a HOME) when unset; "" for 'none'. Throws ConfigError for
// a relative path.
std::string directoryOf(const Properties& props, const std::string& key, const std::string& name);
// history.dir resolved so: where event logs are written, and where `tide history` and
// `tide status APP` read them.
std::string historyDirOf(const Properties& props);

}  // namespace tide::am
