// `tide <command> [...]`: the one entry point of the tide command line.

#include <iterator>

#include "deploy/commands.h"
#include "deploy/subcommands.h"

namespace {

// Add a command here and in commands.h; `tide --help` lists them in this order.
constexpr tide::deploy::Subcommand kCommands[] = {
    {"run", "Run a job on this machine (embedded resource manager and node manager)",
     tide::deploy::runRunCommand},
    {"submit", "Submit a job's application master to a running tide-rm",
     tide::deploy::runSubmitCommand},
    {"status", "Show an application's executors, tasks and decisions, or an ended one's end",
     tide::deploy::runStatusCommand},
    {"history", "Serve ended applications' pages and API from their event logs",
     tide::deploy::runHistoryCommand},
    {"app", "List, show and kill the applications of a tide-rm (as `yarn application`)",
     tide::deploy::runAppCommand},
    {"logs", "Print an application's container and task logs from every node (as `yarn logs`)",
     tide::deploy::runLogsCommand},
    {"token", "Print a client token or node credential derived from the cluster secret",
     tide::deploy::runTokenCommand},
    {"simulate", "Replay a workload trace against the allocation policy on a virtual clock",
     tide::deploy::runSimulateCommand},
    {"tune", "Replay a trace under a grid of policies and settings; print the Pareto frontier",
     tide::deploy::runTuneCommand},
};

}  // namespace

int main(int argc, char** argv) {
  static const tide::deploy::SubcommandSet kTide{
      "tide",
      "Usage: tide <command> [OPTIONS]\n\n"
      "tide is an elastic application master: it grows and shrinks a job's executors with\n"
      "the work (Spark's dynamic allocation).\n\nCommands:\n",
      kCommands,
      std::size(kCommands),
      12,
      true,
      ""};
  return tide::deploy::runSubcommand(kTide, argc, argv);
}
