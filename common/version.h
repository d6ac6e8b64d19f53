#pragma once

// What `--version` prints for every tide binary: the project's version (CMake's
// PROJECT_VERSION), the git commit it was configured from ("unknown" outside a git checkout),
// and the build type.

#include <string>
#include <string_view>

namespace tide {

std::string_view versionNumber();  // "0.1.0"
std::string_view gitCommit();      // "7041c3d" or "unknown"
std::string_view buildType();      // "RelWithDebInfo"

// "tide-rm 0.1.0 (commit 7041c3d, RelWithDebInfo)"
std::string versionLine(std::string_view program);

}  // namespace tide
