#pragma once

// Plain TCP client sockets for tests that speak to a server below its HTTP client: raw
// keep-alive HTTP/1.1, half-sent requests, connections from a chosen source address.

#include <chrono>
#include <string>
#include <utility>

namespace tide::testing_support {

// A TCP connection to host:port (an IPv4 address), from `source` when one is given; -1 when
// the socket could not be made, bound or connected, with errno saying why.
int connectTcp(const std::string& host, int port, const std::string& source = "");

// Sends the whole of `bytes` on `sock`; false when it could not.
bool sendAll(int sock, const std::string& bytes);

// What a socket received until its peer closed the connection.
struct ReceivedUntilClosed {
  std::string bytes;
  bool closed = false;  // the peer closed it within the bound (else it was still open)
  bool reset = false;   // closed by a reset (ECONNRESET), not in order
};

// Reads `sock` until its peer closes the connection, within `bound`.
ReceivedUntilClosed receiveUntilClosed(int sock, std::chrono::milliseconds bound);

// A client connection speaking raw HTTP/1.1 keep-alive to 127.0.0.1:port: a request, then its
// answer, again and again on the same connection.
class RawHttpConnection {
 public:
  explicit RawHttpConnection(int port);
  ~RawHttpConnection();
  RawHttpConnection(const RawHttpConnection&) = delete;
  RawHttpConnection& operator=(const RawHttpConnection&) = delete;

  bool connected() const { return sock_ >= 0; }
  // Sends the whole of `request` (its head and body as written); false when it could not.
  bool send(const std::string& request);
  // The status and body of the next answer, within `bound`; status 0 when none came.
  std::pair<int, std::string> receive(std::chrono::milliseconds bound = std::chrono::seconds(20));

 private:
  int sock_ = -1;
  std::string buffer_;  // bytes received and not yet part of an answer handed out
};

}  // namespace tide::testing_support
