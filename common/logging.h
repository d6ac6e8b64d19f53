#pragma once

// Logging for every tide binary, on Boost.Log. One line per record on stderr:
//   text: 2024-05-01T12:34:56.789Z INFO  [am] target 3 -> 7 (backlog)
//   json: {"ts":"2024-05-01T12:34:56.789Z","level":"info","component":"am","msg":"..."}
// Configured by `log.level` (trace|debug|info|warn|error) and `log.format` (text|json).
//
//   Logger log("am");
//   log.info() << "target " << old << " -> " << target;
//   TIDE_LOG(log, debug) << expensiveSummary();  // not evaluated when debug is off
//
// Loggers are thread-safe and cheap to copy; a record below the level costs one atomic load.

#include <atomic>
#include <iosfwd>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "common/config.h"

namespace tide {

enum class Severity { kTrace = 0, kDebug = 1, kInfo = 2, kWarn = 3, kError = 4 };
enum class LogFormat { kText, kJson };

struct LogOptions {
  Severity level = Severity::kInfo;
  LogFormat format = LogFormat::kText;
};

// "trace", "debug", "info", "warn", "error".
std::string_view severityName(Severity severity);
// Case-insensitive; also accepts "warning". nullopt for anything else.
std::optional<Severity> parseSeverity(std::string_view text);

// Reads log.level and log.format; a bad value is a ConfigError naming the key.
LogOptions logOptionsFrom(const Properties& properties);
// Installs the one sink (replacing an earlier one, so a reload can change level or format).
// `out` null means stderr; otherwise the stream must outlive logging (tests pass a stringstream).
void initLogging(const LogOptions& options, std::ostream* out = nullptr);
void initLogging(const Properties& properties);
// Changes the level at run time (e.g. on SIGHUP) without touching the sink.
void setLogLevel(Severity level);
Severity logLevel();
bool logEnabled(Severity severity);
// Flushes the sink; call before exiting abruptly.
void flushLogs();

// Formats one record (without the trailing newline); the sink uses it and tests check it.
// `timestamp` is ISO 8601 UTC with milliseconds, e.g. "2024-05-01T12:34:56.789Z".
std::string formatLogRecord(LogFormat format, std::string_view timestamp, Severity severity,
                            std::string_view component, std::string_view message);
// The current time as formatLogRecord wants it.
std::string logTimestampNow();
// `text` as the inside of a JSON string: quotes, backslashes and control characters escaped,
// invalid UTF-8 replaced by U+FFFD so that every line stays valid JSON.
std::string jsonEscape(std::string_view text);

class Logger;

// One record being written; it is emitted when the statement ends (at destruction).
class LogStream {
 public:
  LogStream(const LogStream&) = delete;
  LogStream& operator=(const LogStream&) = delete;
  LogStream(LogStream&& other) noexcept;
  ~LogStream();

  template <typename T>
  LogStream& operator<<(const T& value) {
    if (buffer_) *buffer_ << value;
    return *this;
  }

 private:
  friend class Logger;
  LogStream(const Logger* logger, Severity severity);

  const Logger* logger_;
  Severity severity_;
  std::unique_ptr<std::ostringstream> buffer_;  // null when the record is disabled
};

class Logger {
 public:
  explicit Logger(std::string component);

  const std::string& component() const { return component_; }
  bool enabled(Severity severity) const { return logEnabled(severity); }

  LogStream stream(Severity severity) const { return LogStream(this, severity); }
  LogStream trace() const { return stream(Severity::kTrace); }
  LogStream debug() const { return stream(Severity::kDebug); }
  LogStream info() const { return stream(Severity::kInfo); }
  LogStream warn() const { return stream(Severity::kWarn); }
  LogStream error() const { return stream(Severity::kError); }

  // Emits a finished message (no level check beyond the sink's).
  void log(Severity severity, std::string_view message) const;

 private:
  std::string component_;
};

// Logs Properties::unknownKeyWarnings() as warnings of component "config".
void warnUnknownKeys(const Properties& properties);

namespace log_level {
constexpr Severity trace = Severity::kTrace;
constexpr Severity debug = Severity::kDebug;
constexpr Severity info = Severity::kInfo;
constexpr Severity warn = Severity::kWarn;
constexpr Severity error = Severity::kError;
}  // namespace log_level

}  // namespace tide

// TIDE_LOG(logger, info) << ...; the operands are not evaluated when the level is off.
#define TIDE_LOG(logger, level)                      \
  if (!(logger).enabled(::tide::log_level::level)) { \
  } else                                             \
    (logger).stream(::tide::log_level::level)
