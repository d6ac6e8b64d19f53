#pragma once

// Writing a small file so that whoever reads it (a test polling for a port file, a restarted
// daemon) sees the old content or the new, never a part: written under a temporary name
// (path + ".tmp") and renamed over the file.

#include <string>

#include "common/status.h"

namespace tide {

// kInternal naming the file and the step when it cannot be written or renamed.
Status writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace tide
