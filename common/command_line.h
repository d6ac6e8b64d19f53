#pragma once

// The command line every tide binary shares, following spark-submit: `--properties-file FILE`,
// repeated `--conf key=value` (`-c`), `--help` (`-h`), `--version` (`-V`); plus the options and
// positional arguments each binary declares. Precedence: table defaults < properties file < --conf
// (in order).
//
//   CommandLine cli("tide-nm", "Runs a node manager that starts containers for tide-rm.");
//   cli.addOption("work-dir", "DIR", "Directory for containers (overrides nm.workDir)");
//   cli.addFlag("verbose", "Log at debug level");
//   return parseAndRun(cli, argc, argv, [&] {  // returns 0 once --help is printed
//     initLogging(cli.properties());
//     ...
//   });
//
// A binary with subcommands (`tide run JOB`) picks the subcommand from argv[1] and gives the
// rest to a CommandLine of its own: `cli.parse(argc - 1, argv + 1)` (argv[1] then plays argv[0]).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"

namespace tide {

class CommandLine {
 public:
  // `program` names the binary in the usage text ("tide run"); `synopsis` says what it does.
  CommandLine(std::string program, std::string synopsis);

  // `--name VALUE` or `--name=VALUE`. Given twice, the last one wins. `name` is without dashes.
  void addOption(std::string name, std::string valueName, std::string help);
  // `--name`, no value.
  void addFlag(std::string name, std::string help);
  // Positional arguments are matched in the order they are declared; optional ones must come
  // after the required ones.
  void addPositional(std::string name, std::string help, bool required = true);
  // Accepts any number of further positional arguments (e.g. the job's own arguments).
  void allowExtraPositionals(std::string name, std::string help);
  // Which configuration keys --help lists: those starting with one of `prefixes` (empty: all).
  void showConfigKeys(std::vector<std::string> prefixes);
  void hideConfigKeys();

  // Parses argv[1..argc); argv[0] is ignored. Returns false when --help or --version was
  // printed to stdout (the caller exits 0). Throws ConfigError on bad usage or a bad properties
  // file or value. Loads the properties file, then applies every --conf in order, then validates
  // known keys.
  bool parse(int argc, const char* const* argv);
  bool parse(int argc, char** argv) { return parse(argc, const_cast<const char* const*>(argv)); }
  // The arguments without the program name; for tests and for re-parsing.
  bool parse(const std::vector<std::string>& args);

  const Properties& properties() const { return properties_; }
  Properties& properties() { return properties_; }

  // The value of a declared option, nullopt when it was not given.
  std::optional<std::string> option(const std::string& name) const;
  // Whether a declared flag was given.
  bool flag(const std::string& name) const;
  // A declared positional by name, nullopt when an optional one was not given.
  std::optional<std::string> positional(const std::string& name) const;
  // All positional arguments in order, extra ones included.
  const std::vector<std::string>& positionals() const { return positionals_; }
  // The --properties-file given, if any.
  const std::optional<std::string>& propertiesFile() const { return propertiesFile_; }

  std::string usage() const;

 private:
  struct OptionSpec {
    std::string name;
    std::string valueName;  // empty: a flag
    std::string help;
  };
  struct PositionalSpec {
    std::string name;
    std::string help;
    bool required;
  };

  const OptionSpec* findOption(std::string_view name) const;
  // parse()'s last steps: enough positionals and no unexpected one; then the properties file,
  // the --conf settings in order, and validation.
  void checkPositionals() const;
  void loadProperties(const std::vector<std::string>& confs);
  const OptionSpec& requireDeclared(const std::string& name, bool wantFlag) const;

  std::string program_;
  std::string synopsis_;
  std::vector<OptionSpec> options_;
  std::vector<PositionalSpec> positionalSpecs_;
  std::optional<PositionalSpec> extraPositionals_;
  std::optional<std::vector<std::string>> configKeyPrefixes_ = std::vector<std::string>{};

  Properties properties_;
  std::optional<std::string> propertiesFile_;
  std::map<std::string, std::string> optionValues_;
  std::vector<std::string> flagsGiven_;
  std::vector<std::string> positionals_;
};

// Runs a binary's main body and turns exceptions into exit statuses: ConfigError prints
// "<program>: error: <message>" to stderr and returns 2; any other std::exception prints
// "<program>: <message>" and returns 1.
int runMain(const std::function<int()>& body, std::string_view program = "tide");

// What every binary's main does: parses `argv` into `cli` and runs `body`, both under runMain;
// 0 without running `body` when --help or --version was printed.
int parseAndRun(CommandLine& cli, int argc, char** argv, const std::function<int()>& body,
                std::string_view program = "tide");

}  // namespace tide
