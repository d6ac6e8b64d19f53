#pragma once

// Rewriting a file so that it survives a crash of the machine, not only of the process:
// tide-rm's state store, the AM's recovery journal and its event log each compact their file
// the same way (the whole text under a name aside, fsync'd, renamed over the file, and the
// directory fsync'd so that the rename itself is on disk). The steps are here once, each
// failure naming the step and the file.

#include <string>
#include <string_view>

#include "common/status.h"

namespace tide {

// Creates or truncates `path` (mode 0600, close-on-exec), writes all of `text` and fsyncs it. A
// symlink at `path` is refused (ELOOP), never followed: it could point at any file of this user.
// Returns the open file, which the caller closes or keeps appending to; on failure -1, with
// `error` set to "cannot create|write|fsync PATH: <strerror>" and nothing left open.
int createFileDurably(const std::string& path, std::string_view text, std::string& error);

// fsyncs the directory `dir`, so that a rename into it survives a crash. kInternal
// "cannot open directory DIR: ..." or "cannot fsync directory DIR: ..." when it cannot.
Status syncDirectory(const std::string& dir);

}  // namespace tide
