// HTTP requests, path and query parameters, request bodies and credentials. The first byte picks
// the server (its value modulo 4; the seeds use the digits '0'-'3'), the rest is sent as raw
// bytes, the connection half-closed and the answer read to its end:
//   0  tide-rm with rm.authentication=none: every route's handler (application ids, node ids and
//      attempt ids in paths; ?states, ?limit, ?offset; every body) is reached without a token;
//   1  tide-rm with authentication, cluster secret "fuzz-cluster-secret" (so the admin token is
//      "Bearer fuzz-cluster-secret"): the credential checks in front of the same routes;
//   2  an AM's status port (am/status_handlers.cc, control_auth.cc; control token of the
//      application secret "fuzz-app-secret", see kControlToken) over a stand-in for the AM core:
//      job ids, cache stage ids, ?limit, ?since, POSTed jobs, PUT bounds, Origin/Content-Type;
//   3  an AM's executor port (Bearer fuzz-app-secret): executor ids, registrations, syncs, commits.
// A server must neither crash nor trip a sanitizer nor answer 500 (an exception no handler
// expected), and must still answer a plain request afterwards.
//
// tide-nm is not served here: a request it accepts starts a process with the command in it, and
// its bodies are the codecs fuzz_messages covers (container_launch_request).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "am/control_auth.h"
#include "am/master_control.h"
#include "am/status_handlers.h"
#include "deploy/rm/rm_server.h"
#include "rest/http_server.h"
#include "rest/messages/credentials.h"
#include "tests/support/stand_in_master.h"

namespace {

using namespace tide;

constexpr char kAppSecret[] = "fuzz-app-secret";

// The AM core as the handlers see it: answers every read with an empty or small document and
// takes every well-formed control request.
class StandInMaster : public testing_support::StandInMasterControl {
 public:
  StandInMaster() {
    info_.session = true;
    info_.uiMaxRequestsPerSecond = 0;
  }
  TimeMs nowMs() const override { return 1000; }
  std::optional<am::JobSummary> job(const std::string& jobId) override {
    if (jobId != "job-1") return std::nullopt;
    am::JobSummary summary;
    summary.jobId = jobId;
    return summary;
  }
  std::string metricsText() const override { return "tide_up 1\n"; }
  std::string submitJob(am::Job) override { return "job-2"; }
  Status unpersist(const std::string& stageId) override {
    return stageId == "s1" ? Status::okStatus() : Status::notFound("no stage " + stageId);
  }
  Status changeBounds(std::optional<int> min, std::optional<int> initial, std::optional<int> max,
                      const std::string&, allocation::Bounds* applied) override {
    allocation::Bounds bounds;
    bounds.minExecutors = min.value_or(0);
    bounds.initialExecutors = initial.value_or(bounds.minExecutors);
    bounds.maxExecutors = max.value_or(10);
    if (bounds.minExecutors < 0) return Status::invalidArgument("min: must be at least 0");
    if (bounds.minExecutors > bounds.maxExecutors) {
      return Status::invalidArgument("min=" + std::to_string(bounds.minExecutors) +
                                     " is greater than max=" + std::to_string(bounds.maxExecutors));
    }
    *applied = bounds;
    return Status::okStatus();
  }
  Status registerExecutor(const rest::ExecutorRegistration& registration, const std::string&,
                          rest::ExecutorRegistered*) override {
    return registration.executorId == "e1" ? Status::okStatus()
                                           : Status::notFound("not started here");
  }
  Status syncExecutor(const std::string& executorId, const rest::ExecutorSync&,
                      rest::ExecutorSyncReply*) override {
    return executorId == "e1" ? Status::okStatus() : Status::notFound("never registered");
  }
  rest::CommitDecision decideCommit(const std::string& executorId,
                                    const rest::CommitRequest&) override {
    return {executorId == "e1", executorId == "e1" ? "" : "not registered"};
  }
};

struct Servers {
  std::unique_ptr<rm::ResourceManagerServer> openRm;
  std::unique_ptr<rm::ResourceManagerServer> securedRm;
  StandInMaster master;
  std::unique_ptr<rest::HttpServer> amStatus;
  std::unique_ptr<rest::HttpServer> amExecutors;
  std::unique_ptr<am::StatusHandlers> handlers;
  int ports[4] = {};
};

std::unique_ptr<rm::ResourceManagerServer> startRm(bool authenticate) {
  rm::ResourceManagerServerOptions options;
  options.config.port = 0;
  options.config.authenticate = authenticate;
  options.clusterSecret = "fuzz-cluster-secret";
  options.serverThreads = 4;
  auto server = std::make_unique<rm::ResourceManagerServer>(options);
  server->start();
  return server;
}

Servers& servers() {
  static Servers* all = [] {
    auto* s = new Servers;
    s->openRm = startRm(false);
    s->securedRm = startRm(true);
    rest::HttpServerOptions status;
    status.threadCount = 4;
    status.log = [](const std::string&) {};
    status.auth = am::controlAuth(rest::controlTokenOf(kAppSecret), am::UiAuth::kWrites);
    status.authExemptPaths = am::controlAuthExemptPaths();
    s->amStatus = std::make_unique<rest::HttpServer>(status);
    rest::HttpServerOptions executors;
    executors.threadCount = 4;
    executors.log = status.log;
    executors.auth = rest::bearerTokenAuth(kAppSecret);
    s->amExecutors = std::make_unique<rest::HttpServer>(executors);
    s->handlers = std::make_unique<am::StatusHandlers>(s->master);
    s->handlers->registerStatusRoutes(*s->amStatus);
    s->handlers->registerExecutorRoutes(*s->amExecutors);
    s->ports[0] = s->openRm->port();
    s->ports[1] = s->securedRm->port();
    s->ports[2] = s->amStatus->start();
    s->ports[3] = s->amExecutors->start();
    return s;  // never freed: the servers live as long as the fuzzing process
  }();
  return *all;
}

// Sends `request`, half-closes, reads the answer to its end; "" when there was no connection.
std::string sendRequest(int port, const std::string& request) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(sock);
    return "";
  }
  (void)::send(sock, request.data(), request.size(), MSG_NOSIGNAL);
  ::shutdown(sock, SHUT_WR);
  std::string answer;
  char buffer[4096];
  while (true) {
    pollfd fd{sock, POLLIN, 0};
    if (::poll(&fd, 1, 15000) <= 0) break;  // servers close within their requestReadTimeout
    const ssize_t n = ::recv(sock, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(sock);
  return answer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Servers& all = servers();
  const int port = all.ports[data[0] % 4];
  const std::string answer =
      sendRequest(port, std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  // A 500 is an exception no handler expected (rest/http_server.cc answers those so). Answers
  // to pipelined requests follow each other; a JSON body cannot hold a raw newline.
  if (answer.rfind("HTTP/1.1 500", 0) == 0 || answer.find("\nHTTP/1.1 500") != std::string::npos) {
    std::fprintf(stderr, "answered 500:\n%s\n", answer.c_str());
    std::abort();
  }
  // Still serving.
  static int counter = 0;
  if (++counter % 256 == 0) {
    for (int p : all.ports) {
      if (sendRequest(p, "GET /ws/v1/cluster/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
              .rfind("HTTP/1.1 ", 0) != 0) {
        std::fprintf(stderr, "the server on port %d no longer answers\n", p);
        std::abort();
      }
    }
  }
  return 0;
}
