#include "deploy/subcommands.h"

#include <iostream>
#include <string>

#include "common/version.h"

namespace tide::deploy {

void printSubcommandUsage(const SubcommandSet& set, std::ostream& out) {
  out << set.usage;
  for (size_t i = 0; i < set.count; ++i) {
    const std::string name = set.commands[i].name;
    out << "  " << name
        << std::string(name.size() < set.nameWidth ? set.nameWidth - name.size() : 1, ' ')
        << set.commands[i].summary << "\n";
  }
  out << "\nOptions:\n"
         "  -h, --help                  Print this help and exit\n"
         "  -V, --version               Print the version, git commit and build type, and exit\n"
         "\nRun `"
      << set.program << " <command> --help` for a command's options.\n";
}

int runSubcommand(const SubcommandSet& set, int argc, char** argv) {
  if (argc < 2) {
    printSubcommandUsage(set, std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || (set.wordAliases && name == "help")) {
    printSubcommandUsage(set, std::cout);
    return 0;
  }
  if (name == "--version" || name == "-V" || (set.wordAliases && name == "version")) {
    std::cout << versionLine(set.program) << "\n";
    return 0;
  }
  for (size_t i = 0; i < set.count; ++i) {
    if (name == set.commands[i].name) return set.commands[i].run(argc - 1, argv + 1);
  }
  std::cerr << set.program << ": error: unknown command '" << name << "'" << set.unknownHint
            << " (see " << set.program << " --help)\n";
  return 2;
}

}  // namespace tide::deploy
