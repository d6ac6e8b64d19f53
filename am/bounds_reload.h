#pragma once

// SIGHUP: re-read the properties file the AM was started with, keep the command line's
// --conf values on top (the precedence at start: defaults < file < --conf), and apply the
// executor bounds that changed since the last load, exactly as PUT /api/v1/allocation/bounds
// does. A file that does not parse or validate changes nothing; the error is logged.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "allocation/allocation_config.h"
#include "common/logging.h"
#include "common/status.h"

namespace tide {
class Properties;
}

namespace tide::am {

class ApplicationMaster;

// The bounds fields that differ between two loads, as changeBounds takes them.
struct BoundsChange {
  std::optional<int> minExecutors;
  std::optional<int> initialExecutors;
  std::optional<int> maxExecutors;
  bool empty() const { return !minExecutors && !initialExecutors && !maxExecutors; }
  std::string describe() const;  // "max=2 min=1"
};
BoundsChange boundsChange(const allocation::Bounds& before, const allocation::Bounds& after);

// Loads `propertiesFile` then applies `confOverrides` in order, validates every known key and
// reads the allocation config. Throws ConfigError naming key, value and file:line.
allocation::Bounds loadBounds(const std::string& propertiesFile,
                              const std::vector<std::pair<std::string, std::string>>& confOverrides,
                              std::vector<std::string>* warnings);

class BoundsReloader {
 public:
  // `loaded`: the bounds the AM started with (from the same file and overrides).
  BoundsReloader(std::optional<std::string> propertiesFile,
                 std::vector<std::pair<std::string, std::string>> confOverrides,
                 allocation::Bounds loaded);
  // For the file and --conf values of this command line (entries not from the file).
  static BoundsReloader fromCommandLine(const std::optional<std::string>& propertiesFile,
                                        const Properties& commandLine, allocation::Bounds loaded);
  // Re-reads and applies; logs what happened. OK when the bounds are as the file now says
  // (changed or not); kInvalidArgument when the file does not load or validate (the message is
  // the ConfigError's), else what changeBounds refused with.
  Status reload(ApplicationMaster& master);

 private:
  std::optional<std::string> propertiesFile_;
  std::vector<std::pair<std::string, std::string>> confOverrides_;
  allocation::Bounds loaded_;
  Logger log_{"am"};
};

}  // namespace tide::am
