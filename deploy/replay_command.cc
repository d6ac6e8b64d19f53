#include "deploy/replay_command.h"

#include <iostream>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/config.h"

namespace tide::deploy {

CommandLine replayCommandLine(std::string program, std::string synopsis) {
  CommandLine cli(std::move(program), std::move(synopsis));
  cli.addOption("trace", "FILE", "The workload trace to replay (JSON Lines)");
  cli.showConfigKeys(
      {"dynamicAllocation.", "executor.cores", "executor.instances", "task.cpus", "speculation"});
  return cli;
}

std::string requireTracePath(const CommandLine& cli) {
  const std::optional<std::string> tracePath = cli.option("trace");
  if (!tracePath) throw ConfigError("missing --trace FILE (see --help)");
  return *tracePath;
}

DurationMs replayDurationOption(const CommandLine& cli, const std::string& name,
                                DurationMs fallback) {
  const std::optional<std::string> text = cli.option(name);
  if (!text) return fallback;
  DurationMs value;
  try {
    value = parseDuration(*text, 1);
  } catch (const std::invalid_argument& e) {
    throw ConfigError("--" + name + " '" + *text + "': " + e.what());
  }
  if (value == kInfiniteMs) throw ConfigError("--" + name + " '" + *text + "': must be finite");
  return value;
}

allocation::AllocationConfig replayAllocationConfig(const CommandLine& cli,
                                                    const std::string& program) {
  std::vector<std::string> warnings = cli.properties().unknownKeyWarnings();
  allocation::AllocationConfig config =
      allocation::AllocationConfig::fromProperties(cli.properties(), &warnings);
  for (const auto& warning : warnings) std::cerr << program << ": warning: " << warning << "\n";
  return config;
}

allocation::Trace loadReplayTrace(const std::string& path) {
  try {
    return allocation::loadTrace(path);
  } catch (const allocation::TraceError& e) {
    throw ConfigError(e.what());
  }
}

}  // namespace tide::deploy
