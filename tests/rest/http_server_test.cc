#include "rest/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rest/guarded_server.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "tests/rest/rest_test_util.h"
#include "tests/rest/slow_clients.h"
#include "tests/support/certificates.h"
#include "tests/support/errors.h"
#include "tests/support/sockets.h"
#include "tests/support/temp_dir.h"

namespace tide::rest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::unique_ptr<HttpServer> makeEchoServer(HttpServerOptions options);

class HttpServerTest : public ::testing::Test {
 protected:
  HttpServerOptions serverOptions() {
    HttpServerOptions options;
    options.bindAddress = "127.0.0.1";
    options.port = 0;
    options.threadCount = 4;
    options.log = log_.function();
    return options;
  }
  HttpClientOptions clientOptions() {
    HttpClientOptions options;
    options.retry.maxAttempts = 1;
    options.requestTimeout = std::chrono::seconds(10);
    options.log = log_.function();
    return options;
  }
  // serverOptions() serving HTTPS with the certificate `certificates` made for 127.0.0.1 and
  // the key file `keyFile` (one of theirs).
  HttpServerOptions httpsOptions(const testing_support::TestCertificates& certificates,
                                 const std::string& keyFile = "server.key") {
    HttpServerOptions options = serverOptions();
    options.tlsCertFile = certificates.certFile();
    options.tlsKeyFile = certificates.file(keyFile);
    return options;
  }
  void startServer(std::unique_ptr<HttpServer> server) {
    server_ = std::move(server);
    int port = server_->start();
    ASSERT_GT(port, 0);
    client_ = std::make_unique<HttpClient>(server_->baseUrl(), clientOptions());
  }
  // Starts an echo server with `options` and opens a raw TCP connection to it; -1, with the
  // failure recorded, when it cannot.
  int startEchoAndConnect(const HttpServerOptions& options) {
    startServer(makeEchoServer(options));
    const int sock = testing_support::connectTcp("127.0.0.1", server_->port());
    EXPECT_GE(sock, 0) << std::strerror(errno);
    return sock;
  }
  // Starts an echo server with `options`, opens 200 connections that send a header line every
  // 2 s and never finish, and expects 20 requests beside them, each on a new connection (as a
  // heartbeat after an idle period would be), answered within 1 s.
  void expectAnswersBesideTwoHundredSlowClients(const HttpServerOptions& options) {
    startServer(makeEchoServer(options));
    testing_support::SlowClients slow("127.0.0.1", server_->port(), 200);
    ASSERT_EQ(slow.open(), 200);
    HttpClientOptions quick = clientOptions();
    quick.requestTimeout = std::chrono::seconds(1);
    for (int i = 0; i < 20; ++i) {
      HttpClient client(server_->baseUrl(), quick);
      const HttpResponse response = client.request("GET", "/ping");
      ASSERT_EQ(response.status, 200) << "request " << i << ": " << response.body;
    }
  }
  // Connections the server has admitted and not yet closed.
  size_t serverConnections() {
    return dynamic_cast<GuardedServer&>(server_->native()).openConnections();
  }
  // The {"error": {...}} object of a response, checked for shape and code.
  static std::string errorMessage(const HttpResponse& response) {
    EXPECT_THAT(response.header("Content-Type"), StartsWith("application/json"));
    auto doc = parseJson(response.body);
    auto error = JsonObjectReader(doc).requireObject("error");
    EXPECT_EQ(error.requireInt("code"), response.status);
    return error.requireString("message");
  }

  testing::LogCapture log_;
  std::unique_ptr<HttpServer> server_;
  // Declared after the server so it goes first: its kept-alive connection then closes before
  // the server stops, and stop() does not wait for the idle keep-alive timeout.
  std::unique_ptr<HttpClient> client_;

  void TearDown() override {
    client_.reset();
    server_.reset();
  }
};

