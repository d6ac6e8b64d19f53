#include "common/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/strings.h"

namespace tide {
namespace {

constexpr int64_t kSecondMs = 1000;
constexpr int64_t kMinuteMs = 60 * kSecondMs;
constexpr int64_t kHourMs = 60 * kMinuteMs;
constexpr int64_t kDayMs = 24 * kHourMs;

// A non-negative decimal number split into its digits and its number of fraction digits, so that
// "1.5s" becomes exactly 1500 ms without floating-point rounding.
struct Decimal {
  int64_t mantissa = 0;  // all digits, the decimal point removed
  int fractionDigits = 0;
};

// Splits `text` (already trimmed and lower-cased) into a number and the unit after it.
// Throws std::invalid_argument naming what is wrong.
Decimal parseLeadingDecimal(std::string_view text, std::string_view* unit, const char* what) {
  if (text.empty()) throw std::invalid_argument(std::string("empty ") + what);
  if (text.front() == '-') throw std::invalid_argument(std::string("negative ") + what);
  if (text.front() == '+') text.remove_prefix(1);
  Decimal number;
  size_t pos = 0;
  bool sawDigit = false;
  bool sawPoint = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c == '.' && !sawPoint) {
      sawPoint = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    sawDigit = true;
    if (__builtin_mul_overflow(number.mantissa, 10, &number.mantissa) ||
        __builtin_add_overflow(number.mantissa, c - '0', &number.mantissa)) {
      throw std::invalid_argument(std::string(what) + " too large");
    }
    if (sawPoint) ++number.fractionDigits;
  }
  if (!sawDigit) throw std::invalid_argument(std::string("not a ") + what);
  *unit = trim(text.substr(pos));
  return number;
}

// number × multiplier, exactly; throws when the result is not whole or does not fit.
int64_t scale(const Decimal& number, int64_t multiplier, const char* what, const char* finest) {
  int64_t product = 0;
  if (__builtin_mul_overflow(number.mantissa, multiplier, &product)) {
    throw std::invalid_argument(std::string(what) + " too large");
  }
  int64_t divisor = 1;
  for (int i = 0; i < number.fractionDigits; ++i) {
    if (__builtin_mul_overflow(divisor, 10, &divisor)) {
      throw std::invalid_argument(std::string("too many digits in ") + what);
    }
  }
  if (product % divisor != 0) {
    throw std::invalid_argument(std::string(what) + " finer than one " + finest);
  }
  return product / divisor;
}

bool parseBoolText(std::string_view text, bool* out) {
  const std::string value = toLower(trim(text));
  if (value == "true" || value == "yes" || value == "1") {
    *out = true;
    return true;
  }
  if (value == "false" || value == "no" || value == "0") {
    *out = false;
    return true;
  }
  return false;
}

const KeyInfo& requireKnownKey(std::string_view key, std::initializer_list<ValueKind> kinds,
                               const char* getter) {
  const KeyInfo* info = findKey(key);
  if (info == nullptr) {
    throw std::logic_error(std::string(getter) + " of unknown configuration key '" +
                           std::string(key) + "'; add it to common/config_keys.cc");
  }
  if (kinds.size() != 0 && std::find(kinds.begin(), kinds.end(), info->kind) == kinds.end()) {
    throw std::logic_error(std::string(getter) + " of " + info->name + ", which is a " +
                           std::string(kindName(info->kind)));
  }
  return *info;
}

}  // namespace

std::string Origin::describe() const {
  if (file.empty()) return "--conf";
  if (line <= 0) return file;
  return file + ":" + std::to_string(line);
}

