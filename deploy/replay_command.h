#pragma once

// What `tide simulate` and `tide tune` share: both replay a workload trace (--trace FILE)
// under the allocation settings of their properties.

#include <string>

#include "allocation/allocation_config.h"
#include "allocation/workload_trace.h"
#include "common/clock.h"
#include "common/command_line.h"

namespace tide::deploy {

// The command line with --trace FILE, showing the allocation keys in its help.
CommandLine replayCommandLine(std::string program, std::string synopsis);

// The --trace path; a ConfigError when it is missing.
std::string requireTracePath(const CommandLine& cli);

// The allocation settings of the properties; their warnings (unknown keys among them) go to
// stderr as "<program>: warning: ...".
allocation::AllocationConfig replayAllocationConfig(const CommandLine& cli,
                                                    const std::string& program);

// The duration option --NAME (units as the config keys'; a bare number is ms), or `fallback`
// when it is not given; a bad or infinite one is a ConfigError naming the option.
DurationMs replayDurationOption(const CommandLine& cli, const std::string& name,
                                DurationMs fallback);

// The trace at `path`; a bad one is a ConfigError (exit 2) naming the file and line.
allocation::Trace loadReplayTrace(const std::string& path);

}  // namespace tide::deploy
