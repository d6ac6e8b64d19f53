#include "common/logging.h"

#include <boost/log/attributes/attribute_set.hpp>
#include <boost/log/attributes/constant.hpp>
#include <boost/log/attributes/value_extraction.hpp>
#include <boost/log/core.hpp>
#include <boost/log/sinks/sync_frontend.hpp>
#include <boost/log/sinks/text_ostream_backend.hpp>
#include <boost/smart_ptr/make_shared_object.hpp>
#include <boost/smart_ptr/shared_ptr.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>

#include "common/enum_names.h"
#include "common/strings.h"

namespace tide {
namespace {

namespace logging = boost::log;
using Sink = logging::sinks::synchronous_sink<logging::sinks::text_ostream_backend>;

// Read on every record, so an atomic rather than the Boost core filter (which takes a lock).
std::atomic<int> gLevel{static_cast<int>(Severity::kInfo)};

struct SinkState {
  std::mutex mutex;
  boost::shared_ptr<Sink> sink;
  std::atomic<bool> initialized{false};
};

SinkState& sinkState() {
  static SinkState* state = new SinkState();  // never destroyed: loggers may run at exit
  return *state;
}

void installSink(const LogOptions& options, std::ostream* out) {
  auto backend = boost::make_shared<logging::sinks::text_ostream_backend>();
  if (out == nullptr) {
    backend->add_stream(boost::shared_ptr<std::ostream>(&std::cerr, [](std::ostream*) {}));
  } else {
    backend->add_stream(boost::shared_ptr<std::ostream>(out, [](std::ostream*) {}));
  }
  // Each line is flushed at once: logs of a crashing process must not be lost in a buffer.
  backend->auto_flush(true);
  auto sink = boost::make_shared<Sink>(backend);
  const LogFormat format = options.format;
  sink->set_formatter(
      [format](const logging::record_view& record, logging::formatting_ostream& stream) {
        const auto severity = logging::extract<Severity>("Severity", record);
        const auto channel = logging::extract<std::string>("Channel", record);
        const auto message = logging::extract<std::string>("Message", record);
        const auto timestamp = logging::extract<std::string>("Timestamp", record);
        stream << formatLogRecord(format, timestamp ? *timestamp : logTimestampNow(),
                                  severity ? *severity : Severity::kInfo, channel ? *channel : "",
                                  message ? *message : "");
      });

  auto core = logging::core::get();
  SinkState& state = sinkState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.sink) {
    core->remove_sink(state.sink);
    state.sink->flush();
  }
  core->add_sink(sink);
  state.sink = sink;
  state.initialized = true;
}

// Records logged before initLogging still go somewhere sensible: text on stderr.
void ensureInitialized() {
  SinkState& state = sinkState();
  if (state.initialized.load(std::memory_order_acquire)) return;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.initialized.load()) return;
  }
  LogOptions options;
  options.level = logLevel();
  installSink(options, nullptr);
}

void appendUtf8(std::string& out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xC0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  }
}

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t validUtf8Length(std::string_view text, size_t i, uint32_t* codePoint) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t value = 0;
  uint32_t minimum = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, value = lead & 0x1F, minimum = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, value = lead & 0x0F, minimum = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, value = lead & 0x07, minimum = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    value = (value << 6) | (byte(i + k) & 0x3F);
  }
  if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  *codePoint = value;
  return length;
}

}  // namespace

namespace {
constexpr const char* kSeverityNames[] = {"trace", "debug", "info", "warn", "error"};
}  // namespace

std::string_view severityName(Severity severity) {
  return enumName(severity, kSeverityNames, "info");
}

std::optional<Severity> parseSeverity(std::string_view text) {
  const std::string lowered = toLower(trim(text));
  if (lowered == "warning") return Severity::kWarn;
  return enumFromName<Severity>(lowered, kSeverityNames);
}

LogOptions logOptionsFrom(const Properties& properties) {
  LogOptions options;
  // getString checks the values against the key table's choices and names the key on error.
  options.level = *parseSeverity(properties.getString("log.level"));
  options.format =
      properties.getString("log.format") == "json" ? LogFormat::kJson : LogFormat::kText;
  return options;
}

void initLogging(const LogOptions& options, std::ostream* out) {
  setLogLevel(options.level);
  installSink(options, out);
}

void initLogging(const Properties& properties) {
  initLogging(logOptionsFrom(properties));
}

void setLogLevel(Severity level) {
  gLevel.store(static_cast<int>(level));
}

Severity logLevel() {
  return static_cast<Severity>(gLevel.load());
}

bool logEnabled(Severity severity) {
  return static_cast<int>(severity) >= gLevel.load(std::memory_order_relaxed);
}

void flushLogs() {
  logging::core::get()->flush();
}

std::string logTimestampNow() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];  // ample: the compiler cannot bound the tm fields
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms % 1000));
  return buffer;
}

std::string jsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      uint32_t codePoint = 0;
      const size_t length = validUtf8Length(text, i, &codePoint);
      if (length == 0) {
        appendUtf8(out, 0xFFFD);
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

std::string formatLogRecord(LogFormat format, std::string_view timestamp, Severity severity,
                            std::string_view component, std::string_view message) {
  std::string line;
  if (format == LogFormat::kJson) {
    line += "{\"ts\":\"";
    line += jsonEscape(timestamp);
    line += "\",\"level\":\"";
    line += severityName(severity);
    line += "\",\"component\":\"";
    line += jsonEscape(component);
    line += "\",\"msg\":\"";
    line += jsonEscape(message);
    line += "\"}";
    return line;
  }
  line.append(timestamp);
  line += ' ';
  // Upper case and padded so that the columns after the level line up.
  std::string level = toUpper(severityName(severity));
  level.resize(5, ' ');
  line += level;
  line += " [";
  line.append(component);
  line += "] ";
  // A multi-line message stays one record per line: continuation lines are indented.
  for (char c : message) {
    line += c;
    if (c == '\n') line += "    ";
  }
  return line;
}

LogStream::LogStream(const Logger* logger, Severity severity)
    : logger_(logger), severity_(severity) {
  if (logEnabled(severity)) buffer_ = std::make_unique<std::ostringstream>();
}

LogStream::LogStream(LogStream&& other) noexcept
    : logger_(other.logger_), severity_(other.severity_), buffer_(std::move(other.buffer_)) {}

LogStream::~LogStream() {
  if (!buffer_) return;
  try {
    logger_->log(severity_, buffer_->str());
  } catch (...) {
    // Logging must never take the process down.
  }
}

Logger::Logger(std::string component) : component_(std::move(component)) {}

void Logger::log(Severity severity, std::string_view message) const {
  if (!logEnabled(severity)) return;
  ensureInitialized();
  // Straight to the core, without a Boost source logger: sources serialise their users, and the
  // attributes of one record are all we need. The timestamp is taken here, when the event
  // happens, not when the sink gets to format it.
  logging::attribute_set attributes;
  attributes.insert("Severity", logging::attributes::constant<Severity>(severity));
  attributes.insert("Channel", logging::attributes::constant<std::string>(component_));
  attributes.insert("Timestamp", logging::attributes::constant<std::string>(logTimestampNow()));
  attributes.insert("Message", logging::attributes::constant<std::string>(std::string(message)));
  auto core = logging::core::get();
  logging::record record = core->open_record(attributes);
  if (record) core->push_record(std::move(record));
}

void warnUnknownKeys(const Properties& properties) {
  const Logger logger("config");
  for (const std::string& warning : properties.unknownKeyWarnings()) logger.warn() << warning;
}

}  // namespace tide