// A server with the endpoints most tests use.
std::unique_ptr<HttpServer> makeEchoServer(HttpServerOptions options) {
  auto server = std::make_unique<HttpServer>(std::move(options));
  server->get("/ping", [](const httplib::Request&, httplib::Response& res) {
    replyJson(res, R"({"pong":true})");
  });
  // Validates its input like a real endpoint: {"name": string, "resource": {"memory": int}}.
  server->post("/apps", [](const httplib::Request& req, httplib::Response& res) {
    auto doc = parseJson(req.body);
    JsonObjectReader body(doc);
    std::string name = body.requireString("name");
    int64_t memory = body.requireObject("resource").requireInt64("memory");
    JsonWriter writer;
    writer.startObject().field("name", name).field("memory", memory).endObject();
    replyJson(res, writer.str(), 201);
  });
  server->put(R"(/items/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    replyJson(res, R"({"put":")" + std::string(req.matches[1]) + R"("})");
  });
  server->del(R"(/items/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    replyJson(res, R"({"deleted":")" + std::string(req.matches[1]) + R"("})");
  });
  server->get("/conflict", [](const httplib::Request&, httplib::Response&) {
    throw RestError(409, "executor e3 is already registered");
  });
  server->get("/crash", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Partial", "1");
    throw std::runtime_error("disk full");
  });
  server->get("/crash-oddly", [](const httplib::Request&, httplib::Response&) { throw 42; });
  return server;
}

TEST_F(HttpServerTest, JsonRoundTripOverLoopback) {
  startServer(makeEchoServer(serverOptions()));
  EXPECT_TRUE(server_->running());
  EXPECT_THAT(server_->baseUrl(), StartsWith("http://127.0.0.1:"));

  auto pong = client_->getJson("/ping");
  EXPECT_TRUE(requireBool(pong, "pong"));

  auto created = client_->postJson("/apps", R"({"name":"job1","resource":{"memory":4096}})");
  EXPECT_EQ(requireString(created, "name"), "job1");
  EXPECT_EQ(requireInt64(created, "memory"), 4096);

  rapidjson::Document body(rapidjson::kObjectType);
  body.AddMember("x", 1, body.GetAllocator());
  EXPECT_EQ(requireString(client_->putJson("/items/abc", body), "put"), "abc");
  EXPECT_EQ(requireString(client_->deleteJson("/items/abc"), "deleted"), "abc");

  EXPECT_THAT(log_.lines(), ::testing::Contains(HasSubstr("http server listening on 127.0.0.1:" +
                                                          std::to_string(server_->port()))));
}

TEST_F(HttpServerTest, KeepAliveReusesOneConnection) {
  std::mutex mutex;
  std::set<int> remotePorts;
  auto server = std::make_unique<HttpServer>(serverOptions());
  server->get("/who", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mutex);
    remotePorts.insert(req.remote_port);
    replyJson(res, "{}");
  });
  startServer(std::move(server));

  HttpResponse first = client_->request("GET", "/who");
  HttpResponse second = client_->request("GET", "/who");
  HttpResponse third = client_->request("GET", "/who");
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.newConnections, 1);
  EXPECT_EQ(second.newConnections, 0);
  EXPECT_EQ(third.newConnections, 0);
  std::lock_guard<std::mutex> lock(mutex);  // the handler's thread wrote it
  EXPECT_EQ(remotePorts.size(), 1u) << "the server saw more than one client connection";
}

// What a connection thread leaves to its thread-exit handlers (OpenSSL's per-thread cleanup is
// one): slow on purpose, so that a worker still exiting after stop() is seen.
std::atomic<int> witnessesMade{0};
std::atomic<int> witnessesEnded{0};
struct ThreadExitWitness {
  ThreadExitWitness() { ++witnessesMade; }
  ~ThreadExitWitness() {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ++witnessesEnded;
  }
};

TEST_F(HttpServerTest, StopReturnsOnlyOnceEveryConnectionThreadHasEndedItsExitHandlersToo) {
  witnessesMade = 0;
  witnessesEnded = 0;
  auto server = std::make_unique<HttpServer>(serverOptions());
  server->get("/touch", [](const httplib::Request&, httplib::Response& res) {
    thread_local ThreadExitWitness witness;
    (void)witness;
    replyJson(res, "{}");
  });
  startServer(std::move(server));
  // Clients of their own, on connections of their own, so that more than one worker serves.
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<HttpClient>(server_->baseUrl(), clientOptions()));
    EXPECT_EQ(clients.back()->request("GET", "/touch").status, 200);
  }
  clients.clear();
  client_.reset();
  server_->stop();
  EXPECT_GE(witnessesMade.load(), 1);
  EXPECT_EQ(witnessesEnded.load(), witnessesMade.load())
      << "a connection thread was still exiting when stop() returned";
}

