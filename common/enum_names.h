#pragma once

// An enum's names as a table in the enum's order, instead of a switch per enum:
//
//   constexpr const char* kSeverityNames[] = {"trace", "debug", "info", "warn", "error"};
//   enumName(Severity::kWarn, kSeverityNames)             // "warn"
//   enumFromName<Severity>("warn", kSeverityNames)        // Severity::kWarn
//
// The enum's values must be 0, 1, 2, ... in the table's order. Header-only.

#include <cstddef>
#include <optional>
#include <string_view>

namespace tide {

// The name of `value`, or `fallback` for a value beyond the table.
template <typename Enum, size_t N>
constexpr const char* enumName(Enum value, const char* const (&names)[N],
                               const char* fallback = "UNKNOWN") {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : fallback;
}

// The value named `text` (compared as `same` says: exactly by default), or nullopt.
template <typename Enum, size_t N, typename Same>
std::optional<Enum> enumFromName(std::string_view text, const char* const (&names)[N], Same same) {
  for (size_t i = 0; i < N; ++i) {
    if (same(text, std::string_view(names[i]))) return static_cast<Enum>(i);
  }
  return std::nullopt;
}
template <typename Enum, size_t N>
std::optional<Enum> enumFromName(std::string_view text, const char* const (&names)[N]) {
  return enumFromName<Enum>(text, names,
                            [](std::string_view a, std::string_view b) { return a == b; });
}

}  // namespace tide
