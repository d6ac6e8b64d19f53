#include "deploy/nm/memory_enforcement.h"

#include "common/strings.h"

namespace tide::nm {

std::string_view memoryEnforcementName(MemoryEnforcement mode) {
  switch (mode) {
    case MemoryEnforcement::kAuto:
      return "auto";
    case MemoryEnforcement::kCgroup:
      return "cgroup";
    case MemoryEnforcement::kWatchdog:
      return "watchdog";
    case MemoryEnforcement::kOff:
      return "off";
  }
  return "auto";
}

std::optional<MemoryEnforcement> parseMemoryEnforcement(std::string_view text) {
  for (MemoryEnforcement mode : {MemoryEnforcement::kAuto, MemoryEnforcement::kCgroup,
                                 MemoryEnforcement::kWatchdog, MemoryEnforcement::kOff}) {
    if (equalsIgnoreCase(trim(text), memoryEnforcementName(mode))) return mode;
  }
  return std::nullopt;
}

}  // namespace tide::nm