TEST_F(HttpServerTest, UnknownPathIs404Json) {
  startServer(makeEchoServer(serverOptions()));
  HttpResponse response = client_->request("GET", "/no/such/thing");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(errorMessage(response), "no route for GET /no/such/thing");
  // A known path with a method it does not serve is unknown too.
  EXPECT_EQ(client_->request("DELETE", "/ping").status, 404);
}

TEST_F(HttpServerTest, OversizedBodyIs413Json) {
  HttpServerOptions options = serverOptions();
  options.maxRequestBodyBytes = 1024;
  startServer(makeEchoServer(options));

  std::string big = R"({"name":")" + std::string(4096, 'x') + R"("})";
  HttpResponse response =
      client_->request("POST", "/apps", big, {{"Content-Type", "application/json"}});
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(errorMessage(response), "request body exceeds the limit of 1024 bytes");

  // The connection is still usable afterwards.
  EXPECT_TRUE(requireBool(client_->getJson("/ping"), "pong"));
}

TEST_F(HttpServerTest, MalformedJsonIs400NamingTheProblem) {
  startServer(makeEchoServer(serverOptions()));
  HttpResponse response = client_->request("POST", "/apps", R"({"name":"x",})");
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(errorMessage(response),
            "malformed JSON at offset 12: Missing a name for object member");
}

TEST_F(HttpServerTest, MissingOrMistypedFieldIs400NamingTheField) {
  startServer(makeEchoServer(serverOptions()));
  HttpResponse missing = client_->request("POST", "/apps", R"({"resource":{"memory":1}})");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(errorMessage(missing), "field 'name': missing");

  HttpResponse mistyped =
      client_->request("POST", "/apps", R"({"name":"x","resource":{"memory":"4g"}})");
  EXPECT_EQ(mistyped.status, 400);
  EXPECT_EQ(errorMessage(mistyped), "field 'resource.memory': expected an integer, got a string");

  // Through the JSON helper the same answer becomes an HttpError that quotes it.
  try {
    client_->postJson("/apps", R"({"name":7})");
    FAIL() << "expected HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.status(), 400);
    EXPECT_EQ(
        std::string(error.what()),
        "POST " + server_->baseUrl() +
            "/apps: HTTP 400: "
            R"({"error":{"code":400,"message":"field 'name': expected a string, got an integer"}})");
  }
}

TEST_F(HttpServerTest, HandlerExceptionsBecomeJsonErrors) {
  startServer(makeEchoServer(serverOptions()));
  HttpResponse conflict = client_->request("GET", "/conflict");
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(errorMessage(conflict), "executor e3 is already registered");

  HttpResponse crash = client_->request("GET", "/crash");
  EXPECT_EQ(crash.status, 500);
  EXPECT_EQ(errorMessage(crash), "disk full");
  EXPECT_EQ(crash.header("X-Partial"), "") << "a failed handler's headers leaked";
  EXPECT_THAT(log_.lines(), ::testing::Contains(HasSubstr("GET /crash failed: disk full")));

  HttpResponse odd = client_->request("GET", "/crash-oddly");
  EXPECT_EQ(odd.status, 500);
  EXPECT_EQ(errorMessage(odd), "internal server error");
}

