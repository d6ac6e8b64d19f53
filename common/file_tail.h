#pragma once

// The end of a log file, for diagnostics: why a container exited is usually in the last lines
// of its stderr (YARN's NodeManager puts them in the container's diagnostics too).

#include <cstddef>
#include <string>

namespace tide {

// The last `maxLines` non-empty lines of the file, reading at most its last `maxBytes` bytes
// (a partial first line is dropped), joined with '\n' and without a trailing one. Empty when
// the file cannot be read or holds nothing.
std::string lastLinesOf(const std::string& path, size_t maxLines, size_t maxBytes = 4096);

}  // namespace tide
