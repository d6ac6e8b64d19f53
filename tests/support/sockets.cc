#include "tests/support/sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace tide::testing_support {
namespace {

sockaddr_in ipv4Address(const std::string& host, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &address.sin_addr);
  return address;
}

// Closes `sock` and answers -1, keeping the errno of the call that failed.
int failed(int sock) {
  const int error = errno;
  ::close(sock);
  errno = error;
  return -1;
}

}  // namespace

int connectTcp(const std::string& host, int port, const std::string& source) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0) return -1;
  if (!source.empty()) {
    const sockaddr_in local = ipv4Address(source, 0);
    if (::bind(sock, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
      return failed(sock);
    }
  }
  const sockaddr_in server = ipv4Address(host, port);
  if (::connect(sock, reinterpret_cast<const sockaddr*>(&server), sizeof server) != 0) {
    return failed(sock);
  }
  return sock;
}

bool sendAll(int sock, const std::string& bytes) {
  return sock >= 0 && ::send(sock, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                          static_cast<ssize_t>(bytes.size());
}

ReceivedUntilClosed receiveUntilClosed(int sock, std::chrono::milliseconds bound) {
  ReceivedUntilClosed received;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd fd{sock, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&fd, 1, static_cast<int>(left.count())) <= 0) {
      return received;
    }
    char chunk[4096];
    const ssize_t n = ::recv(sock, chunk, sizeof chunk, 0);
    if (n > 0) {
      received.bytes.append(chunk, static_cast<size_t>(n));
      continue;
    }
    received.closed = true;
    received.reset = n < 0 && errno == ECONNRESET;
    return received;
  }
}

RawHttpConnection::RawHttpConnection(int port) : sock_(connectTcp("127.0.0.1", port)) {}

RawHttpConnection::~RawHttpConnection() {
  if (sock_ >= 0) ::close(sock_);
}

bool RawHttpConnection::send(const std::string& request) {
  return sendAll(sock_, request);
}

std::pair<int, std::string> RawHttpConnection::receive(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    const size_t end = buffer_.find("\r\n\r\n");
    if (end != std::string::npos) {
      const size_t at = buffer_.find("Content-Length: ");
      const size_t length =
          at == std::string::npos || at > end ? 0 : std::stoul(buffer_.substr(at + 16));
      if (buffer_.size() >= end + 4 + length) {
        const int status = std::stoi(buffer_.substr(9, 3));
        std::string body = buffer_.substr(end + 4, length);
        buffer_.erase(0, end + 4 + length);
        return {status, body};
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd fd{sock_, POLLIN, 0};
    if (sock_ < 0 || left.count() <= 0 || ::poll(&fd, 1, static_cast<int>(left.count())) <= 0) {
      return {0, ""};
    }
    char chunk[8192];
    const ssize_t n = ::recv(sock_, chunk, sizeof chunk, 0);
    if (n <= 0) return {0, ""};
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace tide::testing_support
