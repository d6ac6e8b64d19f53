// Properties files, --conf values, durations and sizes (common/config.h, common/command_line.h)
// and the readers that turn properties into each component's settings. The input is taken
//  - as a properties file (Properties::loadText, what loadFile reads): every key is read back
//    with each typed getter, the whole is validated, unknown keys get their warnings, the
//    settings of the allocation policy, tide-rm and the Slurm backend are read from it, and
//    toText() must load back to the same entries;
//  - as a command line, one argument per line (`--conf key=value`, `-c`, options, positionals);
//  - its first line as a duration and as a size, whose formatted form must parse back.
// Bad text is a ConfigError (std::invalid_argument for parseDuration/parseSize); a getter of a
// key of another kind is a std::logic_error by contract. Anything else escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "allocation/allocation_config.h"
#include "am/slurm/slurm_client.h"
#include "common/command_line.h"
#include "common/config.h"
#include "deploy/rm/rm_config.h"

namespace {

template <typename Read>
void tolerate(Read read) {
  try {
    read();
  } catch (const tide::ConfigError&) {
  } catch (const std::logic_error&) {
    // a getter of a key that is not in the table or of another kind: a programming error by
    // contract, not a parse failure
  }
}

void readEveryKey(const tide::Properties& properties) {
  for (const auto& [key, entry] : properties.entries()) {
    const std::string& k = key;
    tolerate([&] { (void)properties.getString(k); });
    tolerate([&] { (void)properties.getBool(k); });
    tolerate([&] { (void)properties.getInt(k); });
    tolerate([&] { (void)properties.getDouble(k); });
    tolerate([&] { (void)properties.getDuration(k); });
    tolerate([&] { (void)properties.getSizeBytes(k); });
    tolerate([&] { (void)properties.getOptionalSizeBytes(k); });
    (void)properties.describe(k);
  }
}

void readSettings(const tide::Properties& properties) {
  try {
    properties.validate();
  } catch (const tide::ConfigError&) {
  }
  // Each unknown key is measured against every known key: a few are enough to cover it, and
  // keep the executions fast.
  if (properties.entries().size() <= 4) (void)properties.unknownKeyWarnings();
  std::vector<std::string> warnings;
  tolerate(
      [&] { (void)tide::allocation::AllocationConfig::fromProperties(properties, &warnings); });
  tolerate([&] { (void)tide::rm::RmConfig::fromProperties(properties); });
  tolerate([&] { (void)tide::am::SlurmBackendSettings::fromProperties(properties); });
}

void asPropertiesFile(std::string_view text) {
  tide::Properties file;
  try {
    file.loadText(text, "fuzz.conf");
  } catch (const tide::ConfigError&) {
    return;
  }
  readEveryKey(file);
  readSettings(file);
  // What is handed to a child process reads back the same.
  tide::Properties again;
  again.loadText(file.toText(), "again.conf");
  if (again.entries().size() != file.entries().size()) {
    std::fprintf(stderr, "toText() loads back %zu entries, not %zu\n", again.entries().size(),
                 file.entries().size());
    std::abort();
  }
  for (const auto& [key, entry] : file.entries()) {
    const auto found = again.entries().find(key);
    if (found == again.entries().end() || found->second.value != entry.value) {
      std::fprintf(stderr, "toText() does not load back '%s'='%s'\n", key.c_str(),
                   entry.value.c_str());
      std::abort();
    }
  }
}

void asCommandLine(std::string_view text) {
  std::vector<std::string> args;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string arg(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    // Not the options that print (--help, --version) or read a file named by the input.
    if (arg == "-h" || arg == "--help" || arg == "-V" || arg == "--version" ||
        arg.rfind("--properties-file", 0) == 0) {
      continue;
    }
    args.push_back(std::move(arg));
  }
  tide::CommandLine cli("tide fuzz", "Fuzzes the command line.");
  cli.addOption("work-dir", "DIR", "A directory");
  cli.addFlag("verbose", "A flag");
  cli.addPositional("job", "A job file");
  cli.addPositional("more", "An optional argument", /*required=*/false);
  try {
    (void)cli.parse(args);
  } catch (const tide::ConfigError&) {
    return;
  }
  readSettings(cli.properties());
}

void asDurationAndSize(std::string_view line) {
  for (int64_t unit : {int64_t{1}, int64_t{1000}}) {
    try {
      const tide::DurationMs ms = tide::parseDuration(line, unit);
      if (tide::parseDuration(tide::formatDuration(ms), 1) != ms) std::abort();
    } catch (const std::invalid_argument&) {
    }
    try {
      (void)tide::parseSize(line, unit);
    } catch (const std::invalid_argument&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  asDurationAndSize(text.substr(0, text.find('\n')));
  asCommandLine(text);
  asPropertiesFile(text);
  return 0;
}
