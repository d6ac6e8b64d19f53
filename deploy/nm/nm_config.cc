#include "deploy/nm/nm_config.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tide::nm {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

// A key's explicit value and where it came from; for the keys outside common's table.
std::optional<Properties::Entry> extraKey(const Properties& properties, const char* key) {
  return properties.entry(key);
}

[[noreturn]] void invalid(const std::string& key, const std::string& value, const Origin& origin,
                          const std::string& problem) {
  throw ConfigError("invalid value '" + value + "' for " + key + " (" + origin.describe() +
                    "): " + problem);
}

}  // namespace

NodeManagerConfig NodeManagerConfig::fromProperties(const Properties& properties) {
  NodeManagerConfig config;
  config.rmUrl = properties.getString("nm.rm");
  while (!config.rmUrl.empty() && config.rmUrl.back() == '/') config.rmUrl.pop_back();
  if (config.rmUrl.rfind("http://", 0) != 0 && config.rmUrl.rfind("https://", 0) != 0) {
    throw ConfigError(properties.describe("nm.rm") + ": expected an http:// or https:// URL");
  }
  config.host = properties.getString("nm.host");
  if (config.host.empty()) throw ConfigError(properties.describe("nm.host") + ": empty");

  // The key table bounds both.
  config.port = static_cast<int>(properties.getInt("nm.port"));
  const std::optional<int64_t> cores = properties.getOptionalInt("nm.cores");
  config.capability.vCores = cores ? static_cast<int>(*cores) : detectCores();

  const std::optional<int64_t> memoryBytes = properties.getOptionalSizeBytes("nm.memory");
  if (memoryBytes && *memoryBytes < kMiB) {
    throw ConfigError(properties.describe("nm.memory") + ": expected at least 1 MiB");
  }
  config.capability.memoryMb = memoryBytes ? *memoryBytes / kMiB : detectMemoryMb();

  config.workDir = properties.getOptionalString("nm.workDir").value_or("");
  config.recoveryEnabled = properties.getBool("nm.recovery.enabled");
  config.logDir = properties.getOptionalString("nm.logDir").value_or("");
  config.logRetention = properties.getDuration("nm.logRetention");  // infinity: kept forever

  config.defaultHeartbeatInterval = properties.getDuration("nm.heartbeatInterval");
  if (properties.has("nm.heartbeatInterval")) {
    config.heartbeatInterval = config.defaultHeartbeatInterval;
  }
  if (config.defaultHeartbeatInterval == kInfiniteMs) {
    throw ConfigError(properties.describe("nm.heartbeatInterval") + ": must be finite");
  }

  if (auto entry = extraKey(properties, kMemoryEnforcementKey)) {
    auto mode = parseMemoryEnforcement(entry->value);
    if (!mode) {
      invalid(kMemoryEnforcementKey, entry->value, entry->origin,
              "expected auto, cgroup, watchdog or off");
    }
    config.memoryEnforcement = *mode;
  }
  if (auto entry = extraKey(properties, kStopGracePeriodKey)) {
    try {
      config.stopGracePeriod = parseDuration(entry->value, 1);
    } catch (const std::invalid_argument& e) {
      invalid(kStopGracePeriodKey, entry->value, entry->origin, e.what());
    }
    if (config.stopGracePeriod == kInfiniteMs) {
      invalid(kStopGracePeriodKey, entry->value, entry->origin, "must be finite");
    }
  }
  return config;
}

int detectCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

int64_t detectMemoryMb() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) return 1024;
  const int64_t totalMb = static_cast<int64_t>(pages) * pageSize / kMiB;
  return std::max<int64_t>(1, totalMb * 8 / 10);
}

std::string defaultWorkDir(int port) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  if (port != 0) return base + "/tide-nm-" + std::to_string(port);
  // An ephemeral port is a new one each run, so there is no previous run to clean up after.
  std::string pattern = base + "/tide-nm-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a work dir under " + base + ": " +
                             std::strerror(errno));
  }
  return pattern;
}

}  // namespace tide::nm
