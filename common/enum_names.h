#pragma once

// An enum's names as a table in the enum's order, instead of a switch per enum: the name of
// `value`, or "UNKNOWN" for a value beyond the table. Header-only.

#include <cstddef>

namespace tide {

template <typename Enum, size_t N>
constexpr const char* enumName(Enum value, const char* const (&names)[N]) {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : "UNKNOWN";
}

}  // namespace tide
