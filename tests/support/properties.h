#pragma once

// Properties from a table of key and value, for tests that configure a component in one
// statement instead of a run of set() calls.

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "common/config.h"

namespace tide::testing_support {

inline Properties propertiesOf(
    std::initializer_list<std::pair<std::string_view, std::string>> values) {
  Properties properties;
  for (const auto& [key, value] : values) properties.set(key, value);
  return properties;
}

}  // namespace tide::testing_support
