#pragma once

// A command line made of subcommands (`tide <command>`, `tide app <command>`): one table of
// {name, summary, run}, the usage that lists it, and the dispatch on argv[1] with --help and
// --version.

#include <cstddef>
#include <iosfwd>

namespace tide::deploy {

struct Subcommand {
  const char* name;
  const char* summary;
  // Sees its own name as argv[0], as CommandLine expects.
  int (*run)(int argc, char** argv);
};

struct SubcommandSet {
  const char* program;  // "tide app": in the usage, the errors and --version
  const char* usage;    // the usage's opening lines, up to and including "Commands:\n"
  const Subcommand* commands;
  size_t count;
  size_t nameWidth;         // the column the summaries start in (after two spaces)
  bool wordAliases;         // `help` and `version` too
  const char* unknownHint;  // after "unknown command 'X'", e.g. ": expected a or b"
};

void printSubcommandUsage(const SubcommandSet& set, std::ostream& out);

// No argument: the usage on stderr, 2. --help / --version: on stdout, 0. A command: what it
// returns. Anything else: an error naming it, 2.
int runSubcommand(const SubcommandSet& set, int argc, char** argv);

}  // namespace tide::deploy
