#pragma once

// An HTTP/1.1 client on libcurl for tide's REST calls: one kept-alive connection per client,
// connect and request timeouts, retries with exponential backoff and full jitter for
// idempotent calls, JSON helpers, and errors that say which call failed and why.

#include <rapidjson/document.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tide::rest {

using LogFunction = std::function<void(const std::string&)>;

// Writes the line to stderr; the default wherever this library logs.
void logToStderr(const std::string& line);

// Request headers, in order; names are sent as given.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  long status = 0;
  std::string body;
  // Response header names lower-cased (HTTP names are case-insensitive); the last one wins.
  std::map<std::string, std::string> headers;
  // New connections curl opened for this response's final attempt: 0 means it reused a
  // kept-alive connection.
  long newConnections = 0;
  // Attempts made (1 + retries).
  int attempts = 0;

  bool ok() const { return status >= 200 && status < 300; }
  // The header's value, or "" when absent; `name` in any case.
  std::string header(const std::string& name) const;
};

// A call failed: transport failure (status() == 0) or, from the helpers that expect success,
// a non-2xx answer or an unreadable body. what() reads like
//   POST http://127.0.0.1:8088/ws/v1/cluster/apps: HTTP 400: {"error":...}
//   GET http://127.0.0.1:9/x: transport error: Couldn't connect to server (Failed to connect ...)
class HttpError : public std::runtime_error {
 public:
  HttpError(std::string method, std::string url, long status, std::string bodyExcerpt,
            std::string detail);

  // Builds the error for a completed call with a non-2xx status.
  static HttpError fromResponse(const std::string& method, const std::string& url,
                                const HttpResponse& response);

  const std::string& method() const { return method_; }
  const std::string& url() const { return url_; }
  // HTTP status, or 0 when no response arrived.
  long status() const { return status_; }
  // At most kBodyExcerptChars of the response body.
  const std::string& bodyExcerpt() const { return bodyExcerpt_; }
  // curl's error text for a transport failure, or what else went wrong (e.g. bad JSON).
  const std::string& detail() const { return detail_; }
  bool isTransportError() const { return status_ == 0; }

  static constexpr size_t kBodyExcerptChars = 300;

 private:
  std::string method_;
  std::string url_;
  long status_;
  std::string bodyExcerpt_;
  std::string detail_;
};

struct RetryPolicy {
  // Total attempts including the first; 1 disables retries.
  int maxAttempts = 4;
  // Retry n (1-based) waits a uniformly random time in [0, min(maxBackoff,
  // initialBackoff * multiplier^(n-1))] ("full jitter"), so clients that failed together do
  // not retry together.
  std::chrono::milliseconds initialBackoff{100};
  std::chrono::milliseconds maxBackoff{5000};
  double multiplier = 2.0;
  // Answers that mean "the server (or a proxy) is briefly unable"; retried when idempotent.
  std::set<long> retryableStatuses{502, 503, 504};
  // Broken or refused connections, sends and receives, empty replies; retried when idempotent.
  bool retryConnectionErrors = true;
  // A timed-out request has already spent the caller's whole budget, so it is not retried
  // unless asked for.
  bool retryTimeouts = false;
  // A refused connect or unresolvable host means the request never left this process, so
  // retrying it is safe even for a POST that is not idempotent.
  bool retryUnsentRequests = true;

  // The upper bound of the delay before retry `retryNumber` (1-based).
  std::chrono::milliseconds backoffCeiling(int retryNumber) const;
  // The delay before retry `retryNumber`: uniform in [0, backoffCeiling(retryNumber)].
  std::chrono::milliseconds backoffDelay(int retryNumber, std::mt19937_64& rng) const;
};

