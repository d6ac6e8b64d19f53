#include "rest/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "rest/json.h"

namespace tide::rest {
namespace {

constexpr char kJsonType[] = "application/json";

const char* reasonPhrase(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 409:
      return "conflict";
    case 413:
      return "request body too large";
    case 415:
      return "unsupported media type";
    case 429:
      return "too many requests";
    case 500:
      return "internal server error";
    case 501:
      return "not implemented";
    case 503:
      return "service unavailable";
    default:
      return status >= 500 ? "server error" : "client error";
  }
}

// Constant-time comparison, so response timing does not reveal how much of a token matched.
bool sameSecret(const std::string& a, const std::string& b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return difference == 0;
}

std::string tooLargeMessage(size_t limit) {
  return "request body exceeds the limit of " + std::to_string(limit) + " bytes";
}

}  // namespace

std::string jsonErrorBody(int status, const std::string& message) {
  JsonWriter writer;
  writer.startObject()
      .key("error")
      .startObject()
      .field("code", status)
      .field("message", message)
      .endObject()
      .endObject();
  return writer.str();
}

void replyJson(httplib::Response& res, const rapidjson::Value& body, int status) {
  replyJson(res, toJsonString(body), status);
}

void replyJson(httplib::Response& res, std::string jsonText, int status) {
  res.status = status;
  res.set_content(std::move(jsonText), kJsonType);
}

void replyError(httplib::Response& res, int status, const std::string& message) {
  replyJson(res, jsonErrorBody(status, message), status);
}

int64_t queryInteger(const httplib::Request& req, const char* name, int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string text = req.get_param_value(name);
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw RestError(400, std::string(name) + ": expected a non-negative integer, got '" + text + "'");
}

AuthHook bearerTokenAuth(std::string token) {
  return [expected = "Bearer " + token](const httplib::Request& req) -> std::optional<std::string> {
    if (!req.has_header("Authorization")) return std::string("missing Authorization header");
    if (!sameSecret(req.get_header_value("Authorization"), expected)) {
      return std::string("invalid bearer token");
    }
    return std::nullopt;
  };
}

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {
  if (!options_.log) options_.log = logToStderr;
  ConnectionLimits limits;
  limits.keepAliveTimeout = options_.keepAliveTimeout;
  limits.readTimeout = options_.readTimeout;
  limits.writeTimeout = options_.writeTimeout;
  limits.requestReadTimeout = options_.requestReadTimeout;
  limits.minThreads = std::max<size_t>(1, options_.threadCount);
  limits.maxThreads =
      options_.maxThreads == 0 ? 0 : std::max(options_.maxThreads, limits.minThreads);
  limits.maxConnections = std::max(options_.maxConnections, limits.minThreads);
  limits.maxConnectionsPerAddress = std::max<size_t>(1, options_.maxConnectionsPerAddress);
  server_ = std::make_unique<GuardedServer>(
      limits, TlsServerFiles{options_.tlsCertFile, options_.tlsKeyFile});
}

HttpServer::~HttpServer() {
  stop();
}

// Answers for the exception being handled; called from inside a catch block.
static void answerCurrentException(const httplib::Request& req, httplib::Response& res,
                                   const LogFunction& log) {
  // Whatever the handler had put into the response is void now.
  res.headers.clear();
  try {
    throw;
  } catch (const RestError& error) {
    replyError(res, error.status(), error.what());
  } catch (const JsonParseError& error) {
    replyError(res, 400, error.what());
  } catch (const JsonFieldError& error) {
    replyError(res, 400, error.what());
  } catch (const std::exception& error) {
    // Only the message goes out: no type names, stack or internals.
    log("http server: " + req.method + " " + req.path + " failed: " + error.what());
    replyError(res, 500, error.what());
  } catch (...) {
    log("http server: " + req.method + " " + req.path + " failed with a non-standard exception");
    replyError(res, 500, "internal server error");
  }
}

RouteHandler HttpServer::wrap(RouteHandler handler) {
  return [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    // httplib enforces the limit only for bodies with a Content-Length; this catches chunked.
    if (req.body.size() > options_.maxRequestBodyBytes) {
      replyError(res, 413, tooLargeMessage(options_.maxRequestBodyBytes));
      return;
    }
    if (options_.auth && options_.authExemptPaths.count(req.path) == 0) {
      std::optional<std::string> refusal;
      try {
        refusal = options_.auth(req);
      } catch (...) {
        answerCurrentException(req, res, options_.log);
        return;
      }
      if (refusal) {
        res.set_header("WWW-Authenticate", "Bearer");
        replyError(res, 401, *refusal);
        return;
      }
    }
    try {
      handler(req, res);
    } catch (...) {
      answerCurrentException(req, res, options_.log);
    }
  };
}

HttpServer& HttpServer::get(const std::string& pattern, RouteHandler handler) {
  server_->Get(pattern, wrap(std::move(handler)));
  return *this;
}
HttpServer& HttpServer::post(const std::string& pattern, RouteHandler handler) {
  server_->Post(pattern, wrap(std::move(handler)));
  return *this;
}
HttpServer& HttpServer::put(const std::string& pattern, RouteHandler handler) {
  server_->Put(pattern, wrap(std::move(handler)));
  return *this;
}
HttpServer& HttpServer::patch(const std::string& pattern, RouteHandler handler) {
  server_->Patch(pattern, wrap(std::move(handler)));
  return *this;
}
HttpServer& HttpServer::del(const std::string& pattern, RouteHandler handler) {
  server_->Delete(pattern, wrap(std::move(handler)));
  return *this;
}

