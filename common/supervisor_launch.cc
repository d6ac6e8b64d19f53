#include "common/supervisor_launch.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tide {
namespace {

constexpr size_t kMaxDescriptors = 4;

void putInteger(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void putString(std::string& out, std::string_view text) {
  putInteger(out, text.size(), 4);
  out.append(text);
}

void putList(std::string& out, const std::vector<std::string>& list) {
  putInteger(out, list.size(), 4);
  for (const std::string& item : list) putString(out, item);
}

// Reads the payload front to back; every read names the field it was for when short.
class Reader {
 public:
  explicit Reader(std::string_view payload) : rest_(payload) {}

  uint64_t integer(int bytes, const char* field) {
    need(static_cast<size_t>(bytes), field);
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) {
      value |= static_cast<uint64_t>(static_cast<unsigned char>(rest_[i])) << (8 * i);
    }
    rest_.remove_prefix(static_cast<size_t>(bytes));
    return value;
  }
  std::string text(const char* field) {
    const uint64_t size = integer(4, field);
    need(size, field);
    std::string value(rest_.substr(0, size));
    rest_.remove_prefix(size);
    return value;
  }
  std::vector<std::string> list(const char* field) {
    const uint64_t count = integer(4, field);
    // Each item takes at least its 4-byte length: a count the payload cannot hold is a lie.
    if (count > rest_.size() / 4) malformed(field, "more items than the message holds");
    std::vector<std::string> items;
    items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) items.push_back(text(field));
    return items;
  }
  void end() const {
    if (!rest_.empty()) malformed("end", std::to_string(rest_.size()) + " bytes too many");
  }

 private:
  void need(uint64_t bytes, const char* field) const {
    if (rest_.size() < bytes) malformed(field, "cut short");
  }
  [[noreturn]] static void malformed(const char* field, const std::string& why) {
    throw std::runtime_error(std::string("malformed launcher message: ") + field + ": " + why);
  }

  std::string_view rest_;
};

bool writeAll(int socket, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(socket, data, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

bool readAll(int socket, char* data, size_t size) {
  while (size > 0) {
    const ssize_t got = ::recv(socket, data, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

void closeAll(std::vector<int>& descriptors) {
  for (int fd : descriptors) ::close(fd);
  descriptors.clear();
}

}  // namespace

std::string encodeLaunch(const LaunchRequest& request) {
  std::string out(1, static_cast<char>(LauncherMessage::Kind::kLaunch));
  putString(out, request.workDir);
  putList(out, request.argv);
  putList(out, request.environment);
  return out;
}

namespace {

std::string encodeWithPid(LauncherMessage::Kind kind, pid_t pid) {
  std::string out(1, static_cast<char>(kind));
  putInteger(out, static_cast<uint64_t>(static_cast<int64_t>(pid)), 8);
  return out;
}

}  // namespace

std::string encodeReap(pid_t pid) {
  return encodeWithPid(LauncherMessage::Kind::kReap, pid);
}

std::string encodeStop(pid_t pid) {
  return encodeWithPid(LauncherMessage::Kind::kStop, pid);
}

std::string encodeNewSlot() {
  return std::string(1, static_cast<char>(LauncherMessage::Kind::kSlot));
}

std::string encodeAnswer(int64_t value) {
  std::string out;
  putInteger(out, static_cast<uint64_t>(value), 8);
  return out;
}

LauncherMessage decodeLauncherMessage(std::string_view payload) {
  Reader reader(payload);
  LauncherMessage message;
  const auto kind = static_cast<char>(reader.integer(1, "kind"));
  if (kind == static_cast<char>(LauncherMessage::Kind::kLaunch)) {
    message.kind = LauncherMessage::Kind::kLaunch;
    message.launch.workDir = reader.text("work dir");
    message.launch.argv = reader.list("argv");
    message.launch.environment = reader.list("environment");
    if (message.launch.argv.empty() || message.launch.argv[0].empty()) {
      throw std::runtime_error("malformed launcher message: argv: no program");
    }
  } else if (kind == static_cast<char>(LauncherMessage::Kind::kSlot)) {
    message.kind = LauncherMessage::Kind::kSlot;
  } else if (kind == static_cast<char>(LauncherMessage::Kind::kReap) ||
             kind == static_cast<char>(LauncherMessage::Kind::kStop)) {
    message.kind = static_cast<LauncherMessage::Kind>(kind);
    const auto pid = static_cast<int64_t>(reader.integer(8, "pid"));
    if (pid <= 1 || pid > INT32_MAX) {
      throw std::runtime_error("malformed launcher message: pid: " + std::to_string(pid));
    }
    message.pid = static_cast<pid_t>(pid);
  } else {
    throw std::runtime_error("malformed launcher message: unknown kind " +
                             std::to_string(static_cast<unsigned char>(kind)));
  }
  reader.end();
  return message;
}

int64_t decodeAnswer(std::string_view payload) {
  Reader reader(payload);
  const auto value = static_cast<int64_t>(reader.integer(8, "answer"));
  reader.end();
  return value;
}

bool sendFrame(int socket, std::string_view payload, const std::vector<int>& descriptors) {
  if (payload.size() > kMaxLauncherFrame || descriptors.size() > kMaxDescriptors) {
    errno = EMSGSIZE;
    return false;
  }
  std::string length;
  putInteger(length, payload.size(), 4);
  iovec vector{length.data(), length.size()};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)] = {};
  if (!descriptors.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * descriptors.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * descriptors.size());
    std::memcpy(CMSG_DATA(header), descriptors.data(), sizeof(int) * descriptors.size());
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent <= 0) return false;
  // The descriptors went with the first byte; the rest of the length, if cut, goes plainly.
  if (!writeAll(socket, length.data() + sent, length.size() - static_cast<size_t>(sent))) {
    return false;
  }
  return writeAll(socket, payload.data(), payload.size());
}

bool receiveFrame(int socket, std::string& payload, std::vector<int>& descriptors) {
  descriptors.clear();
  char length[4];
  iovec vector{length, sizeof length};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      descriptors.push_back(fd);
    }
  }
  if (!readAll(socket, length + got, sizeof length - static_cast<size_t>(got))) {
    closeAll(descriptors);
    return false;
  }
  Reader reader(std::string_view(length, sizeof length));
  const uint64_t size = reader.integer(4, "length");
  if (size > kMaxLauncherFrame) {
    closeAll(descriptors);
    errno = EMSGSIZE;
    return false;
  }
  payload.resize(size);
  if (!readAll(socket, payload.data(), size)) {
    closeAll(descriptors);
    return false;
  }
  return true;
}

}  // namespace tide