TEST_F(HttpServerTest, AuthHookRefusesWith401UnlessExempt) {
  HttpServerOptions options = serverOptions();
  options.auth = bearerTokenAuth("s3cret");
  options.authExemptPaths = {"/ping"};
  auto server = makeEchoServer(options);
  server->get("/private", [](const httplib::Request&, httplib::Response& res) {
    replyJson(res, R"({"ok":true})");
  });
  startServer(std::move(server));

  HttpResponse anonymous = client_->request("GET", "/private");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(errorMessage(anonymous), "missing Authorization header");
  EXPECT_EQ(anonymous.header("WWW-Authenticate"), "Bearer");

  HttpResponse wrong =
      client_->request("GET", "/private", "", {{"Authorization", "Bearer s3cres"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(errorMessage(wrong), "invalid bearer token");

  EXPECT_EQ(client_->request("GET", "/private", "", {{"Authorization", "Bearer s3cret"}}).status,
            200);
  EXPECT_EQ(client_->request("GET", "/ping").status, 200) << "exempt path was refused";

  // A client with the token as a default header gets in on every call.
  HttpClientOptions withToken = clientOptions();
  withToken.defaultHeaders = {{"Authorization", "Bearer wrong"}};
  HttpClient authorized(server_->baseUrl(), withToken);
  EXPECT_EQ(authorized.request("GET", "/private").status, 401);
  authorized.setDefaultHeader("authorization", "Bearer s3cret");
  EXPECT_TRUE(requireBool(authorized.getJson("/private"), "ok"));
}

TEST_F(HttpServerTest, StopIsIdempotentAndStartOnlyOnce) {
  startServer(makeEchoServer(serverOptions()));
  int port = server_->port();
  client_.reset();
  server_->stop();
  EXPECT_FALSE(server_->running());
  server_->stop();
  EXPECT_THROW(server_->start(), std::logic_error);

  // Nothing listens there any more.
  HttpClient late("http://127.0.0.1:" + std::to_string(port), clientOptions());
  EXPECT_THROW(late.request("GET", "/ping"), HttpError);
}

TEST_F(HttpServerTest, BindingABusyPortFails) {
  startServer(makeEchoServer(serverOptions()));
  HttpServerOptions sameport = serverOptions();
  sameport.port = server_->port();
  HttpServer second(sameport);
  try {
    second.start();
    FAIL() << "expected the second bind to fail";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot bind 127.0.0.1:" + std::to_string(sameport.port)));
  }
}

TEST_F(HttpServerTest, ABusyPortMovesToTheNextFreeOneWithinPortRetries) {
  startServer(makeEchoServer(serverOptions()));
  HttpServerOptions sameport = serverOptions();
  sameport.port = server_->port();
  sameport.portRetries = 16;
  std::vector<std::string> logged;
  sameport.log = [&](const std::string& line) { logged.push_back(line); };
  auto second = makeEchoServer(sameport);
  const int port = second->start();
  EXPECT_GT(port, sameport.port);
  EXPECT_LE(port, sameport.port + 16);
  EXPECT_EQ(second->port(), port);
  ASSERT_FALSE(logged.empty());
  EXPECT_THAT(logged.front(), HasSubstr("cannot bind 127.0.0.1:" + std::to_string(sameport.port) +
                                        " (Address already in use); trying port " +
                                        std::to_string(sameport.port + 1)));
  HttpClient client(second->baseUrl(), clientOptions());
  EXPECT_EQ(client.request("GET", "/ping").status, 200);
  second->stop();
}

TEST_F(HttpServerTest, ServesAndCallsOverUnixSocket) {
  std::string path =
      ::testing::TempDir() + "tide-rest-test-" + std::to_string(::getpid()) + ".sock";
  HttpServerOptions options = serverOptions();
  options.unixSocketPath = path;
  auto server = makeEchoServer(options);
  server_ = std::move(server);
  EXPECT_EQ(server_->start(), 0);
  EXPECT_EQ(server_->baseUrl(), "unix:" + path);

  HttpClient client(server_->baseUrl(), clientOptions());
  EXPECT_EQ(client.unixSocketPath(), path);
  EXPECT_EQ(client.urlFor("/ping"), "http://localhost/ping");
  EXPECT_TRUE(requireBool(client.getJson("/ping"), "pong"));
  auto created = client.postJson("/apps", R"({"name":"u","resource":{"memory":1}})");
  EXPECT_EQ(requireString(created, "name"), "u");
  HttpResponse second = client.request("GET", "/ping");
  EXPECT_EQ(second.newConnections, 0);
}

TEST(JsonErrorBody, HasTheDocumentedShape) {
  EXPECT_EQ(jsonErrorBody(404, R"(no "x")"), R"({"error":{"code":404,"message":"no \"x\""}})");
}

// ---- slow and greedy clients (issue 17.4) ----

// 200 connections that send a header line every 2 s and never finish hold only themselves:
// with 4 warm workers, a normal client is still answered (its request fails after 1 s
// otherwise). On a fixed-size pool the 200 take every worker and the client waits forever.
TEST_F(HttpServerTest, SlowClientsDoNotStarveOthers) {
  expectAnswersBesideTwoHundredSlowClients(serverOptions());
}

// The same with only 2 workers: a request whose head trickles in waits for the rest without
// one (the server looks at the bytes without reading them), so the slow 200 hold no worker.
TEST_F(HttpServerTest, SlowClientsHoldNoWorkerEvenWhenWorkersAreFew) {
  HttpServerOptions options = serverOptions();
  options.threadCount = 2;
  options.maxThreads = 2;
  expectAnswersBesideTwoHundredSlowClients(options);
}

// A request whose headers trickle in is cut off requestReadTimeout after its first byte, even
// though each line arrives well within readTimeout.
TEST_F(HttpServerTest, ARequestThatNeverFinishesIsCutOff) {
  HttpServerOptions options = serverOptions();
  options.requestReadTimeout = std::chrono::seconds(1);
  startServer(makeEchoServer(options));
  testing_support::SlowClients slow("127.0.0.1", server_->port(), 3,
                                    std::chrono::milliseconds(200));
  EXPECT_TRUE(
      testing::eventually([&] { return slow.closedByServer() >= 3; }, std::chrono::seconds(20)))
      << "closed " << slow.closedByServer();
}

// A client that sends part of a request head and then shuts down its side will send no more:
// the server closes the connection at once, not after requestReadTimeout (the parking looks at
// a trickling head without reading it, so it must notice the peer's half-close).
TEST_F(HttpServerTest, APartialRequestFromAPeerThatShutItsSideIsClosedAtOnce) {
  HttpServerOptions options = serverOptions();
  options.requestReadTimeout = std::chrono::seconds(60);
  const int sock = startEchoAndConnect(options);
  ASSERT_GE(sock, 0);
  // Part of a head: no blank line ends it.
  ASSERT_TRUE(testing_support::sendAll(sock, "GET /ping HTTP/1.1\r\nHost: x\r\n"));
  ::shutdown(sock, SHUT_WR);
  EXPECT_TRUE(testing_support::receiveUntilClosed(sock, std::chrono::seconds(20)).closed)
      << "still open: the server waits for the rest of a request that cannot come";
  ::close(sock);
  EXPECT_EQ(client_->request("GET", "/ping").status, 200);
}

// Beyond maxConnectionsPerAddress, connections from that address get a 503 and are closed;
// other addresses are served as before.
TEST_F(HttpServerTest, ConnectionsFromOneAddressAreCapped) {
  HttpServerOptions options = serverOptions();
  options.maxConnectionsPerAddress = 5;
  startServer(makeEchoServer(options));
  testing_support::SlowClients slow("127.0.0.1", server_->port(), 5, std::chrono::milliseconds(200),
                                    "127.0.0.2");
  ASSERT_EQ(slow.open(), 5);
  // Connected is not yet admitted: until the server has counted all five, the next connection
  // could take one's place, and then it would be one of the five that is refused while the
  // next trickles on until requestReadTimeout (10 s) cuts it off.
  ASSERT_TRUE(
      testing::eventually([&] { return serverConnections() == 5; }, std::chrono::seconds(20)))
      << serverConnections() << " connections admitted";
  // One more from 127.0.0.2: refused.
  testing_support::SlowClients oneMore("127.0.0.1", server_->port(), 1,
                                       std::chrono::milliseconds(200), "127.0.0.2");
  EXPECT_TRUE(
      testing::eventually([&] { return oneMore.closedByServer() >= 1; }, std::chrono::seconds(20)));
  EXPECT_EQ(client_->request("GET", "/ping").status, 200) << "127.0.0.1 is not 127.0.0.2";
}

// Beyond maxConnections in all, a connection from any address gets a 503 that says which limit
// it met (not the per-address one).
TEST_F(HttpServerTest, ConnectionsBeyondTheServersLimitAreRefusedNamingIt) {
  HttpServerOptions options = serverOptions();
  options.threadCount = 1;
  options.maxConnections = 3;
  startServer(makeEchoServer(options));
  testing_support::SlowClients slow("127.0.0.1", server_->port(), 3, std::chrono::milliseconds(200),
                                    "127.0.0.2");
  ASSERT_TRUE(testing::eventually([&] { return slow.open() == 3; }, std::chrono::seconds(20)));
  // All three admitted (connected is not yet counted by the server).
  ASSERT_TRUE(
      testing::eventually([&] { return serverConnections() == 3; }, std::chrono::seconds(20)))
      << serverConnections() << " connections admitted";
  const HttpResponse refused = client_->request("GET", "/ping");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(errorMessage(refused), "too many connections");
}

// Threads of this process now.
size_t threadsOfThisProcess() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                           std::filesystem::directory_iterator{}));
}

