#pragma once

// How a node manager holds containers to their memory: the kernel's cgroup v2 memory
// controller when it is available and delegated to us, else a watchdog that sums the resident
// memory of each container's process group and kills the group when it is over the limit.

#include <optional>
#include <string>
#include <string_view>

namespace tide::nm {

enum class MemoryEnforcement {
  kAuto,      // cgroup when usable, else watchdog (the default)
  kCgroup,    // cgroup v2 only; startup fails when it is not usable
  kWatchdog,  // resident-set watchdog even when cgroups would work
  kOff,       // no enforcement (memory is still recorded)
};

// "auto", "cgroup", "watchdog", "off".
std::string_view memoryEnforcementName(MemoryEnforcement mode);
// Case-insensitive; nullopt for anything else.
std::optional<MemoryEnforcement> parseMemoryEnforcement(std::string_view text);

}  // namespace tide::nm