DurationMs parseDuration(std::string_view text, int64_t bareUnitMs) {
  const std::string lowered = toLower(trim(text));
  if (lowered == "infinity" || lowered == "inf") return kInfiniteMs;
  std::string_view unit;
  const Decimal number = parseLeadingDecimal(lowered, &unit, "duration");
  const auto is = [&unit](std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), unit) != names.end();
  };
  // Spark's JavaUtils.timeStringAs units (us, ms, s, m, min, h, d), and their long forms.
  int64_t multiplier = 0;
  bool micros = false;
  if (unit.empty()) {
    multiplier = bareUnitMs;
  } else if (is({"us", "micros", "microsecond", "microseconds"})) {
    micros = true;
    multiplier = 1;
  } else if (is({"ms", "millis", "millisecond", "milliseconds"})) {
    multiplier = 1;
  } else if (is({"s", "sec", "secs", "second", "seconds"})) {
    multiplier = kSecondMs;
  } else if (is({"m", "min", "mins", "minute", "minutes"})) {
    multiplier = kMinuteMs;
  } else if (is({"h", "hour", "hours"})) {
    multiplier = kHourMs;
  } else if (is({"d", "day", "days"})) {
    multiplier = kDayMs;
  } else {
    throw std::invalid_argument("unknown unit '" + std::string(unit) +
                                "' (use us, ms, s, m or min, h, d, or infinity)");
  }
  // tide keeps milliseconds: microseconds must make whole milliseconds (Spark would truncate).
  Decimal scaled = number;
  if (micros) scaled.fractionDigits += 3;
  const int64_t ms = scale(scaled, multiplier, "duration", "millisecond");
  if (ms == kInfiniteMs) throw std::invalid_argument("duration too large");
  return ms;
}

int64_t parseSize(std::string_view text, int64_t bareUnitBytes) {
  const std::string lowered = toLower(trim(text));
  std::string_view unit;
  const Decimal number = parseLeadingDecimal(lowered, &unit, "size");
  if (unit.size() == 2 && unit[1] == 'b') unit.remove_suffix(1);  // "mb" = "m"
  int64_t multiplier = 0;
  if (unit.empty()) {
    multiplier = bareUnitBytes;
  } else if (unit == "b") {
    multiplier = 1;
  } else if (unit == "k") {
    multiplier = int64_t{1} << 10;
  } else if (unit == "m") {
    multiplier = int64_t{1} << 20;
  } else if (unit == "g") {
    multiplier = int64_t{1} << 30;
  } else if (unit == "t") {
    multiplier = int64_t{1} << 40;
  } else if (unit == "p") {
    multiplier = int64_t{1} << 50;
  } else {
    throw std::invalid_argument("unknown unit '" + std::string(unit) +
                                "' (use b, k, m, g, t or p, optionally followed by b)");
  }
  return scale(number, multiplier, "size", "byte");
}

std::string formatDuration(DurationMs ms) {
  if (ms == kInfiniteMs) return "infinity";
  if (ms <= 0) return std::to_string(ms) + "ms";
  if (ms % kDayMs == 0) return std::to_string(ms / kDayMs) + "d";
  if (ms % kHourMs == 0) return std::to_string(ms / kHourMs) + "h";
  if (ms % kMinuteMs == 0) return std::to_string(ms / kMinuteMs) + "min";
  if (ms % kSecondMs == 0) return std::to_string(ms / kSecondMs) + "s";
  if (ms > kSecondMs && ms % 100 == 0) {
    return std::to_string(ms / kSecondMs) + "." + std::to_string(ms % kSecondMs / 100) + "s";
  }
  return std::to_string(ms) + "ms";
}

// ---------------------------------------------------------------------------------------------
// Properties

void Properties::loadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError("cannot read properties file '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read properties file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw ConfigError("cannot read properties file '" + path + "': " + std::strerror(errno));
  }
  loadText(text.str(), path);
}

namespace {

// A UTF-8 BOM starts the file when an editor saved it so, or any line of files concatenated
// (`cat base.conf site.conf`), possibly after blanks: never part of a key. Stripped wherever a
// key could start, so that toText() (which writes a key first on its line) loads back.
std::string_view trimBlanksAndByteOrderMarks(std::string_view text) {
  text = trim(text);
  while (startsWith(text, "\xEF\xBB\xBF")) text = trim(text.substr(3));
  return text;
}

}  // namespace

