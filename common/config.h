#pragma once

// Properties shared by every tide binary: spark-submit's conventions
// (`--properties-file FILE`, repeated `--conf key=value`, precedence defaults < file < --conf),
// typed getters whose errors name the key, the value and where it came from.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace tide {

// A configuration problem; what() names the key, the value and its origin. Binaries exit 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ValueKind { kString, kBool, kInt, kDouble, kDuration, kSize };

// One known key. The table of all of them (config_keys.cc) is the one place defaults live.
struct KeyInfo {
  std::string name;  // canonical, without "spark."
  ValueKind kind = ValueKind::kString;
  std::string defaultValue;  // empty: no default (the key is unset unless given)
  // Durations: what a bare number means (1000 = seconds, 1 = milliseconds).
  // Sizes: what a bare number means in bytes (1 MiB for executor.memory, as in Spark).
  int64_t bareUnit = 1;
  std::string help;
  // Strings only: the accepted values (matched ignoring case); empty means any value.
  std::vector<std::string> choices;
  // Integers: the accepted values, both ends included (every integer key is read into an int).
  // Durations: 0, or 1 to refuse 0 (positive()). Every getter and validate() refuse a value
  // outside with a ConfigError that names the key and the range.
  int64_t minValue = 0;
  int64_t maxValue = kMaxIntValue;

  static constexpr int64_t kMaxIntValue = 2147483647;
  KeyInfo within(int64_t low, int64_t high) && {
    minValue = low;
    maxValue = high;
    return std::move(*this);
  }
  KeyInfo positive() && {
    minValue = 1;
    return std::move(*this);
  }
};

const std::vector<KeyInfo>& knownKeys();
// Looks a key up by canonical name or by its `spark.` alias; nullptr when unknown.
const KeyInfo* findKey(std::string_view name);
// The name a key is stored under: `spark.X` becomes `X` when X is a known key; anything else is
// kept as written (so unknown keys can be reported the way the user spelled them).
std::string canonicalKey(std::string_view name);
// "integer", "duration", ... for messages and the key table.
std::string_view kindName(ValueKind kind);
// The table of known keys for --help: name, default, kind and help, two lines per key.
// With prefixes, only keys starting with one of them (e.g. {"nm.", "log."} for tide-nm).
std::string formatKeyTable(const std::vector<std::string>& prefixes = {});

// Where a value came from, for error messages.
struct Origin {
  std::string file;  // empty: --conf (or a runtime change)
  int line = 0;
  std::string describe() const;  // "conf/tide.conf:12" or "--conf"
};

// Parses Spark's units (`500us`, `100ms`, `1s`, `2m` or `2min`, `1h`, `1d`), their long forms
// (`2mins`, `2 minutes`, `1 hour`, ...), decimals (`1.5s`) and `infinity`; a bare number is
// taken in bareUnitMs. The result is whole milliseconds (`1500us` is an error).
// Throws std::invalid_argument with a short reason on bad text or a negative value.
DurationMs parseDuration(std::string_view text, int64_t bareUnitMs);
// Parses `512`, `64k`, `512m`, `2g` (also `kb`, `mb`, `gb`, case-insensitive) into bytes.
int64_t parseSize(std::string_view text, int64_t bareUnitBytes);
// Formats a duration the way a person writes it: 250ms, 2s, 1.5s, 2min, infinity.
std::string formatDuration(DurationMs ms);

class Properties {
 public:
  struct Entry {
    std::string value;
    Origin origin;
  };

  // Reads a properties file: `key value` or `key=value` (also `key: value`), `#`/`!` comments,
  // blank lines. Later definitions override earlier ones. Throws ConfigError on an unreadable
  // file or a line with a key but no value.
  void loadFile(const std::string& path);
  // The same from text already read; `source` names it in origins and errors (as the path).
  void loadText(std::string_view text, const std::string& source);
  // Sets one value (from --conf or a runtime change). `spark.` aliases map to canonical keys.
  // Key and value are trimmed; an empty value removes the explicit setting (back to default).
  void set(std::string_view key, std::string value, Origin origin = {});
  void unset(std::string_view key);

  bool has(std::string_view key) const;       // given explicitly (not only a default)
  bool hasValue(std::string_view key) const;  // given explicitly or has a table default
  std::optional<Entry> entry(std::string_view key) const;

  // Typed getters: an explicit value, else the table default. A bad value throws ConfigError
  // naming key, value and origin. Getting a key that is not in the table is a programming error
  // (std::logic_error).
  std::string getString(std::string_view key) const;
  bool getBool(std::string_view key) const;
  int64_t getInt(std::string_view key) const;
  double getDouble(std::string_view key) const;
  DurationMs getDuration(std::string_view key) const;
  int64_t getSizeBytes(std::string_view key) const;
  // A key with neither value nor default makes the getters above throw ConfigError ("missing
  // value"); these return nullopt instead, for keys whose default is derived (e.g.
  // dynamicAllocation.initialExecutors, nm.cores).
  std::optional<std::string> getOptionalString(std::string_view key) const;
  std::optional<bool> getOptionalBool(std::string_view key) const;
  std::optional<int64_t> getOptionalInt(std::string_view key) const;
  std::optional<double> getOptionalDouble(std::string_view key) const;
  std::optional<DurationMs> getOptionalDuration(std::string_view key) const;
  std::optional<int64_t> getOptionalSizeBytes(std::string_view key) const;

  // Parses every explicitly given known key by its kind; throws ConfigError for the first bad
  // one. Binaries call it at startup so a typo fails fast rather than when the value is used.
  void validate() const;

  // "key=value (origin)" for messages about a value, e.g. bound violations.
  std::string describe(std::string_view key) const;

  // One warning per unknown key, with the nearest known key: "unknown key 'dynamicAllocation.
  // maxExecutor' (conf/tide.conf:3); did you mean 'dynamicAllocation.maxExecutors'?"
  std::vector<std::string> unknownKeyWarnings() const;

  // The explicit values as a properties file ("key=value" lines, sorted), e.g. to hand the
  // configuration to a child process.
  std::string toText() const;
  // The explicit values as command-line arguments: {"--conf", "key=value", ...}.
  std::vector<std::string> toConfArgs() const;

  const std::string& sourceFile() const { return sourceFile_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, Entry> entries_;  // canonical key -> value
  std::string sourceFile_;
};

}  // namespace tide