// The most threads a server of `options` runs: its workers and the parking's watcher, which
// starts on a worker of its own once the server listens, so possibly after a count taken then.
size_t workersAndWatcher(const HttpServerOptions& options) {
  return options.maxThreads + 1;
}

// A kept-alive connection waits for its next request without a thread of its own (issue 16:
// tide-rm with thousands of node managers heartbeating over kept-alive connections), and is
// served again, on the same connection, when that request comes.
TEST_F(HttpServerTest, IdleKeptAliveConnectionsHoldNoThreadAndAreServedAgain) {
  HttpServerOptions options = serverOptions();
  options.threadCount = 2;
  options.keepAliveTimeout = std::chrono::seconds(30);
  startServer(makeEchoServer(options));
  constexpr int kClients = 100;
  const size_t threadsBefore = threadsOfThisProcess();
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<HttpClient>(server_->baseUrl(), clientOptions()));
    ASSERT_EQ(clients.back()->request("GET", "/ping").status, 200);
  }
  // Every connection is open and idle now; each used to hold a worker until keepAliveTimeout.
  EXPECT_LT(threadsOfThisProcess(), threadsBefore + 20)
      << kClients << " idle connections hold a thread each";
  for (auto& client : clients) {
    const HttpResponse again = client->request("GET", "/ping");
    EXPECT_EQ(again.status, 200);
    EXPECT_EQ(again.newConnections, 0) << "the kept-alive connection was not served again";
  }
}

