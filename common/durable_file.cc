#include "common/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/append_log.h"

namespace tide {
namespace {

std::string failure(const std::string& step, const std::string& path) {
  return step + " " + path + ": " + std::strerror(errno);
}

// Closes `fd` keeping the errno of the step that failed before it.
void closeKeepingErrno(int fd) {
  const int saved = errno;
  ::close(fd);
  errno = saved;
}

}  // namespace

int createFileDurably(const std::string& path, std::string_view text, std::string& error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    error = failure("cannot create", path);
    return -1;
  }
  if (!writeFully(fd, text)) {
    error = failure("cannot write", path);
  } else if (::fsync(fd) != 0) {
    error = failure("cannot fsync", path);
  } else {
    return fd;
  }
  closeKeepingErrno(fd);
  return -1;
}

Status syncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::internal(failure("cannot open directory", dir));
  if (::fsync(fd) != 0) {
    const std::string error = failure("cannot fsync directory", dir);
    ::close(fd);
    return Status::internal(error);
  }
  ::close(fd);
  return Status();
}

}  // namespace tide
