#pragma once

// Bounded polling: every wait in the tests goes through here, so that no test sleeps a fixed
// time hoping something happened.

#include <chrono>
#include <functional>

namespace tide::testing_support {

// Calls `condition` every `every` until it holds or `bound` has passed; returns whether it
// held. The last call is made at or after the bound, so a condition that holds by then counts.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds bound,
                std::chrono::milliseconds every = std::chrono::milliseconds(10));

}  // namespace tide::testing_support