// An idle kept-alive connection is closed after keepAliveTimeout (also while it waits without a
// thread), so idle clients cannot pile up connections.
TEST_F(HttpServerTest, AnIdleConnectionIsClosedAfterTheKeepAliveTimeout) {
  HttpServerOptions options = serverOptions();
  options.keepAliveTimeout = std::chrono::seconds(1);
  const int sock = startEchoAndConnect(options);
  ASSERT_GE(sock, 0);
  ASSERT_TRUE(testing_support::sendAll(sock, "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  // The answer, then (with nothing more sent) the server's close: a read of 0 bytes.
  const auto start = std::chrono::steady_clock::now();
  const testing_support::ReceivedUntilClosed received =
      testing_support::receiveUntilClosed(sock, std::chrono::seconds(20));
  const auto open = std::chrono::steady_clock::now() - start;
  ::close(sock);
  EXPECT_TRUE(received.closed) << "the idle connection stayed open";
  EXPECT_FALSE(received.reset) << "closed by a reset, not in order";
  EXPECT_THAT(received.bytes, StartsWith("HTTP/1.1 200"));
  EXPECT_GE(open, std::chrono::milliseconds(900)) << "closed before keepAliveTimeout";
}

// ---- Connections without threads: kept-alive connections and deferred replies (issue 16.2)

using testing_support::RawHttpConnection;

// A request without a body, as the raw connections below send them.
std::string bodilessRequest(const std::string& method, const std::string& path) {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
}

// 300 clients that keep their connection open between requests (as executors do with the AM)
// hold no worker while they are idle: the server runs on at most 4 threads and still answers
// each of them again on its own connection, and a newcomer at once. With a worker per open
// connection, the 300 would take 300 threads (or, capped, leave the newcomer waiting).
TEST_F(HttpServerTest, KeptAliveConnectionsHoldNoThreadBetweenRequests) {
  HttpServerOptions options = serverOptions();
  options.threadCount = 2;
  options.maxThreads = 4;
  options.maxConnectionsPerAddress = 1000;
  options.keepAliveTimeout = std::chrono::seconds(30);
  startServer(makeEchoServer(options));
  const size_t threadsBefore = threadsOfThisProcess();
  std::vector<std::unique_ptr<RawHttpConnection>> clients;
  for (int i = 0; i < 300; ++i) {
    clients.push_back(std::make_unique<RawHttpConnection>(server_->port()));
    ASSERT_TRUE(clients.back()->connected()) << i;
    ASSERT_TRUE(clients.back()->send(bodilessRequest("GET", "/ping")));
    ASSERT_EQ(clients.back()->receive().first, 200) << "client " << i;
  }
  EXPECT_LE(threadsOfThisProcess(), threadsBefore + workersAndWatcher(options))
      << "300 idle kept-alive connections hold threads";
  HttpClientOptions quick = clientOptions();
  quick.requestTimeout = std::chrono::seconds(2);
  HttpClient newcomer(server_->baseUrl(), quick);
  EXPECT_EQ(newcomer.request("GET", "/ping").status, 200);
  for (size_t i = 0; i < clients.size(); ++i) {
    ASSERT_TRUE(clients[i]->send(bodilessRequest("GET", "/ping")));
    ASSERT_EQ(clients[i]->receive().first, 200) << "client " << i << " on its kept connection";
  }
  clients.clear();
}

// A long poll: the handler defers its reply until woken. 200 requests wait at once on a server
// of at most 4 workers, other requests are answered meanwhile, and wakeDeferred() answers every
// one of them (those not ready yet wait on), each on its own connection, which then serves its
// next request.
TEST_F(HttpServerTest, DeferredRepliesHoldNoThreadAndAreAnsweredWhenWoken) {
  HttpServerOptions options = serverOptions();
  options.threadCount = 2;
  options.maxThreads = 4;
  options.maxConnectionsPerAddress = 1000;
  options.keepAliveTimeout = std::chrono::seconds(30);
  auto server = makeEchoServer(options);
  std::atomic<int> waiting{0};
  std::atomic<bool> ready{false};
  server->post("/wait", [&](const httplib::Request&, httplib::Response&) {
    DeferredReply reply;
    reply.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    reply.resume = [&](httplib::Response& res, bool timedOut) {
      if (!ready && !timedOut) return false;
      replyJson(res, timedOut ? R"({"woken":false})" : R"({"woken":true})");
      return true;
    };
    ASSERT_TRUE(deferReply(std::move(reply)));
    ++waiting;
  });
  startServer(std::move(server));
  const size_t threadsBefore = threadsOfThisProcess();
  std::vector<std::unique_ptr<RawHttpConnection>> polls;
  for (int i = 0; i < 200; ++i) {
    polls.push_back(std::make_unique<RawHttpConnection>(server_->port()));
    ASSERT_TRUE(polls.back()->connected() && polls.back()->send(bodilessRequest("POST", "/wait")))
        << i;
  }
  ASSERT_TRUE(testing::eventually([&] { return waiting == 200; }, std::chrono::seconds(20)))
      << waiting << " of 200 deferred";
  EXPECT_LE(threadsOfThisProcess(), threadsBefore + workersAndWatcher(options))
      << "200 deferred replies hold threads";
  EXPECT_EQ(client_->request("GET", "/ping").status, 200);

  server_->wakeDeferred();  // not ready yet: every one waits on
  EXPECT_EQ(polls.front()->receive(std::chrono::milliseconds(300)).first, 0);
  ready = true;
  server_->wakeDeferred();
  for (size_t i = 0; i < polls.size(); ++i) {
    const auto [status, body] = polls[i]->receive();
    ASSERT_EQ(status, 200) << "poll " << i;
    EXPECT_EQ(body, R"({"woken":true})");
    ASSERT_TRUE(polls[i]->send(bodilessRequest("GET", "/ping")));
    ASSERT_EQ(polls[i]->receive().first, 200) << "poll " << i << "'s next request";
  }
  polls.clear();
}

// A wake that comes after a handler (or a resume) found nothing to answer with, but before its
// connection is parked, is not lost: the reply is resumed at once, not at its deadline (an
// executor's long poll would wait out its hold with work there for it).
TEST_F(HttpServerTest, AWakeBetweenLookingForAnAnswerAndParkingIsNotLost) {
  auto server = makeEchoServer(serverOptions());
  HttpServer* raw = server.get();
  std::atomic<int> resumes{0};
  server->post("/wait", [&resumes, raw](const httplib::Request&, httplib::Response&) {
    DeferredReply reply;
    reply.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    reply.resume = [&resumes, raw](httplib::Response& res, bool timedOut) {
      if (timedOut) {
        replyJson(res, R"({"woken":false})");
        return true;
      }
      if (++resumes == 1) {
        raw->wakeDeferred();  // work comes just after this resume found none
        return false;
      }
      replyJson(res, R"({"woken":true})");
      return true;
    };
    raw->wakeDeferred();  // work comes just after the handler found none
    ASSERT_TRUE(deferReply(std::move(reply)));
  });
  startServer(std::move(server));
  const HttpResponse response = client_->request("POST", "/wait", "{}");
  EXPECT_EQ(response.body, R"({"woken":true})") << "the wake was lost: resumed at the deadline";
  EXPECT_EQ(resumes, 2);
}

// A deferred reply nobody wakes is resumed at its deadline, told so.
TEST_F(HttpServerTest, ADeferredReplyIsResumedAtItsDeadline) {
  auto server = makeEchoServer(serverOptions());
  server->post("/wait", [](const httplib::Request&, httplib::Response&) {
    DeferredReply reply;
    reply.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    reply.resume = [](httplib::Response& res, bool timedOut) {
      if (!timedOut) return false;
      replyJson(res, R"({"timedOut":true})");
      return true;
    };
    deferReply(std::move(reply));
  });
  startServer(std::move(server));
  const auto start = std::chrono::steady_clock::now();
  const HttpResponse response = client_->request("POST", "/wait", "{}");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, R"({"timedOut":true})");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190));
  EXPECT_FALSE(deferReply(DeferredReply{})) << "outside a request there is nothing to defer";
}

