#pragma once

// A request the resource manager refuses, with the HTTP status that says why. ClusterState
// throws it without knowing about HTTP servers; the REST layer turns it into a JSON error.

#include <stdexcept>
#include <string>

namespace tide::rm {

class RmError : public std::runtime_error {
 public:
  static constexpr int kBadRequest = 400;
  static constexpr int kUnauthorized = 401;
  static constexpr int kNotFound = 404;
  static constexpr int kConflict = 409;

  RmError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace tide::rm