struct HttpClientOptions {
  std::chrono::milliseconds connectTimeout{3000};
  // Whole request, connect included. Per-call override in RequestOptions.
  std::chrono::milliseconds requestTimeout{30000};
  RetryPolicy retry;
  // Sent with every request (e.g. {"Authorization", "Bearer X"}); per-call headers with the
  // same name replace them.
  HttpHeaders defaultHeaders;
  // Seeds the jitter; unset = from std::random_device. Tests fix it.
  std::optional<uint64_t> rngSeed;
  // How to wait between retries; tests inject one that records instead of sleeping.
  std::function<void(std::chrono::milliseconds)> sleep;
  // Retries are logged here; unset = stderr.
  LogFunction log;
  // For https:// URLs: the PEM file of the CA that signed the servers' certificates
  // (tls.caFile); unset = the system's CAs. The peer and its host name are always verified.
  std::string caFile;
};

struct RequestOptions {
  // Unset: GET, HEAD, PUT, DELETE and OPTIONS are idempotent, POST and PATCH are not.
  // Set it true for a POST the server treats idempotently (e.g. carries a request id).
  std::optional<bool> idempotent;
  std::optional<std::chrono::milliseconds> timeout;
};

// The client keeps one curl easy handle, and with it a kept-alive connection to the server,
// for its lifetime. Thread-safety: calls are internally locked, so sharing one client between
// threads is safe, but its calls then run one at a time; give each thread that needs
// parallel calls its own client.
// A JSON request body: text as it is, or a document written out once. Implicit, so that a
// caller passes whichever it has.
class JsonBody {
 public:
  JsonBody(std::string text) : text_(std::move(text)) {}
  JsonBody(const char* text) : text_(text) {}
  JsonBody(const rapidjson::Value& value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class HttpClient {
 public:
  // baseUrl: "http://host:port" (optionally with a path prefix), or "unix:/path/to/socket"
  // to talk HTTP over a Unix domain socket (e.g. slurmrestd). Paths passed to the calls are
  // appended to it; a path that is itself an absolute http(s) URL is used as is.
  explicit HttpClient(std::string baseUrl, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request, retrying per the policy. Returns the final answer whatever its
  // status; throws HttpError only when no answer arrived.
  HttpResponse request(const std::string& method, const std::string& path,
                       const std::string& body = "", const HttpHeaders& headers = {},
                       const RequestOptions& options = {});

  // JSON helpers: send `body` (if any) as application/json, expect a 2xx answer and parse
  // it. A non-2xx answer or a body that is not JSON throws HttpError. An empty 2xx body
  // (e.g. 204) yields a null document.
  rapidjson::Document getJson(const std::string& path, const RequestOptions& options = {});
  rapidjson::Document postJson(const std::string& path, const JsonBody& body,
                               const RequestOptions& options = {});
  rapidjson::Document putJson(const std::string& path, const JsonBody& body,
                              const RequestOptions& options = {});
  rapidjson::Document deleteJson(const std::string& path, const RequestOptions& options = {});
  // Any method; the general form of the helpers above.
  rapidjson::Document requestJson(const std::string& method, const std::string& path,
                                  const std::string& jsonText, const RequestOptions& options = {});

  // Replaces or adds a default header (e.g. a refreshed token).
  void setDefaultHeader(const std::string& name, const std::string& value);

  // The URL a path resolves to (the dummy http://localhost one for a Unix socket).
  std::string urlFor(const std::string& path) const;
  const std::string& baseUrl() const { return baseUrl_; }
  // Empty unless the client talks over a Unix socket.
  const std::string& unixSocketPath() const { return unixSocketPath_; }

 private:
  struct Attempt;
  Attempt performOnce(const std::string& method, const std::string& url, const std::string& body,
                      const HttpHeaders& headers, std::chrono::milliseconds timeout);
  bool shouldRetry(const Attempt& attempt, bool idempotent) const;

  std::string baseUrl_;
  std::string unixSocketPath_;
  HttpClientOptions options_;
  std::mutex mutex_;  // guards curl_, rng_ and options_.defaultHeaders
  void* curl_;        // CURL*; void to keep curl.h out of every includer
  std::mt19937_64 rng_;
};

}  // namespace tide::rest
