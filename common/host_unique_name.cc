#include "common/host_unique_name.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace tide {

std::optional<HostUniqueName> HostUniqueName::claim(const std::string& name) {
  if (name.empty() || name.size() > kMaxLength) {
    throw std::invalid_argument("a host-unique name has 1 to " + std::to_string(kMaxLength) +
                                " characters: '" + name + "'");
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket(AF_UNIX)");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // sun_path[0] == '\0' puts the name in the abstract namespace; its length is the address's.
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) {
    return HostUniqueName(name, fd);
  }
  const int error = errno;
  ::close(fd);
  if (error == EADDRINUSE) return std::nullopt;
  throw std::system_error(error, std::generic_category(), "bind of the abstract socket @" + name);
}

HostUniqueName::HostUniqueName(HostUniqueName&& other) noexcept
    : name_(std::move(other.name_)), fd_(std::exchange(other.fd_, -1)) {}

HostUniqueName& HostUniqueName::operator=(HostUniqueName&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    name_ = std::move(other.name_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

HostUniqueName::~HostUniqueName() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tide
