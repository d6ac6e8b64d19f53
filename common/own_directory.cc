#include "common/own_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace tide {

std::string makeOwnDirectory(const std::string& path, OwnDirectoryRules rules) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return "cannot create " + path + ": " + ec.message();
  struct stat info {};
  if ((rules.followSymlink ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info)) != 0) {
    return "cannot read " + path + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(info.st_mode)) return path + " is not a directory";
  if (info.st_uid != ::geteuid() && !(rules.rootMayOwn && info.st_uid == 0)) {
    return path + " belongs to uid " + std::to_string(info.st_uid) + ", not to this user";
  }
  return "";
}

}  // namespace tide
