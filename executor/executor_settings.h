#pragma once

// What one tide-executor process is told at start: where its AM is and who it is (from the
// environment its node manager gave the container), and its size and timeouts (from the
// properties). Immutable once read; every problem is a ConfigError, so the binary exits 2.

#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/config.h"
#include "rest/tls_settings.h"

namespace tide::executor {

// The environment variables the executor reads. TIDE_APP_SECRET is removed from the process's
// own environment right after it is read, so no task ever inherits it.
inline constexpr char kAmAddressEnv[] = "TIDE_AM_ADDRESS";
// A file holding the address of the application's current AM attempt (written by each attempt
// in the application's staging directory): where to look when the AM stops answering.
inline constexpr char kAmAddressFileEnv[] = "TIDE_AM_ADDRESS_FILE";
inline constexpr char kAppSecretEnv[] = "TIDE_APP_SECRET";
inline constexpr char kExecutorIdEnv[] = "TIDE_EXECUTOR_ID";
inline constexpr char kContainerIdEnv[] = "TIDE_CONTAINER_ID";
// Optional: the node manager node the container runs on, the AM's unit of locality.
inline constexpr char kNodeIdEnv[] = "TIDE_NODE_ID";
// Optional: the host its node manager listens on (nm.host). The block server binds it and the
// executor advertises it; without it, the machine's host name.
inline constexpr char kNodeHostEnv[] = "TIDE_NODE_HOST";

// Optional: where the node manager keeps this container's logs (common/app_logs.h); each
// task's stdout and stderr go to tasks/<stage>-<index>-<attempt>/ below it. Without it, in the
// task's own dir.
inline constexpr char kLogDirEnv[] = "TIDE_LOG_DIR";

struct ExecutorSettings {
  std::string amAddress;      // "http://host:port"
  std::string amAddressFile;  // TIDE_AM_ADDRESS_FILE; "" when not given
  std::string appSecret;      // sent as a bearer token; never logged
  std::string executorId;     // e1, e2, ...
  std::string containerId;    // the NM's container this process runs in
  std::string nodeId;         // TIDE_NODE_ID; empty when not given
  std::string logDir;         // TIDE_LOG_DIR; empty when not given
  std::string host;           // TIDE_NODE_HOST, else the host name: bound and advertised
  int blockPort = 0;          // where this executor serves its blocks (set once it listens)
  int cores = 1;              // executor.cores
  int taskCpus = 1;           // task.cpus
  DurationMs networkTimeout = 120'000;
  // tls.* (from the AM's --conf), else the node's TLS files (TIDE_TLS_*): HTTPS on the block
  // server, and the CA the AM and other executors are verified against.
  rest::TlsSettings tls;

  // Tasks that may run at once: executor.cores / task.cpus.
  int taskSlots() const { return cores / taskCpus; }
  // One line for the startup log; leaves the secret out.
  std::string describe() const;
};

// Looks up an environment variable; nullopt when unset. Injected so tests need not touch the
// process environment.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv).
EnvironmentLookup processEnvironment();

// The machine's host name (gethostname), "localhost" when it has none.
std::string localHostName();

// Reads the settings; `amOverride` (the --am option) replaces TIDE_AM_ADDRESS. Throws
// ConfigError naming every missing variable, or the bad key.
ExecutorSettings readExecutorSettings(const Properties& properties,
                                      const EnvironmentLookup& environment,
                                      const std::optional<std::string>& amOverride = std::nullopt);

}  // namespace tide::executor
