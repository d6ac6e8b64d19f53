#include "bench/rm/node_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <strings.h>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace tide::bench {
namespace {

int bindListener(const std::string& address, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &in.sin_addr) != 1 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof in) != 0 || ::listen(fd, 64) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " +
                             reason);
  }
  return fd;
}

int boundPort(int fd) {
  sockaddr_in in{};
  socklen_t length = sizeof in;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&in), &length);
  return ntohs(in.sin_port);
}

struct Connection {
  size_t node = 0;
  std::string in;
  bool continued = false;  // "100 Continue" sent
};

// The request once its headers and body are all in `in`; nullopt-like false while incomplete.
bool parseRequest(Connection& connection, int fd, NodeRequest& request) {
  const size_t end = connection.in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const std::string head = connection.in.substr(0, end);
  size_t length = 0;
  bool expectsContinue = false;
  size_t lineStart = head.find("\r\n");
  const std::string requestLine = head.substr(0, lineStart);
  while (lineStart != std::string::npos) {
    const size_t next = head.find("\r\n", lineStart + 2);
    const std::string line = head.substr(
        lineStart + 2, next == std::string::npos ? std::string::npos : next - lineStart - 2);
    if (::strncasecmp(line.c_str(), "content-length:", 15) == 0) {
      length = std::stoul(line.substr(15));
    } else if (::strncasecmp(line.c_str(), "expect:", 7) == 0) {
      expectsContinue = true;
    }
    lineStart = next;
  }
  if (connection.in.size() < end + 4 + length) {
    if (expectsContinue && !connection.continued) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] ssize_t sent = ::send(fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL);
      connection.continued = true;
    }
    return false;
  }
  const size_t space = requestLine.find(' ');
  const size_t secondSpace = requestLine.find(' ', space + 1);
  request.node = connection.node;
  request.method = requestLine.substr(0, space);
  request.path = requestLine.substr(space + 1, secondSpace - space - 1);
  request.body = connection.in.substr(end + 4, length);
  return true;
}

void answer(int fd, int status) {
  const std::string response = "HTTP/1.1 " + std::to_string(status) +
                               " X\r\nContent-Type: application/json\r\nContent-Length: "
                               "2\r\nConnection: close\r\n\r\n{}";
  // Small enough for an empty socket buffer; a slow reader only loses its answer.
  [[maybe_unused]] ssize_t sent = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
}

}  // namespace

NodeListener::NodeListener(const std::vector<std::string>& addresses, NodeRequestHandler handler)
    : handler_(std::move(handler)) {
  for (const std::string& address : addresses) {
    listeners_.push_back(bindListener(address, port_));
    if (port_ == 0) port_ = boundPort(listeners_.back());
  }
  for (size_t i = 0; i < listeners_.size(); ++i) epoll_.add(listeners_[i], i);
}

NodeListener::~NodeListener() {
  stop();
  for (int fd : listeners_) ::close(fd);
}

void NodeListener::start() {
  thread_ = std::thread([this] { run(); });
}

void NodeListener::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  epoll_.wake();
  thread_.join();
}

void NodeListener::run() {
  std::map<int, Connection> connections;
  epoll_event events[64];
  while (!stopping_) {
    const int ready = ::epoll_wait(epoll_.fd(), events, 64, 1000);
    for (int i = 0; i < ready; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) continue;
      if (tag < kWakeTag) {
        while (true) {
          const int fd = ::accept4(listeners_[tag], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          connections[fd].node = tag;
          epoll_.add(fd, kConnectionTag + static_cast<uint64_t>(fd));
        }
        continue;
      }
      const int fd = static_cast<int>(tag - kConnectionTag);
      Connection& connection = connections[fd];
      char buffer[16384];
      bool closed = false;
      while (true) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n > 0) {
          connection.in.append(buffer, static_cast<size_t>(n));
          continue;
        }
        closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
      NodeRequest request;
      bool done = closed;
      try {
        if (!closed && parseRequest(connection, fd, request)) {
          answer(fd, handler_(request));
          done = true;
        }
      } catch (const std::exception&) {
        answer(fd, 400);
        done = true;
      }
      if (done) {
        ::epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        connections.erase(fd);
      }
    }
  }
  for (const auto& [fd, connection] : connections) ::close(fd);
}

}  // namespace tide::bench
