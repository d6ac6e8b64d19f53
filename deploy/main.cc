// `tide <command> [...]`: the one entry point of the tide command line.

#include <cstring>
#include <iostream>
#include <string>

#include "common/version.h"
#include "deploy/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

// Add a command here and in commands.h; `tide --help` lists them in this order.
constexpr Command kCommands[] = {
    {"run", "Run a job on this machine (embedded resource manager and node manager)",
     tide::deploy::runRunCommand},
    {"submit", "Submit a job's application master to a running tide-rm",
     tide::deploy::runSubmitCommand},
    {"status", "Show a running application's allocation: executors, tasks, decisions",
     tide::deploy::runStatusCommand},
    {"app", "List, show and kill the applications of a tide-rm (as `yarn application`)",
     tide::deploy::runAppCommand},
    {"token", "Print a client token or node credential derived from the cluster secret",
     tide::deploy::runTokenCommand},
    {"simulate", "Replay a workload trace against the allocation policy on a virtual clock",
     tide::deploy::runSimulateCommand},
    {"tune", "Replay a trace under a grid of policies and settings; print the Pareto frontier",
     tide::deploy::runTuneCommand},
};

void printUsage(std::ostream& out) {
  out << "Usage: tide <command> [OPTIONS]\n\n"
         "tide is an elastic application master: it grows and shrinks a job's executors with\n"
         "the work (Spark's dynamic allocation).\n\nCommands:\n";
  for (const Command& command : kCommands) {
    const std::string name = command.name;
    out << "  " << name << std::string(name.size() < 12 ? 12 - name.size() : 1, ' ')
        << command.summary << "\n";
  }
  out << "\nOptions:\n"
         "  -h, --help                  Print this help and exit\n"
         "  -V, --version               Print the version, git commit and build type, and exit\n"
         "\nRun `tide <command> --help` for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    printUsage(std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    printUsage(std::cout);
    return 0;
  }
  if (name == "--version" || name == "-V" || name == "version") {
    std::cout << tide::versionLine("tide") << "\n";
    return 0;
  }
  for (const Command& command : kCommands) {
    // The command sees itself as argv[0], as CommandLine expects.
    if (name == command.name) return command.run(argc - 1, argv + 1);
  }
  std::cerr << "tide: error: unknown command '" << name << "' (see tide --help)\n";
  return 2;
}
