#pragma once

// The message of the error a piece of code throws, for tests of error texts.

#include <gtest/gtest.h>

#include <string>

namespace tide::testing_support {

// The message of the `E` that `body` throws, or "" when it throws none.
template <typename E, typename Body>
std::string messageOf(Body&& body) {
  try {
    body();
  } catch (const E& error) {
    return error.what();
  }
  return "";
}

// The message of the `E` that `body` throws; a test failure when it throws none.
template <typename E, typename Body>
std::string expectedMessageOf(Body&& body) {
  try {
    body();
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "no exception thrown";
  return "";
}

}  // namespace tide::testing_support
