#include "common/command_line.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "common/strings.h"
#include "common/version.h"

namespace tide {
namespace {

constexpr std::string_view kHelpHint = " (see --help)";

std::string stripDashes(std::string name) {
  while (!name.empty() && name.front() == '-') name.erase(0, 1);
  return name;
}

void appendHelpRow(std::ostringstream& out, const std::string& left, const std::string& help) {
  constexpr size_t kColumn = 30;
  out << "  " << left;
  if (left.size() + 2 < kColumn) {
    out << std::string(kColumn - left.size() - 2, ' ');
  } else {
    out << "\n" << std::string(kColumn, ' ');
  }
  out << help << "\n";
}

// A --conf value: key=value with neither side blank.
std::string checkedConfSetting(std::string setting) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos) {
    throw ConfigError("--conf '" + setting + "' is not of the form key=value");
  }
  if (trim(std::string_view(setting).substr(0, eq)).empty()) {
    throw ConfigError("--conf '" + setting + "' has no key");
  }
  if (trim(std::string_view(setting).substr(eq + 1)).empty()) {
    throw ConfigError("--conf '" + setting + "' has no value");
  }
  return setting;
}

}  // namespace

CommandLine::CommandLine(std::string program, std::string synopsis)
    : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

void CommandLine::addOption(std::string name, std::string valueName, std::string help) {
  if (valueName.empty()) valueName = "VALUE";
  options_.push_back({stripDashes(std::move(name)), std::move(valueName), std::move(help)});
}

void CommandLine::addFlag(std::string name, std::string help) {
  options_.push_back({stripDashes(std::move(name)), "", std::move(help)});
}

void CommandLine::addPositional(std::string name, std::string help, bool required) {
  if (required && !positionalSpecs_.empty() && !positionalSpecs_.back().required) {
    throw std::logic_error("required positional '" + name + "' after an optional one");
  }
  positionalSpecs_.push_back({std::move(name), std::move(help), required});
}

void CommandLine::allowExtraPositionals(std::string name, std::string help) {
  extraPositionals_ = PositionalSpec{std::move(name), std::move(help), false};
}

void CommandLine::showConfigKeys(std::vector<std::string> prefixes) {
  configKeyPrefixes_ = std::move(prefixes);
}

void CommandLine::hideConfigKeys() {
  configKeyPrefixes_.reset();
}

const CommandLine::OptionSpec* CommandLine::findOption(std::string_view name) const {
  for (const OptionSpec& spec : options_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const CommandLine::OptionSpec& CommandLine::requireDeclared(const std::string& name,
                                                            bool wantFlag) const {
  const OptionSpec* spec = findOption(stripDashes(name));
  if (spec == nullptr || spec->valueName.empty() != wantFlag) {
    throw std::logic_error("CommandLine: '" + name + "' is not a declared " +
                           (wantFlag ? "flag" : "option"));
  }
  return *spec;
}

bool CommandLine::parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse(args);
}

bool CommandLine::parse(const std::vector<std::string>& args) {
  properties_ = Properties();
  propertiesFile_.reset();
  optionValues_.clear();
  flagsGiven_.clear();
  positionals_.clear();

  std::vector<std::string> confs;
  bool optionsEnded = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (optionsEnded || arg.size() < 2 || arg.front() != '-') {
      positionals_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::cout << usage();
      return false;
    }
    if (arg == "--version" || arg == "-V") {
      std::cout << versionLine(program_) << "\n";
      return false;
    }

    // Split "--name=value"; short options (-c) take their value from the next argument.
    std::string name;
    std::optional<std::string> inlineValue;
    if (startsWith(arg, "--")) {
      const size_t eq = arg.find('=');
      name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos) inlineValue = arg.substr(eq + 1);
    } else if (arg == "-c") {
      name = "conf";
    } else {
      throw ConfigError("unknown option '" + arg + "'" + std::string(kHelpHint));
    }
    const std::string shown = arg.substr(0, arg.find('='));
    auto takeValue = [&](const std::string& valueName) -> std::string {
      if (inlineValue) return *inlineValue;
      if (i + 1 >= args.size()) {
        throw ConfigError("option " + shown + " needs a value (" + valueName + ")");
      }
      return args[++i];
    };

    if (name == "conf") {
      confs.push_back(checkedConfSetting(takeValue("key=value")));
    } else if (name == "properties-file") {
      propertiesFile_ = takeValue("FILE");
    } else if (const OptionSpec* spec = findOption(name)) {
      if (spec->valueName.empty()) {
        if (inlineValue) throw ConfigError("flag " + shown + " does not take a value");
        if (std::find(flagsGiven_.begin(), flagsGiven_.end(), name) == flagsGiven_.end()) {
          flagsGiven_.push_back(name);
        }
      } else {
        optionValues_[name] = takeValue(spec->valueName);
      }
    } else {
      throw ConfigError("unknown option '" + shown + "'" + std::string(kHelpHint));
    }
  }

  checkPositionals();
  loadProperties(confs);
  return true;
}

