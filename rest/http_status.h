#pragma once

// The one place a Status becomes an HTTP status code: handlers return or throw through here,
// never choose a code by reading a message.

#include <cstddef>
#include <iterator>

#include "common/status.h"
#include "rest/http_server.h"

namespace tide::rest {

// In StatusCode's order: OK 200, INVALID_ARGUMENT 400, NOT_FOUND 404, FAILED_PRECONDITION 409,
// UNAVAILABLE 503, INTERNAL 500.
inline int httpStatusOf(StatusCode code) {
  static constexpr int kHttpStatus[] = {200, 400, 404, 409, 503, 500};
  const auto index = static_cast<size_t>(code);
  return index < std::size(kHttpStatus) ? kHttpStatus[index] : 500;
}

// Throws the RestError a handler answers with when `status` is not ok.
inline void throwIfError(const Status& status) {
  if (!status.ok()) throw RestError(httpStatusOf(status.code()), status.message());
}

}  // namespace tide::rest
