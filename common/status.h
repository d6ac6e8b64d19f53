#pragma once

// The outcome of an operation that can be refused: a code a caller can branch on and a message a
// person can read ("max: must be at least 1"). Success is a Status with kOk and no message.
// Header-only. Callers that speak HTTP map codes to statuses in one place
// (rest/http_status.h); nobody parses the message.

#include <ostream>
#include <string>
#include <utility>

#include "common/enum_names.h"

namespace tide {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // the request is wrong whatever the state (a bad value, min > max)
  kNotFound,            // what it names does not exist
  kFailedPrecondition,  // not now, or not in this configuration (a running job's stage)
  kUnavailable,         // a dependency cannot be reached; trying again may help
  kInternal,            // a bug or an unexpected failure
};

inline const char* statusCodeName(StatusCode code) {
  static constexpr const char* kNames[] = {
      "OK", "INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "UNAVAILABLE", "INTERNAL"};
  return enumName(code, kNames);
}

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status okStatus() { return Status(); }
  static Status invalidArgument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status notFound(std::string message) {
    return Status(StatusCode::kNotFound, std::move(message));
  }
  static Status failedPrecondition(std::string message) {
    return Status(StatusCode::kFailedPrecondition, std::move(message));
  }
  static Status unavailable(std::string message) {
    return Status(StatusCode::kUnavailable, std::move(message));
  }
  static Status internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // Empty when ok.
  const std::string& message() const { return message_; }
  // "OK", or "NOT_FOUND: no stage job-1/x".
  std::string toString() const {
    return ok() ? "OK" : std::string(statusCodeName(code_)) + ": " + message_;
  }

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }
  friend bool operator!=(const Status& a, const Status& b) { return !(a == b); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline std::ostream& operator<<(std::ostream& out, const Status& status) {
  return out << status.toString();
}

}  // namespace tide
