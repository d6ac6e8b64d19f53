#pragma once

// The one place a Status becomes an HTTP status code: handlers return or throw through here,
// never choose a code by reading a message.

#include "common/status.h"
#include "rest/http_server.h"

namespace tide::rest {

inline int httpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

// Throws the RestError a handler answers with when `status` is not ok.
inline void throwIfError(const Status& status) {
  if (!status.ok()) throw RestError(httpStatusOf(status.code()), status.message());
}

}  // namespace tide::rest
