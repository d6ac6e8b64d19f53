#pragma once

// The command-line options of a load generator that each set one field of its Options: a
// table of names and fields by the field's type, so that reading them is one loop over the
// table, not an `if` per option.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace tide::bench {

template <typename Options, typename T>
using OptionField = std::pair<const char*, T Options::*>;

// The option's text as the field's type; std::invalid_argument or std::out_of_range when it
// is not a number.
inline void readOption(const std::string& text, int& field) {
  field = std::stoi(text);
}
inline void readOption(const std::string& text, int64_t& field) {
  field = std::stoll(text);
}
inline void readOption(const std::string& text, std::string& field) {
  field = text;
}

// Whether `table` has an option named `key`.
template <typename Options, typename T, size_t N>
bool hasOption(const OptionField<Options, T> (&table)[N], const std::string& key) {
  for (const auto& option : table) {
    if (key == option.first) return true;
  }
  return false;
}

// Sets the field `key` names in `table` from `text`; false when the table has no `key`.
template <typename Options, typename T, size_t N>
bool assignOption(const OptionField<Options, T> (&table)[N], const std::string& key,
                  const std::string& text, Options& options) {
  for (const auto& [name, field] : table) {
    if (key != name) continue;
    readOption(text, options.*field);
    return true;
  }
  return false;
}

}  // namespace tide::bench
