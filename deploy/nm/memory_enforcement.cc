#include "deploy/nm/memory_enforcement.h"

#include "common/enum_names.h"
#include "common/strings.h"

namespace tide::nm {

namespace {
constexpr const char* kModeNames[] = {"auto", "cgroup", "watchdog", "off"};
}  // namespace

std::string_view memoryEnforcementName(MemoryEnforcement mode) {
  return enumName(mode, kModeNames, "auto");
}

std::optional<MemoryEnforcement> parseMemoryEnforcement(std::string_view text) {
  return enumFromName<MemoryEnforcement>(trim(text), kModeNames, equalsIgnoreCase);
}

}  // namespace tide::nm