void Properties::loadText(std::string_view text, const std::string& source) {
  sourceFile_ = source;
  int lineNumber = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++lineNumber;
    line = trimBlanksAndByteOrderMarks(line);
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    // As in java.util.Properties: the key ends at the first '=', ':' or blank; then blanks, at
    // most one '=' or ':', and blanks again separate it from the value.
    size_t keyEnd = 0;
    while (keyEnd < line.size() && line[keyEnd] != '=' && line[keyEnd] != ':' &&
           !isSpace(line[keyEnd])) {
      ++keyEnd;
    }
    const std::string_view keyText = line.substr(0, keyEnd);
    std::string_view rest = line.substr(keyEnd);
    while (!rest.empty() && isSpace(rest.front())) rest.remove_prefix(1);
    if (!rest.empty() && (rest.front() == '=' || rest.front() == ':')) rest.remove_prefix(1);
    const std::string_view value = trim(rest);
    const std::string where = source + ":" + std::to_string(lineNumber);
    if (keyText.empty()) throw ConfigError(where + ": line has a value but no key");
    if (value.empty()) {
      throw ConfigError(where + ": key '" + std::string(keyText) + "' has no value");
    }
    entries_[canonicalKey(keyText)] = Entry{std::string(value), Origin{source, lineNumber}};
  }
}

void Properties::set(std::string_view key, std::string value, Origin origin) {
  const std::string_view trimmedKey = trimBlanksAndByteOrderMarks(key);
  if (trimmedKey.empty()) throw ConfigError("empty configuration key (" + origin.describe() + ")");
  const std::string canonical = canonicalKey(trimmedKey);
  const std::string trimmedValue(trim(value));
  if (trimmedValue.empty()) {
    entries_.erase(canonical);
    return;
  }
  entries_[canonical] = Entry{trimmedValue, std::move(origin)};
}

void Properties::unset(std::string_view key) {
  entries_.erase(canonicalKey(trim(key)));
}

bool Properties::has(std::string_view key) const {
  return entries_.count(canonicalKey(key)) != 0;
}

bool Properties::hasValue(std::string_view key) const {
  if (has(key)) return true;
  const KeyInfo* info = findKey(key);
  return info != nullptr && !info->defaultValue.empty();
}

std::optional<Properties::Entry> Properties::entry(std::string_view key) const {
  auto it = entries_.find(canonicalKey(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

namespace {

// The value a getter works on: explicit, else the table default; with where it came from.
struct Resolved {
  const KeyInfo* info;
  std::string value;
  std::string origin;  // "conf/tide.conf:4", "--conf" or "default"
};

std::optional<Resolved> resolve(const std::map<std::string, Properties::Entry>& entries,
                                const KeyInfo& info) {
  if (auto it = entries.find(info.name); it != entries.end()) {
    return Resolved{&info, it->second.value, it->second.origin.describe()};
  }
  if (info.defaultValue.empty()) return std::nullopt;
  return Resolved{&info, info.defaultValue, "default"};
}

Resolved resolveRequired(const std::map<std::string, Properties::Entry>& entries,
                         const KeyInfo& info) {
  std::optional<Resolved> resolved = resolve(entries, info);
  if (!resolved) {
    throw ConfigError("missing value for " + info.name + ": it has no default; set it in the " +
                      "properties file or with --conf " + info.name + "=VALUE");
  }
  return *resolved;
}

[[noreturn]] void throwInvalid(const Resolved& r, const std::string& reason) {
  throw ConfigError("invalid value '" + r.value + "' for " + r.info->name + " (" + r.origin +
                    "): " + reason);
}

std::string stringValue(const Resolved& r) {
  const std::vector<std::string>& choices = r.info->choices;
  if (choices.empty()) return r.value;
  for (const std::string& choice : choices) {
    if (equalsIgnoreCase(choice, r.value)) return choice;  // the table's spelling
  }
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) expected += i + 1 == choices.size() ? " or " : ", ";
    expected += choices[i];
  }
  throwInvalid(r, "expected " + expected);
}

bool boolValue(const Resolved& r) {
  bool result = false;
  if (!parseBoolText(r.value, &result)) throwInvalid(r, "expected true or false");
  return result;
}

int64_t intValue(const Resolved& r) {
  std::string_view text = trim(r.value);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t result = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (error == std::errc::result_out_of_range) throwInvalid(r, "integer out of range");
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    throwInvalid(r, "expected an integer");
  }
  if (result < r.info->minValue || result > r.info->maxValue) {
    throwInvalid(r, "must be between " + std::to_string(r.info->minValue) + " and " +
                        std::to_string(r.info->maxValue));
  }
  return result;
}

double doubleValue(const Resolved& r) {
  const std::string text(trim(r.value));
  if (text.empty()) throwInvalid(r, "expected a number");
  char* end = nullptr;
  errno = 0;
  const double result = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) throwInvalid(r, "expected a number");
  if (errno == ERANGE || !std::isfinite(result)) throwInvalid(r, "number out of range");
  return result;
}

