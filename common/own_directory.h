#pragma once

// A directory tide keeps its own state in (the AM's staging directories, the node manager's work
// dir) must be this user's: some defaults sit under /tmp, where another user could have made the
// directory first, or a symlink in its place, and so read, plant or swap what tide keeps there.

#include <string>

namespace tide {

struct OwnDirectoryRules {
  bool rootMayOwn = false;  // a directory of root will do too (a shared root such as /tmp itself)
  // A symlink may stand for the directory (one an operator set up); what it leads to must still be
  // this user's. Off, a symlink is refused: where tide makes the directory itself, a symlink there
  // is somebody else's doing.
  bool followSymlink = false;
};

// Makes `path` (and its parents) unless it is there, and says why it will not do, or "": it must be
// a directory owned by this user, within `rules`.
std::string makeOwnDirectory(const std::string& path, OwnDirectoryRules rules = {});

}  // namespace tide
