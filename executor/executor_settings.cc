#include "executor/executor_settings.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace tide::executor {
namespace {

// Reads the variables the node manager must have set; all missing ones are named at once.
class RequiredEnvironment {
 public:
  explicit RequiredEnvironment(const EnvironmentLookup& environment) : environment_(environment) {}

  std::string get(const std::string& name, const std::string& what) {
    std::optional<std::string> value = environment_(name);
    if (value && !value->empty()) return *value;
    missing_ += (missing_.empty() ? "" : "; ") + name + " is not set (" + what + ")";
    return "";
  }
  void throwIfMissing() const {
    if (missing_.empty()) return;
    throw ConfigError(missing_ +
                      ": the node manager sets these when it starts the executor's container");
  }

 private:
  const EnvironmentLookup& environment_;
  std::string missing_;
};

}  // namespace

std::string ExecutorSettings::describe() const {
  std::ostringstream text;
  text << "executor " << executorId << " in container " << containerId << ", AM " << amAddress
       << ", executor.cores " << cores << ", " << taskSlots() << " task slots, network.timeout "
       << formatDuration(networkTimeout);
  return text.str();
}

EnvironmentLookup processEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string localHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

ExecutorSettings readExecutorSettings(const Properties& properties,
                                      const EnvironmentLookup& environment,
                                      const std::optional<std::string>& amOverride) {
  ExecutorSettings settings;
  RequiredEnvironment required(environment);
  if (amOverride && !amOverride->empty()) {
    settings.amAddress = *amOverride;
  } else {
    settings.amAddress = required.get(kAmAddressEnv, "the AM's address, http://host:port");
  }
  settings.appSecret = required.get(kAppSecretEnv, "the application secret");
  settings.executorId = required.get(kExecutorIdEnv, "this executor's id");
  settings.containerId = required.get(kContainerIdEnv, "this executor's container id");
  required.throwIfMissing();
  settings.nodeId = environment(kNodeIdEnv).value_or("");
  settings.logDir = environment(kLogDirEnv).value_or("");
  settings.amAddressFile = environment(kAmAddressFileEnv).value_or("");
  settings.host = environment(kNodeHostEnv).value_or("");
  if (settings.host.empty()) settings.host = localHostName();
  if (settings.amAddress.rfind("http://", 0) != 0 && settings.amAddress.rfind("https://", 0) != 0) {
    throw ConfigError("the AM address '" + settings.amAddress +
                      "' is not an http:// or https:// URL");
  }
  while (settings.amAddress.size() > 1 && settings.amAddress.back() == '/') {
    settings.amAddress.pop_back();
  }

  settings.cores = static_cast<int>(properties.getInt("executor.cores"));  // at least 1
  settings.taskCpus = static_cast<int>(properties.getInt("task.cpus"));
  if (settings.taskCpus > settings.cores) {
    throw ConfigError(properties.describe("task.cpus") + " exceeds " +
                      properties.describe("executor.cores") + ": the executor could run no task");
  }
  settings.tls = rest::TlsSettings::fromProperties(properties, environment);
  settings.networkTimeout = properties.getDuration("network.timeout");
  return settings;
}

}  // namespace tide::executor