DurationMs durationValue(const Resolved& r) {
  DurationMs result = 0;
  try {
    result = parseDuration(r.value, r.info->bareUnit);
  } catch (const std::invalid_argument& e) {
    throwInvalid(
        r, std::string("expected a duration such as 500ms, 60s, 2min or infinity: ") + e.what());
  }
  if (result < r.info->minValue) throwInvalid(r, "must be greater than 0");
  return result;
}

int64_t sizeValue(const Resolved& r) {
  try {
    return parseSize(r.value, r.info->bareUnit);
  } catch (const std::invalid_argument& e) {
    throwInvalid(r, std::string("expected a size such as 512m or 2g: ") + e.what());
  }
}

// Converts a value as its key's kind says and drops the result: a ConfigError when it is not one.
template <auto Convert>
void check(const Resolved& r) {
  Convert(r);
}
void checkValue(const Resolved& r) {
  // In ValueKind's order.
  static constexpr void (*kChecks[])(const Resolved&) = {check<stringValue>,   check<boolValue>,
                                                         check<intValue>,      check<doubleValue>,
                                                         check<durationValue>, check<sizeValue>};
  static_assert(std::size(kChecks) == static_cast<size_t>(ValueKind::kSize) + 1);
  kChecks[static_cast<size_t>(r.info->kind)](r);
}

// A value converted by `convert`, or nullopt when the key is not set.
template <typename Convert>
auto optionalValue(const std::optional<Resolved>& resolved, Convert convert)
    -> std::optional<decltype(convert(*resolved))> {
  if (!resolved) return std::nullopt;
  return convert(*resolved);
}

}  // namespace

std::string Properties::getString(std::string_view key) const {
  return stringValue(resolveRequired(entries_, requireKnownKey(key, {}, "getString")));
}

bool Properties::getBool(std::string_view key) const {
  return boolValue(resolveRequired(entries_, requireKnownKey(key, {ValueKind::kBool}, "getBool")));
}

int64_t Properties::getInt(std::string_view key) const {
  return intValue(resolveRequired(entries_, requireKnownKey(key, {ValueKind::kInt}, "getInt")));
}

double Properties::getDouble(std::string_view key) const {
  return doubleValue(resolveRequired(
      entries_, requireKnownKey(key, {ValueKind::kDouble, ValueKind::kInt}, "getDouble")));
}

DurationMs Properties::getDuration(std::string_view key) const {
  return durationValue(
      resolveRequired(entries_, requireKnownKey(key, {ValueKind::kDuration}, "getDuration")));
}

int64_t Properties::getSizeBytes(std::string_view key) const {
  return sizeValue(
      resolveRequired(entries_, requireKnownKey(key, {ValueKind::kSize}, "getSizeBytes")));
}

std::optional<std::string> Properties::getOptionalString(std::string_view key) const {
  return optionalValue(resolve(entries_, requireKnownKey(key, {}, "getOptionalString")),
                       stringValue);
}

