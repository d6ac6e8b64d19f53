// `tide simulate`: replays a workload trace against the real allocation policy on a virtual
// clock and prints, as JSON Lines, how the executor set followed the work.

#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/simulator.h"
#include "allocation/workload_trace.h"
#include "common/command_line.h"
#include "common/config.h"
#include "deploy/commands.h"

namespace tide::deploy {
namespace {

constexpr const char* kSynopsis =
    "Replays a workload trace (JSON Lines: stages of tasks, uncache, job_end, set_bounds,\n"
    "executor_lost) against the real dynamic allocation policy on a virtual clock, with a\n"
    "modelled resource manager granting each requested executor after --grant-delay.\n"
    "Prints one JSON line per allocation tick where something changed, then a summary line.\n"
    "--trace is required. Exit status: 0 done, 1 the run cannot finish, 2 bad usage, config\n"
    "or trace.";

// Durations on the command line take units like the config keys; a bare number is ms.
DurationMs parseDurationOption(const CommandLine& cli, const std::string& name,
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

}  // namespace

int runSimulateCommand(int argc, char** argv) {
  return runMain(
      [&] {
        CommandLine cli("tide simulate", kSynopsis);
        cli.addOption("trace", "FILE", "The workload trace to replay (JSON Lines)");
        cli.addOption("grant-delay", "DURATION",
                      "Time from an executor request to its grant (default 0; bare number: ms)");
        cli.addOption("until", "DURATION",
                      "Stop at this virtual time instead of when the work is done and the "
                      "executor set has settled");
        cli.showConfigKeys(
            {"dynamicAllocation.", "executor.cores", "executor.instances", "task.cpus"});
        if (!cli.parse(argc, argv)) return 0;

        const std::optional<std::string> tracePath = cli.option("trace");
        if (!tracePath) throw ConfigError("missing --trace FILE (see --help)");

        std::vector<std::string> warnings = cli.properties().unknownKeyWarnings();
        const allocation::AllocationConfig config =
            allocation::AllocationConfig::fromProperties(cli.properties(), &warnings);
        for (const auto& warning : warnings)
          std::cerr << "tide simulate: warning: " << warning << "\n";

        allocation::SimulationOptions options;
        options.grantDelay = parseDurationOption(cli, "grant-delay", 0);
        if (cli.option("until")) options.until = parseDurationOption(cli, "until", 0);

        allocation::Trace trace;
        try {
          trace = allocation::loadTrace(*tracePath);
        } catch (const allocation::TraceError& e) {
          throw ConfigError(e.what());
        }

        std::ios::sync_with_stdio(false);
        allocation::simulateToStream(config, trace, options, std::cout, std::cerr);
        return std::cout.good() ? 0 : 1;
      },
      "tide simulate");
}

}  // namespace tide::deploy