void HttpServer::configure() {
  server_->set_payload_max_length(options_.maxRequestBodyBytes);
  server_->set_keep_alive_timeout(options_.keepAliveTimeout.count());
  // httplib's default sets SO_REUSEPORT, which would let a second server silently share a
  // busy port; SO_REUSEADDR alone still allows a quick restart over TIME_WAIT sockets.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // httplib writes headers and body separately; with Nagle on, the body waits for the
  // client's delayed ACK (~40 ms per response).
  server_->set_tcp_nodelay(true);
  server_->set_read_timeout(options_.readTimeout.count());
  server_->set_write_timeout(options_.writeTimeout.count());

  // Every error answer without a body of its own (unknown path, oversized body, unparsable
  // request) gets the JSON error body, so clients never have to parse HTML or nothing.
  const size_t limit = options_.maxRequestBodyBytes;
  httplib::Server::HandlerWithResponse errorHandler = [limit](const httplib::Request& req,
                                                              httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    if (res.status == 404) {
      message = "no route for " + req.method + " " + req.path;
    } else if (res.status == 413) {
      message = tooLargeMessage(limit);
    } else {
      message = reasonPhrase(res.status);
    }
    res.set_content(jsonErrorBody(res.status, message), kJsonType);
    return httplib::Server::HandlerResponse::Handled;
  };
  server_->set_error_handler(std::move(errorHandler));
  // Routes are wrapped already; this catches what escapes outside them.
  server_->set_exception_handler([log = options_.log](const httplib::Request& req,
                                                      httplib::Response& res,
                                                      std::exception_ptr error) {
    try {
      std::rethrow_exception(error);
    } catch (...) {
      answerCurrentException(req, res, log);
    }
  });
}

std::string HttpServer::bindSocket() {
  if (!options_.unixSocketPath.empty()) {
    // A socket file left by a previous run would make bind fail.
    ::unlink(options_.unixSocketPath.c_str());
    server_->set_address_family(AF_UNIX);
    if (!server_->bind_to_port(options_.unixSocketPath, 80)) {
      throw std::runtime_error("http server: cannot bind Unix socket " + options_.unixSocketPath +
                               ": " + std::strerror(errno));
    }
    boundPort_ = 0;
    return "unix:" + options_.unixSocketPath;
  }
  // The last port tried; errno says why the last bind failed.
  const int last =
      options_.port == 0 ? 0 : std::min(65535, options_.port + std::max(0, options_.portRetries));
  if (options_.port == 0) {
    boundPort_ = server_->bind_to_any_port(options_.bindAddress);
  } else {
    boundPort_ = -1;
    for (int port = options_.port; port <= last && boundPort_ < 0; ++port) {
      if (server_->bind_to_port(options_.bindAddress, port)) {
        boundPort_ = port;
      } else if (port < last) {
        options_.log("http server: cannot bind " + options_.bindAddress + ":" +
                     std::to_string(port) + " (" + std::strerror(errno) + "); trying port " +
                     std::to_string(port + 1));
      }
    }
  }
  if (boundPort_ < 0) {
    const std::string reason = std::strerror(errno);
    boundPort_ = 0;
    throw std::runtime_error(
        "http server: cannot bind " + options_.bindAddress + ":" + std::to_string(options_.port) +
        (last > options_.port ? ".." + std::to_string(last) : "") + ": " + reason);
  }
  return options_.bindAddress + ":" + std::to_string(boundPort_);
}

int HttpServer::start() {
  if (started_) throw std::logic_error("HttpServer::start called twice");
  started_ = true;

  configure();
  const std::string where = bindSocket();

  server_->widenBacklog(SOMAXCONN);
  thread_ = std::thread([this] { serve(); });

  // The socket already listens (connections queue in its backlog), but stop() only works once
  // httplib runs its accept loop, so wait for that.
  auto deadline = std::chrono::steady_clock::now() + options_.startTimeout;
  std::unique_lock<std::mutex> lock(stateMutex_);
  while (!server_->is_running()) {
    if (serveReturned_) {
      lock.unlock();
      thread_.join();
      throw std::runtime_error("http server on " + where + " stopped while starting");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      lock.unlock();
      stop();
      throw std::runtime_error("http server on " + where + " did not start within " +
                               std::to_string(options_.startTimeout.count()) + " ms");
    }
    // is_running() has no notification of its own; poll it briefly.
    stateChanged_.wait_for(lock, std::chrono::milliseconds(1));
  }
  lock.unlock();
  options_.log(std::string(server_->tls() ? "https" : "http") + " server listening on " + where +
               " with " + std::to_string(std::max<size_t>(1, options_.threadCount)) + " threads");
  return boundPort_;
}

void HttpServer::serve() {
  server_->listen_after_bind();
  std::lock_guard<std::mutex> lock(stateMutex_);
  serveReturned_ = true;
  stateChanged_.notify_all();
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  // httplib's stop() does nothing until its accept loop runs; repeat until the loop is gone.
  std::unique_lock<std::mutex> lock(stateMutex_);
  while (!serveReturned_) {
    lock.unlock();
    server_->stop();
    lock.lock();
    stateChanged_.wait_for(lock, std::chrono::milliseconds(20), [this] { return serveReturned_; });
  }
  lock.unlock();
  thread_.join();
  if (!options_.unixSocketPath.empty()) ::unlink(options_.unixSocketPath.c_str());
}

bool HttpServer::running() const {
  return thread_.joinable() && server_->is_running();
}

std::string HttpServer::baseUrl() const {
  if (!options_.unixSocketPath.empty()) return "unix:" + options_.unixSocketPath;
  std::string host = options_.bindAddress;
  // A wildcard bind is reachable on loopback.
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(server_->tls() ? "https://" : "http://") + host + ":" +
         std::to_string(boundPort_);
}

}  // namespace tide::rest
