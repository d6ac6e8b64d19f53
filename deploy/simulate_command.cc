// `tide simulate`: replays a workload trace against the real allocation policy on a virtual
// clock and prints, as JSON Lines, how the executor set followed the work.

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/simulation_plot.h"
#include "allocation/simulator.h"
#include "allocation/speculation.h"
#include "allocation/workload_trace.h"
#include "common/command_line.h"
#include "common/config.h"
#include "deploy/commands.h"
#include "deploy/replay_command.h"

namespace tide::deploy {
namespace {

constexpr const char* kSynopsis =
    "Replays a workload trace (JSON Lines: stages of tasks, uncache, job_end, set_bounds,\n"
    "executor_lost) against the real dynamic allocation policy on a virtual clock, with a\n"
    "modelled resource manager granting each requested executor after --grant-delay\n"
    "(and, with speculation=true, speculative copies of slow tasks as the AM launches them).\n"
    "Prints one JSON line per allocation tick where something changed, then a summary line.\n"
    "--trace is required. Exit status: 0 done, 1 the run cannot finish, 2 bad usage, config\n"
    "or trace.";

}  // namespace

int runSimulateCommand(int argc, char** argv) {
  return runMain(
      [&] {
        CommandLine cli = replayCommandLine("tide simulate", kSynopsis);
        cli.addOption("grant-delay", "DURATION",
                      "Time from an executor request to its grant (default 0; bare number: ms)");
        cli.addOption("until", "DURATION",
                      "Stop at this virtual time instead of when the work is done and the "
                      "executor set has settled");
        cli.addOption("plot", "FILE",
                      "Also draw the run as an SVG chart in FILE: target, live and busy "
                      "executors and pending tasks over time, as the AM's page draws them");
        if (!cli.parse(argc, argv)) return 0;

        const std::string tracePath = requireTracePath(cli);
        const allocation::AllocationConfig config = replayAllocationConfig(cli, "tide simulate");

        allocation::SimulationOptions options;
        options.grantDelay = replayDurationOption(cli, "grant-delay", 0);
        if (cli.option("until")) options.until = replayDurationOption(cli, "until", 0);
        options.speculation = allocation::readSpeculationSettings(cli.properties());

        const allocation::Trace trace = loadReplayTrace(tracePath);
        try {
          // A task wider than an executor: as much a bad input as a malformed line.
          allocation::checkTraceFits(config, trace);
        } catch (const allocation::TraceError& e) {
          throw ConfigError(e.what());
        }

        std::ios::sync_with_stdio(false);
        const std::optional<std::string> plotFile = cli.option("plot");
        if (!plotFile) {
          allocation::simulateToStream(config, trace, options, std::cout, std::cerr);
          return std::cout.good() ? 0 : 1;
        }
        // Opened first: a plot that cannot be written fails before the run, not after it.
        std::ofstream plot(*plotFile, std::ios::trunc);
        if (!plot) throw ConfigError("--plot " + *plotFile + ": cannot write: " + strerror(errno));
        std::vector<allocation::SimulationLine> lines;
        allocation::SimulationObserver observer;
        observer.onLine = [&](const allocation::SimulationLine& line) {
          std::cout << allocation::toJsonLine(line) << '\n';
          lines.push_back(line);
        };
        observer.onDiagnostic = [](const std::string& message) { std::cerr << message << '\n'; };
        const auto summary = allocation::simulate(config, trace, options, observer);
        std::cout << allocation::toJsonLine(summary) << '\n' << std::flush;
        plot << allocation::plotSimulationSvg(lines, summary);
        if (!plot.flush()) throw std::runtime_error("--plot " + *plotFile + ": write failed");
        return std::cout.good() ? 0 : 1;
      },
      "tide simulate");
}

}  // namespace tide::deploy
