#pragma once

// The message of the error a piece of code throws, for tests of error texts.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>

namespace tide::testing_support {

// The message of the `E` that `body` throws, or nothing when it throws none.
template <typename E, typename Body>
std::optional<std::string> thrownMessage(Body&& body) {
  try {
    body();
  } catch (const E& error) {
    return std::string(error.what());
  }
  return std::nullopt;
}

// The message of the `E` that `body` throws, or "" when it throws none.
template <typename E, typename Body>
std::string messageOf(Body&& body) {
  return thrownMessage<E>(std::forward<Body>(body)).value_or("");
}

// The message of the `E` that `body` throws; a test failure when it throws none.
template <typename E, typename Body>
std::string expectedMessageOf(Body&& body) {
  std::optional<std::string> message = thrownMessage<E>(std::forward<Body>(body));
  if (!message) ADD_FAILURE() << "no exception thrown";
  return message.value_or("");
}

}  // namespace tide::testing_support