std::optional<bool> Properties::getOptionalBool(std::string_view key) const {
  return optionalValue(
      resolve(entries_, requireKnownKey(key, {ValueKind::kBool}, "getOptionalBool")), boolValue);
}

std::optional<int64_t> Properties::getOptionalInt(std::string_view key) const {
  return optionalValue(resolve(entries_, requireKnownKey(key, {ValueKind::kInt}, "getOptionalInt")),
                       intValue);
}

std::optional<double> Properties::getOptionalDouble(std::string_view key) const {
  return optionalValue(resolve(entries_, requireKnownKey(key, {ValueKind::kDouble, ValueKind::kInt},
                                                         "getOptionalDouble")),
                       doubleValue);
}

std::optional<DurationMs> Properties::getOptionalDuration(std::string_view key) const {
  return optionalValue(
      resolve(entries_, requireKnownKey(key, {ValueKind::kDuration}, "getOptionalDuration")),
      durationValue);
}

std::optional<int64_t> Properties::getOptionalSizeBytes(std::string_view key) const {
  return optionalValue(
      resolve(entries_, requireKnownKey(key, {ValueKind::kSize}, "getOptionalSizeBytes")),
      sizeValue);
}

void Properties::validate() const {
  for (const auto& [name, entry] : entries_) {
    const KeyInfo* info = findKey(name);
    if (info == nullptr) continue;  // unknown keys are warned about, not rejected
    checkValue(Resolved{info, entry.value, entry.origin.describe()});
  }
}

std::string Properties::describe(std::string_view key) const {
  const std::string canonical = canonicalKey(key);
  if (auto it = entries_.find(canonical); it != entries_.end()) {
    return canonical + "=" + it->second.value + " (" + it->second.origin.describe() + ")";
  }
  const KeyInfo* info = findKey(canonical);
  if (info != nullptr && !info->defaultValue.empty()) {
    return canonical + "=" + info->defaultValue + " (default)";
  }
  return canonical + " (not set)";
}

std::vector<std::string> Properties::unknownKeyWarnings() const {
  std::vector<std::string> warnings;
  for (const auto& [name, entry] : entries_) {
    if (findKey(name) != nullptr) continue;
    std::string_view bare = name;
    if (startsWith(bare, "spark.")) bare.remove_prefix(6);
    // Suggest only what is plausibly a typo, not any key that happens to be nearest. A key whose
    // length differs by more than that is farther anyway: skip it rather than measure it (a
    // long unknown key would otherwise cost its length times every key's).
    const size_t plausible = std::max<size_t>(2, bare.size() / 4);
    const KeyInfo* nearest = nullptr;
    size_t nearestDistance = 0;
    for (const KeyInfo& info : knownKeys()) {
      const size_t lengthDifference = bare.size() > info.name.size()
                                          ? bare.size() - info.name.size()
                                          : info.name.size() - bare.size();
      if (lengthDifference > plausible) continue;
      const size_t distance = editDistanceIgnoreCase(bare, info.name);
      if (nearest == nullptr || distance < nearestDistance) {
        nearest = &info;
        nearestDistance = distance;
      }
    }
    std::string warning = "unknown key '" + name + "' (" + entry.origin.describe() + ")";
    if (nearest != nullptr && nearestDistance <= plausible) {
      warning += "; did you mean '" + nearest->name + "'?";
    } else {
      warning += " is ignored";
    }
    warnings.push_back(std::move(warning));
  }
  return warnings;
}

std::string Properties::toText() const {
  std::string text;
  for (const auto& [name, entry] : entries_) text += name + "=" + entry.value + "\n";
  return text;
}

std::vector<std::string> Properties::toConfArgs() const {
  std::vector<std::string> args;
  for (const auto& [name, entry] : entries_) {
    args.push_back("--conf");
    args.push_back(name + "=" + entry.value);
  }
  return args;
}

}  // namespace tide