// ---- TLS (issue 17.3)

using testing_support::TestCertificates;

TEST_F(HttpServerTest, ServesHttpsThatClientsVerifyAgainstTheCa) {
  testing_support::TempDir dir;
  TestCertificates certificates(dir.path());
  server_ = makeEchoServer(httpsOptions(certificates));
  ASSERT_GT(server_->start(), 0);
  EXPECT_THAT(server_->baseUrl(), StartsWith("https://127.0.0.1:"));

  HttpClientOptions trusting = clientOptions();
  trusting.caFile = certificates.file("ca.pem");
  EXPECT_EQ(HttpClient(server_->baseUrl(), trusting).request("GET", "/ping").status, 200);

  // A client trusting another CA refuses the server, saying why; so does one trusting only
  // the system's CAs.
  HttpClientOptions wrongCa = clientOptions();
  wrongCa.caFile = certificates.otherCaFile();
  const std::string refusal = testing_support::expectedMessageOf<HttpError>(
      [&] { HttpClient(server_->baseUrl(), wrongCa).request("GET", "/ping"); });
  EXPECT_THAT(refusal, HasSubstr("SSL certificate problem")) << refusal;
  EXPECT_THAT(refusal, HasSubstr(server_->baseUrl())) << refusal;
  EXPECT_THAT(testing_support::expectedMessageOf<HttpError>(
                  [&] { HttpClient(server_->baseUrl(), clientOptions()).request("GET", "/ping"); }),
              HasSubstr("SSL certificate problem"));
  // The host name is verified too: the certificate is for 127.0.0.1, not localhost.
  const std::string byName = "https://localhost:" + std::to_string(server_->port());
  EXPECT_THAT(testing_support::expectedMessageOf<HttpError>(
                  [&] { HttpClient(byName, trusting).request("GET", "/ping"); }),
              HasSubstr("localhost"));
  EXPECT_EQ(HttpClient(server_->baseUrl(), trusting).request("GET", "/ping").status, 200)
      << "still serving";
}

