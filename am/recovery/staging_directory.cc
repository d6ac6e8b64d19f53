#include "am/recovery/staging_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/durable_file.h"
#include "common/own_directory.h"
#include "rest/messages/credentials.h"

namespace tide::am {

namespace {

constexpr char kOwnerFile[] = "owner";

std::string readOwner(const std::string& path) {
  std::ifstream in(path);
  std::string owner;
  std::getline(in, owner);
  return owner;
}

// Whether `directory` is `owner`'s: it was, or it is now (claimed by linking a complete owner
// file into place, so that of two claims at once exactly one wins and neither reads half a file).
// "" in *error when the directory is another application's.
bool claimOne(const std::string& directory, const std::string& owner, std::string* error) {
  if (std::string why = makeOwnDirectory(directory); !why.empty()) {
    *error = why;
    return false;
  }
  ::chmod(directory.c_str(), 0700);
  std::error_code ec;
  const std::string ownerPath = directory + "/" + kOwnerFile;
  if (!std::filesystem::exists(ownerPath, ec)) {
    // A draft of this process's own, complete and synced before it is linked into place.
    const std::string draft = ownerPath + "." + std::to_string(::getpid()) + ".tmp";
    const int fd = createFileDurably(draft, owner + "\n", *error);
    if (fd < 0) return false;
    ::close(fd);
    const int linked = ::link(draft.c_str(), ownerPath.c_str());
    const int linkError = errno;
    ::unlink(draft.c_str());
    if (linked != 0 && linkError != EEXIST) {
      *error = "cannot write " + ownerPath + ": " + std::strerror(linkError);
      return false;
    }
  }
  return readOwner(ownerPath) == owner;
}

}  // namespace

std::string stagingOwnerOf(const std::string& appSecret) {
  return rest::hmacSha256Hex(appSecret, "tide-staging-owner");
}

StagingClaim claimStagingDirectory(const std::string& root, const std::string& applicationId,
                                   const std::string& appSecret) {
  const std::string owner = stagingOwnerOf(appSecret);
  const std::vector<std::string> candidates = {
      root + "/" + applicationId, root + "/" + applicationId + "-" + owner.substr(0, 16)};
  StagingClaim claim;
  if (std::string why = makeOwnDirectory(root, {/*rootMayOwn=*/true, /*followSymlink=*/true});
      !why.empty()) {
    claim.note = why;
    return claim;
  }
  std::vector<std::string> notes;
  for (const std::string& candidate : candidates) {
    std::string error;
    if (claimOne(candidate, owner, &error)) {
      claim.directory = candidate;
      break;
    }
    notes.push_back(error.empty() ? candidate + " belongs to another application with the same id"
                                  : error);
  }
  std::ostringstream note;
  for (size_t i = 0; i < notes.size(); ++i) note << (i > 0 ? "; " : "") << notes[i];
  claim.note = note.str();
  return claim;
}

}  // namespace tide::am
