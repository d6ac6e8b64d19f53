#pragma once

// An HTTP server on cpp-httplib for tide's REST endpoints: binds (port 0 = ephemeral), serves
// from a thread pool in the background, limits request bodies, checks auth before handlers,
// and answers every error with a JSON body {"error": {"code": <status>, "message": "..."}}.

#include <httplib.h>
#include <rapidjson/document.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "rest/guarded_server.h"
#include "rest/http_client.h"  // LogFunction

namespace tide::rest {

// Thrown by a handler to answer with this status and a JSON error naming `message`.
// JsonParseError and JsonFieldError thrown by a handler become 400s the same way; any other
// exception becomes a 500 carrying only its what().
class RestError : public std::runtime_error {
 public:
  RestError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// Decides whether a request may reach its handler: nullopt lets it through, a string refuses
// it with a 401 whose message is that string.
using AuthHook = std::function<std::optional<std::string>(const httplib::Request&)>;

// An AuthHook accepting exactly "Authorization: Bearer <token>" (compared in constant time).
AuthHook bearerTokenAuth(std::string token);

using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;

struct HttpServerOptions {
  // Only loopback by default: exposing a port beyond the host must be a deliberate choice.
  std::string bindAddress = "127.0.0.1";
  int port = 0;  // 0 = an ephemeral port, see HttpServer::port()
  // When `port` (not 0) cannot be bound, try port+1, ... up to port+portRetries (Spark's
  // spark.port.maxRetries): two AMs on one host with the same ui.port both come up.
  int portRetries = 0;
  // Serve on this Unix domain socket instead of bindAddress:port when set.
  std::string unixSocketPath;
  // Worker threads kept ready; more are started, up to maxThreads, while requests wait (so slow
  // clients hold only themselves).
  size_t threadCount = 8;
  // At most this many workers (0: maxConnections). A connection holds one only while it has a
  // request to read or answer: idle kept-alive connections and deferred replies hold none.
  size_t maxThreads = 0;
  // Connections open at once, in all and from one client address; beyond either, a new
  // connection gets a 503 and is closed.
  size_t maxConnections = 1024;
  size_t maxConnectionsPerAddress = 256;
  // Larger request bodies get a 413 without reaching a handler.
  size_t maxRequestBodyBytes = 1 << 20;
  // How long an idle kept-alive connection stays open, and so how long stop() may wait for
  // one: short, because every tide process stops its server on the way out, and reconnecting
  // on loopback costs next to nothing.
  std::chrono::seconds keepAliveTimeout{1};
  std::chrono::seconds readTimeout{5};
  std::chrono::seconds writeTimeout{5};
  // A request's line, headers and body must arrive within this time of its first byte, however
  // slowly they trickle in (slowloris); otherwise its connection is closed.
  std::chrono::seconds requestReadTimeout{10};
  // PEM certificate (chain) and key: set = HTTPS only (tls.certFile, tls.keyFile).
  std::string tlsCertFile;
  std::string tlsKeyFile;
  // start() gives up when the server is not accepting connections within this time.
  std::chrono::milliseconds startTimeout{5000};
  AuthHook auth;  // unset = no authentication
  // Exact paths (e.g. "/health") served without the auth check.
  std::set<std::string> authExemptPaths;
  LogFunction log;  // unset = stderr
};

// Routes must be registered before start(). Handlers run on pool threads, several at once.
class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Patterns are httplib regexes over the path, e.g. R"(/api/v1/executors/([^/]+))";
  // captures are in req.matches.
  HttpServer& get(const std::string& pattern, RouteHandler handler);
  HttpServer& post(const std::string& pattern, RouteHandler handler);
  HttpServer& put(const std::string& pattern, RouteHandler handler);
  HttpServer& patch(const std::string& pattern, RouteHandler handler);
  HttpServer& del(const std::string& pattern, RouteHandler handler);

  // Binds, starts serving on a background thread and returns once it accepts connections;
  // returns the bound TCP port (0 for a Unix socket). Throws std::runtime_error when it cannot
  // bind or does not come up within startTimeout. Call at most once.
  int start();
  // Stops accepting, waits for running handlers and joins the thread. Idempotent.
  void stop();

  bool running() const;
  // Resumes every reply a handler deferred (rest::deferReply, a long poll) soon, each on a
  // worker. Thread-safe.
  void wakeDeferred() { server_->wakeDeferred(); }
  // The bound port once started (the real one when options.port was 0).
  int port() const { return boundPort_; }
  // "http://127.0.0.1:PORT" ("https://" with TLS), or "unix:/path" for a Unix socket: what
  // HttpClient takes.
  std::string baseUrl() const;

  // The underlying server, for what the wrapper does not cover (static files, streaming).
  httplib::Server& native() { return *server_; }

 private:
  RouteHandler wrap(RouteHandler handler);
  // For start(): the limits, timeouts and socket options of options_, and the JSON answers to
  // errors and exceptions outside the routes.
  void configure();
  // For start(): binds the Unix socket or the TCP port (trying portRetries more); returns where,
  // for messages ("unix:PATH" or "HOST:PORT").
  std::string bindSocket();
  void serve();

  HttpServerOptions options_;
  std::unique_ptr<GuardedServer> server_;
  std::thread thread_;
  int boundPort_ = 0;
  bool started_ = false;
  std::mutex stateMutex_;
  std::condition_variable stateChanged_;
  bool serveReturned_ = false;
};

// The JSON error body every tide endpoint uses: {"error":{"code":404,"message":"..."}}.
std::string jsonErrorBody(int status, const std::string& message);

// Answers with a JSON body and status.
void replyJson(httplib::Response& res, const rapidjson::Value& body, int status = 200);
void replyJson(httplib::Response& res, std::string jsonText, int status = 200);

// A non-negative integer query parameter (?limit=40), or `fallback` when absent; throws
// RestError 400 naming the parameter and the text otherwise.
int64_t queryInteger(const httplib::Request& req, const char* name, int64_t fallback);
// Answers with jsonErrorBody(status, message).
void replyError(httplib::Response& res, int status, const std::string& message);

}  // namespace tide::rest