TEST_F(HttpServerTest, PlainHttpToATlsServerGetsNoAnswer) {
  testing_support::TempDir dir;
  TestCertificates certificates(dir.path());
  server_ = makeEchoServer(httpsOptions(certificates));
  ASSERT_GT(server_->start(), 0);
  const std::string plainUrl = "http://127.0.0.1:" + std::to_string(server_->port());
  HttpClientOptions once = clientOptions();
  once.retry.maxAttempts = 1;
  try {
    const HttpResponse response = HttpClient(plainUrl, once).request("GET", "/ping");
    ADD_FAILURE() << "a plain HTTP request was answered: HTTP " << response.status << " "
                  << response.body;
  } catch (const HttpError& error) {
    EXPECT_TRUE(error.isTransportError()) << error.what();
  }
  HttpClientOptions trusting = clientOptions();
  trusting.caFile = certificates.caFile();
  EXPECT_EQ(HttpClient(server_->baseUrl(), trusting).request("GET", "/ping").status, 200)
      << "still serving after the plain request";
}

template <typename F>
std::string messageOf(F&& action) {
  try {
    action();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "(no exception)";
}

TEST_F(HttpServerTest, AMissingOrMismatchedKeyIsAClearError) {
  testing_support::TempDir dir;
  TestCertificates certificates(dir.path());
  HttpServerOptions options = httpsOptions(certificates, "other.key");
  EXPECT_THAT(messageOf([&] { HttpServer server(options); }),
              HasSubstr("cannot load the key " + certificates.file("other.key")));
  options.tlsKeyFile = certificates.file("absent.key");
  EXPECT_THAT(messageOf([&] { HttpServer server(options); }), HasSubstr("absent.key"));
}

}  // namespace
}  // namespace tide::rest