void CommandLine::checkPositionals() const {
  size_t required = 0;
  for (const PositionalSpec& spec : positionalSpecs_) required += spec.required ? 1 : 0;
  if (positionals_.size() < required) {
    throw ConfigError("missing argument " + positionalSpecs_[positionals_.size()].name +
                      std::string(kHelpHint));
  }
  if (positionals_.size() > positionalSpecs_.size() && !extraPositionals_) {
    throw ConfigError("unexpected argument '" + positionals_[positionalSpecs_.size()] + "'" +
                      std::string(kHelpHint));
  }
}

void CommandLine::loadProperties(const std::vector<std::string>& confs) {
  if (propertiesFile_) properties_.loadFile(*propertiesFile_);
  for (const std::string& setting : confs) {
    const size_t eq = setting.find('=');
    properties_.set(setting.substr(0, eq), setting.substr(eq + 1), Origin{});
  }
  properties_.validate();
}

std::optional<std::string> CommandLine::option(const std::string& name) const {
  const OptionSpec& spec = requireDeclared(name, /*wantFlag=*/false);
  auto it = optionValues_.find(spec.name);
  if (it == optionValues_.end()) return std::nullopt;
  return it->second;
}

bool CommandLine::flag(const std::string& name) const {
  const OptionSpec& spec = requireDeclared(name, /*wantFlag=*/true);
  return std::find(flagsGiven_.begin(), flagsGiven_.end(), spec.name) != flagsGiven_.end();
}

std::optional<std::string> CommandLine::positional(const std::string& name) const {
  for (size_t i = 0; i < positionalSpecs_.size(); ++i) {
    if (positionalSpecs_[i].name != name) continue;
    if (i < positionals_.size()) return positionals_[i];
    return std::nullopt;
  }
  throw std::logic_error("CommandLine: '" + name + "' is not a declared positional argument");
}

std::string CommandLine::usage() const {
  std::ostringstream out;
  out << "Usage: " << program_ << " [OPTIONS]";
  for (const PositionalSpec& spec : positionalSpecs_) {
    out << (spec.required ? " " + spec.name : " [" + spec.name + "]");
  }
  if (extraPositionals_) out << " [" << extraPositionals_->name << "...]";
  out << "\n";
  if (!synopsis_.empty()) out << "\n" << synopsis_ << "\n";
  if (!positionalSpecs_.empty() || extraPositionals_) {
    out << "\nArguments:\n";
    for (const PositionalSpec& spec : positionalSpecs_) appendHelpRow(out, spec.name, spec.help);
    if (extraPositionals_) {
      appendHelpRow(out, extraPositionals_->name + "...", extraPositionals_->help);
    }
  }
  out << "\nOptions:\n";
  for (const OptionSpec& spec : options_) {
    appendHelpRow(out, "--" + spec.name + (spec.valueName.empty() ? "" : " " + spec.valueName),
                  spec.help);
  }
  appendHelpRow(out, "--properties-file FILE", "Read configuration from FILE (key=value lines)");
  appendHelpRow(out, "-c, --conf KEY=VALUE", "Set a configuration key; overrides the file");
  appendHelpRow(out, "-h, --help", "Print this help and exit");
  appendHelpRow(out, "-V, --version", "Print the version, git commit and build type, and exit");
  if (configKeyPrefixes_) {
    out << "\nConfiguration keys (`spark.` prefix accepted; durations take ms, s, min, h, d or "
           "infinity;\nsizes take k, m, g, t):\n"
        << formatKeyTable(*configKeyPrefixes_);
  }
  return out.str();
}

int runMain(const std::function<int()>& body, std::string_view program) {
  try {
    return body();
  } catch (const ConfigError& e) {
    std::cerr << program << ": error: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << std::endl;
    return 1;
  }
}

int parseAndRun(CommandLine& cli, int argc, char** argv, const std::function<int()>& body,
                std::string_view program) {
  return runMain(
      [&] {
        if (!cli.parse(argc, argv)) return 0;
        return body();
      },
      program);
}

}  // namespace tide
