#pragma once

// The values of a map, in the order of one of their fields: how the daemons list what they keep
// in maps by id (containers, applications) in the order it was created, not the order of ids.

#include <algorithm>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

namespace tide {
namespace sorted_values_detail {

template <typename T>
const T* pointerTo(const T& value) {
  return &value;
}
template <typename T>
const T* pointerTo(const std::unique_ptr<T>& value) {
  return value.get();
}

struct Every {
  template <typename T>
  bool operator()(const T&) const {
    return true;
  }
};

}  // namespace sorted_values_detail

// Pointers to the values of `map` (held by value or by unique_ptr) that `keep` accepts, ordered
// by `rank` (a data member pointer such as &Container::sequence, or any callable on a value).
template <typename Map, typename Rank, typename Keep = sorted_values_detail::Every>
auto valuesSortedBy(const Map& map, Rank rank, Keep keep = {}) {
  using Value = std::remove_pointer_t<decltype(sorted_values_detail::pointerTo(
      std::declval<const typename Map::mapped_type&>()))>;
  std::vector<const Value*> values;
  values.reserve(map.size());
  for (const auto& entry : map) {
    const Value* value = sorted_values_detail::pointerTo(entry.second);
    if (keep(*value)) values.push_back(value);
  }
  std::sort(values.begin(), values.end(), [&rank](const Value* a, const Value* b) {
    return std::invoke(rank, *a) < std::invoke(rank, *b);
  });
  return values;
}

}  // namespace tide
