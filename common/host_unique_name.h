#pragma once

// A name at most one live process on this host holds at a time: an abstract Unix socket bound
// to it (Linux; one namespace per network namespace). The kernel frees the name when its holder
// exits, however it exits, so a crashed holder never blocks it and nothing is left on disk.
// tide-rm holds its cluster timestamp this way: that timestamp is in every application id, and
// application ids key state that every cluster of a user shares (the AM's staging directory, the
// event logs of the history), so two tide-rm that start in the same millisecond must not both
// take it.

#include <optional>
#include <string>

namespace tide {

class HostUniqueName {
 public:
  // The longest name an abstract socket address holds.
  static constexpr size_t kMaxLength = 107;

  // Holds `name` for as long as the returned object lives; nullopt when a live process holds it.
  // Throws std::invalid_argument for a name that is empty or too long, and std::system_error when
  // the socket cannot be made (other errors than the name being taken).
  static std::optional<HostUniqueName> claim(const std::string& name);

  HostUniqueName(HostUniqueName&& other) noexcept;
  HostUniqueName& operator=(HostUniqueName&& other) noexcept;
  HostUniqueName(const HostUniqueName&) = delete;
  HostUniqueName& operator=(const HostUniqueName&) = delete;
  ~HostUniqueName();

  const std::string& name() const { return name_; }

 private:
  HostUniqueName(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}

  std::string name_;
  int fd_ = -1;  // close-on-exec: a child tide-rm starts does not keep the name after it
};

}  // namespace tide
