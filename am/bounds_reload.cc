#include "am/bounds_reload.h"

#include "am/application_master.h"
#include "common/config.h"

namespace tide::am {

std::string BoundsChange::describe() const {
  std::string text;
  auto add = [&](const char* name, const std::optional<int>& value) {
    if (!value) return;
    if (!text.empty()) text += " ";
    text += std::string(name) + "=" + std::to_string(*value);
  };
  add("min", minExecutors);
  add("initial", initialExecutors);
  add("max", maxExecutors);
  return text;
}

BoundsChange boundsChange(const allocation::Bounds& before, const allocation::Bounds& after) {
  BoundsChange change;
  if (before.minExecutors != after.minExecutors) change.minExecutors = after.minExecutors;
  if (before.initialExecutors != after.initialExecutors) {
    change.initialExecutors = after.initialExecutors;
  }
  if (before.maxExecutors != after.maxExecutors) change.maxExecutors = after.maxExecutors;
  return change;
}

allocation::Bounds loadBounds(const std::string& propertiesFile,
                              const std::vector<std::pair<std::string, std::string>>& confOverrides,
                              std::vector<std::string>* warnings) {
  Properties props;
  props.loadFile(propertiesFile);
  for (const auto& [key, value] : confOverrides) props.set(key, value);
  props.validate();
  return allocation::AllocationConfig::fromProperties(props, warnings).bounds;
}

BoundsReloader::BoundsReloader(std::optional<std::string> propertiesFile,
                               std::vector<std::pair<std::string, std::string>> confOverrides,
                               allocation::Bounds loaded)
    : propertiesFile_(std::move(propertiesFile)),
      confOverrides_(std::move(confOverrides)),
      loaded_(loaded) {}

BoundsReloader BoundsReloader::fromCommandLine(const std::optional<std::string>& propertiesFile,
                                               const Properties& commandLine,
                                               allocation::Bounds loaded) {
  std::vector<std::pair<std::string, std::string>> overrides;
  for (const auto& [key, entry] : commandLine.entries()) {
    if (entry.origin.file.empty()) overrides.emplace_back(key, entry.value);
  }
  return BoundsReloader(propertiesFile, std::move(overrides), loaded);
}

Status BoundsReloader::reload(ApplicationMaster& master) {
  if (!propertiesFile_) {
    log_.info() << "SIGHUP: started without --properties-file; nothing to re-read";
    return Status();
  }
  const std::string source = "SIGHUP (" + *propertiesFile_ + ")";
  allocation::Bounds next;
  try {
    std::vector<std::string> warnings;
    next = loadBounds(*propertiesFile_, confOverrides_, &warnings);
    for (const auto& warning : warnings) log_.warn() << source << ": " << warning;
  } catch (const ConfigError& e) {
    log_.error() << source << ": not applied, the file is invalid: " << e.what();
    master.recordRejectedBoundsChange(source, e.what());
    return Status::invalidArgument(e.what());
  }
  const BoundsChange change = boundsChange(loaded_, next);
  if (change.empty()) {
    log_.info() << source << ": executor bounds unchanged";
    return Status();
  }
  log_.info() << source << ": applying " << change.describe();
  Status applied = master.changeBounds(change.minExecutors, change.initialExecutors,
                                       change.maxExecutors, source);
  if (!applied.ok()) {
    log_.error() << source << ": not applied: " << applied.message();
    return applied;
  }
  loaded_ = next;
  return Status();
}

}  // namespace tide::am
