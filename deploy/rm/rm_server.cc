#include "deploy/rm/rm_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <sstream>

#include "common/strings.h"
#include "deploy/rm/cluster_timestamp.h"
#include "deploy/rm/request_limits.h"
#include "deploy/rm/rm_error.h"
#include "deploy/rm/rm_page.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::rm {
namespace {

constexpr char kContainerTokenHeader[] = "X-Tide-Container-Token";

// How long a kept-alive connection may wait for its next request: well above the heartbeat
// periods of node managers and AMs.
constexpr std::chrono::seconds kKeepAliveTimeout{30};

// The token of "Authorization: Bearer <token>", or "" when there is none.
std::string bearerToken(const httplib::Request& req) {
  return rest::bearerTokenOf(req.get_header_value("Authorization"));
}

// Who may call what, decided before any handler runs (rest/messages/credentials.h):
// - /ws/v1/am/{attempt}/...: the attempt's AM token, checked by the handlers;
// - /ws/v1/nm/{node}/heartbeat: the node secret the RM gave that node at registration,
//   checked by the handler (a node the RM does not know is only told to register);
// - POST /ws/v1/nm/register: the node credential (or the admin token);
// - GET / (the page, which holds no data): nobody;
// - everything else (the client API): a client token or the admin token.
rest::AuthHook clusterAuth(std::string secret) {
  return [secret = std::move(secret)](const httplib::Request& req) -> std::optional<std::string> {
    const std::string& path = req.path;
    // The page holds no data: what it shows it reads with the token it is given.
    if (path == "/") return std::nullopt;
    if (path.rfind("/ws/v1/am/", 0) == 0) return std::nullopt;
    const bool nodeApi = path.rfind("/ws/v1/nm/", 0) == 0;
    if (nodeApi && path != "/ws/v1/nm/register") return std::nullopt;
    const std::string token = bearerToken(req);
    const rest::RmCredential credential = rest::classifyRmToken(secret, token);
    if (credential == rest::RmCredential::kAdmin) return std::nullopt;
    if (nodeApi) {
      if (credential == rest::RmCredential::kNode) return std::nullopt;
      return std::string(token.empty() ? "missing" : "invalid") +
             " node credential: tide-nm registers with 'Authorization: Bearer <node "
             "credential>', derived from the cluster secret (--conf rm.secretFile=PATH)";
    }
    if (credential == rest::RmCredential::kClient) return std::nullopt;
    return std::string(token.empty() ? "missing" : "invalid") +
           " credential: tide-rm needs 'Authorization: Bearer <token>' (the cluster secret "
           "file's content or a client token; the tide commands read --conf rm.secretFile, "
           "--conf rm.tokenFile or TIDE_RM_TOKEN)";
  };
}

// Every node manager and AM keeps a connection open: as many as the open-files limit allows,
// less a margin for the state store, the log and the RM's own calls to nodes.
size_t connectionsTheFileLimitAllows() {
  constexpr size_t kMargin = 256;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return 1024;
  if (files.rlim_cur == RLIM_INFINITY) return 1 << 20;
  const size_t limit = static_cast<size_t>(files.rlim_cur);
  return std::max<size_t>(1024, limit > kMargin ? limit - kMargin : 0);
}

rest::HttpServerOptions serverOptions(const ResourceManagerServerOptions& options) {
  rest::HttpServerOptions http;
  http.bindAddress = options.config.host;
  http.port = options.config.port;
  http.threadCount = options.serverThreads;
  http.maxConnections =
      options.maxConnections != 0 ? options.maxConnections : connectionsTheFileLimitAllows();
  // Node managers heartbeat every second and AMs allocate every 3 s (200 ms while they wait for
  // containers): with HttpServer's 1 s an idle connection was closed about when the next
  // heartbeat went out on it, and the heartbeat failed ("Server returned nothing"; rm_load saw
  // 454 of 15,000 fail with 2,000 nodes). An idle connection costs a socket and no thread.
  http.keepAliveTimeout = kKeepAliveTimeout;
  http.log = [](const std::string& line) { Logger("http").info() << line; };
  if (options.config.authenticate) http.auth = clusterAuth(options.clusterSecret);
  options.config.tls.applyTo(http);
  return http;
}

ResourceManagerServerOptions withSecret(ResourceManagerServerOptions options) {
  if (options.clusterSecret.empty()) options.clusterSecret = rest::newRandomSecret();
  return options;
}

// ClusterState speaks RmError; the HTTP server answers RestError with a JSON error body.
template <typename Body>
void translatingErrors(Body&& body) {
  try {
    body();
  } catch (const RmError& error) {
    throw rest::RestError(error.status(), error.what());
  }
}

int64_t systemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Keeps the reports in one of the `wanted` states (all of them when none is wanted).
void keepOnlyStates(std::vector<rest::ApplicationReport>& reports,
                    const std::vector<std::string>& wanted) {
  if (wanted.empty()) return;
  reports.erase(std::remove_if(reports.begin(), reports.end(),
                               [&](const rest::ApplicationReport& report) {
                                 return std::find(wanted.begin(), wanted.end(), report.state) ==
                                        wanted.end();
                               }),
                reports.end());
}

}  // namespace

ResourceManagerServer::ResourceManagerServer(ResourceManagerServerOptions options)
    : options_(withSecret(std::move(options))), server_(serverOptions(options_)) {
  if (options_.clock == nullptr) {
    ownedClock_ = std::make_unique<SteadyClock>();
    clock_ = ownedClock_.get();
  } else {
    clock_ = options_.clock;
  }
  ClusterStateOptions stateOptions;
  stateOptions.config = options_.config;
  stateOptions.stateStore = !options_.config.stateStoreDir.empty();
  // Throws StateStoreError naming the file: an unreadable store stops the start.
  if (stateOptions.stateStore) store_ = std::make_unique<StateStore>(options_.config.stateStoreDir);
  stateOptions.clusterTimestamp = options_.clusterTimestamp;  // given (tests): as given
  if (stateOptions.clusterTimestamp == 0) {
    ClusterTimestamp chosen = claimClusterTimestamp(
        store_ && !store_->state().empty ? store_->state().counters.clusterTimestamp : 0,
        systemNowMs());
    if (!chosen.warning.empty()) log_.warn() << chosen.warning;
    stateOptions.clusterTimestamp = chosen.ms;
    clusterTimestampClaim_ = std::move(chosen.claim);
  }
  stateOptions.placementSeed = options_.placementSeed;
  stateOptions.version = options_.version;
  state_ = std::make_unique<ClusterState>(
      stateOptions, *clock_, options_.secrets ? options_.secrets : systemSecretGenerator());
  if (store_) {
    log_.info() << "state store " << store_->logPath() << ": "
                << (store_->state().empty
                        ? std::string("empty, a first start")
                        : std::to_string(store_->recordsAtOpen()) + " records, " +
                              std::to_string(store_->state().applications.size()) +
                              " applications") +
                       (store_->tornTailAtOpen()
                            ? " (its last record was cut short by a crash and dropped)"
                            : "");
    std::lock_guard<std::mutex> lock(stateMutex_);
    state_->recover(store_->state());
    persist();
  }
  addRoutes();
}

ResourceManagerServer::~ResourceManagerServer() {
  stop();
}

int ResourceManagerServer::start() {
  const int port = server_.start();
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    state_->setRmAddress(server_.baseUrl());
  }
  dispatcher_ = std::thread([this] { runDispatcher(); });
  expiryChecker_ = std::thread([this] { runExpiryChecker(); });
  return port;
}

void ResourceManagerServer::stop() {
  {
    std::lock_guard<std::mutex> lock(workMutex_);
    stopping_ = true;
  }
  workChanged_.notify_all();
  if (expiryChecker_.joinable()) expiryChecker_.join();
  if (dispatcher_.joinable()) dispatcher_.join();
  server_.stop();
}

void ResourceManagerServer::addRoutes() {
  addApplicationRoutes();
  addClusterRoutes();
  addNodeRoutes();
  addApplicationMasterRoutes();
}

// ---- Client API: the applications (YARN's /ws/v1/cluster/apps)
void ResourceManagerServer::addApplicationRoutes() {
  addSubmissionRoutes();
  addApplicationReportRoutes();
  addControlTokenRoute();
  addKillRoute();
}

void ResourceManagerServer::addSubmissionRoutes() {
  using httplib::Request;
  using httplib::Response;
  server_.post("/ws/v1/cluster/apps/new-application", [this](const Request&, Response& res) {
    rest::replyJson(res, toJson(withState([](ClusterState& s) { return s.newApplication(); })));
  });
  server_.post("/ws/v1/cluster/apps", [this](const Request& req, Response& res) {
    const rapidjson::Document body = rest::parseJson(req.body);
    const rest::ApplicationSubmission submission = rest::applicationSubmissionFromJson(body);
    checkSubmissionLimits(submission);
    translatingErrors([&] {
      const rest::ApplicationReport report = withState([&](ClusterState& s) {
        s.submitApplication(submission);
        return s.applicationReport(submission.applicationId);
      });
      res.set_header("Location", "/ws/v1/cluster/apps/" + report.id);
      rest::replyJson(res, toJson(report), 202);
    });
  });
}

void ResourceManagerServer::addApplicationReportRoutes() {
  using httplib::Request;
  using httplib::Response;
  server_.get("/ws/v1/cluster/apps", [this](const Request& req, Response& res) {
    // YARN's filter ?states=RUNNING,ACCEPTED (any case), then ?offset= and ?limit=.
    const std::vector<std::string> wanted = applicationStatesOf(req);
    const Page page = pageOf(req);
    std::vector<rest::ApplicationReport> reports =
        withState([](ClusterState& s) { return s.applicationReports(); });
    keepOnlyStates(reports, wanted);
    applyPage(reports, page);
    rest::replyJson(res, toJson(reports));
  });
  server_.get(R"(/ws/v1/cluster/apps/([^/]+))", [this](const Request& req, Response& res) {
    const std::string id = req.matches[1];
    translatingErrors([&] {
      rest::replyJson(res,
                      toJson(withState([&](ClusterState& s) { return s.applicationReport(id); })));
    });
  });
  server_.get(R"(/ws/v1/cluster/apps/([^/]+)/state)", [this](const Request& req, Response& res) {
    const std::string id = req.matches[1];
    translatingErrors([&] {
      const rest::ApplicationReport report =
          withState([&](ClusterState& s) { return s.applicationReport(id); });
      rest::replyJson(res, toJson(rest::AppStateMessage{report.state}));
    });
  });
}

void ResourceManagerServer::addControlTokenRoute() {
  using httplib::Request;
  using httplib::Response;
  // The application's control token (rest/messages/credentials.h), for whoever may manage
  // applications here: what `tide status` puts in the page URL it prints.
  server_.get(
      R"(/ws/v1/cluster/apps/([^/]+)/control-token)", [this](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        translatingErrors([&] {
          const std::string secret =
              withState([&](ClusterState& s) { return s.applicationSecret(id); });
          if (secret.empty()) {
            throw rest::RestError(404, id + " was submitted without TIDE_APP_SECRET: it has no "
                                            "control token");
          }
          rest::JsonWriter w;
          w.startObject().field("controlToken", rest::controlTokenOf(secret)).endObject();
          rest::replyJson(res, w.str());
        });
      });
}

void ResourceManagerServer::addKillRoute() {
  using httplib::Request;
  using httplib::Response;
  server_.put(R"(/ws/v1/cluster/apps/([^/]+)/state)", [this](const Request& req, Response& res) {
    const std::string id = req.matches[1];
    const rapidjson::Document body = rest::parseJson(req.body);
    const rest::AppStateMessage wanted = rest::appStateFromJson(body);
    if (wanted.state != rest::app_state::kKilled) {
      throw rest::JsonFieldError("state",
                                 "only \"KILLED\" can be requested, got \"" + wanted.state + "\"");
    }
    translatingErrors([&] {
      rest::replyJson(res,
                      toJson(withState([&](ClusterState& s) { return s.killApplication(id); })));
    });
  });
}

// ---- Client API: the page and the cluster's own state
void ResourceManagerServer::addClusterRoutes() {
  using httplib::Request;
  using httplib::Response;

  server_.get("/", [](const Request&, Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(resourceManagerPageHtml()), "text/html; charset=utf-8");
  });
  server_.get("/ws/v1/cluster/metrics", [this](const Request&, Response& res) {
    rest::replyJson(res, toJson(withState([](ClusterState& s) { return s.metrics(); })));
  });
  server_.get("/ws/v1/cluster/nodes", [this](const Request& req, Response& res) {
    const Page page = pageOf(req);
    std::vector<rest::NodeReport> nodes =
        withState([](ClusterState& s) { return s.nodeReports(); });
    applyPage(nodes, page);
    rest::replyJson(res, toJson(nodes));
  });
  auto info = [this](const Request&, Response& res) {
    rest::replyJson(res, toJson(withState([](ClusterState& s) { return s.info(); })));
  };
  server_.get("/ws/v1/cluster/info", info);
  server_.get("/ws/v1/cluster", info);
}

// ---- Node managers: registration and heartbeats
void ResourceManagerServer::addNodeRoutes() {
  using httplib::Request;
  using httplib::Response;

  server_.post("/ws/v1/nm/register", [this](const Request& req, Response& res) {
    const rapidjson::Document body = rest::parseJson(req.body);
    const rest::NodeRegistration registration = rest::nodeRegistrationFromJson(body);
    rest::NodeRegistrationResponse answer =
        withState([&](ClusterState& s) { return s.registerNode(registration); });
    // The node checks the client tokens that read its logs against this; it cannot derive the
    // token from it.
    if (options_.config.authenticate) {
      answer.logReaderDigest = rest::logReaderDigestOf(rest::clientTokenOf(options_.clusterSecret));
    }
    rest::replyJson(res, toJson(answer));
  });
  server_.post(R"(/ws/v1/nm/([^/]+)/heartbeat)", [this](const Request& req, Response& res) {
    const std::string nodeId = req.matches[1];
    const rapidjson::Document body = rest::parseJson(req.body);
    const rest::NodeHeartbeat heartbeat = rest::nodeHeartbeatFromJson(body);
    translatingErrors([&] {
      rest::replyJson(res, toJson(withState([&](ClusterState& s) {
                        s.authenticateNode(nodeId, bearerToken(req));
                        return s.nodeHeartbeat(nodeId, heartbeat);
                      })));
    });
  });
}

void ResourceManagerServer::addApplicationMasterRoutes() {
  using httplib::Request;
  using httplib::Response;

  // ---- ApplicationMaster protocol: POST /ws/v1/am/<attempt id>/<call>, each the same way: the
  // attempt's token first, then the body (decoded with `decode`), then the state's `method`.
  const auto amCall = [this](const std::string& call, auto decode, auto method) {
    server_.post(
        "/ws/v1/am/([^/]+)/" + call, [this, decode, method](const Request& req, Response& res) {
          const std::string attemptId = req.matches[1];
          translatingErrors([&] {
            withState([&](ClusterState& s) { s.authenticateAttempt(attemptId, bearerToken(req)); });
            const rapidjson::Document body = rest::parseJson(req.body);
            const auto request = decode(body);
            rest::replyJson(res, toJson(withState([&](ClusterState& s) {
                              return (s.*method)(attemptId, request);
                            })));
          });
        });
  };
  amCall("register", rest::registerApplicationMasterRequestFromJson,
         &ClusterState::registerApplicationMaster);
  amCall("allocate", rest::allocateRequestFromJson, &ClusterState::allocate);
  amCall("finish", rest::finishApplicationMasterRequestFromJson,
         &ClusterState::finishApplicationMaster);
}

// ---------------------------------------------------------------------------------------------
// Background work

void ResourceManagerServer::persist() {
  std::vector<StoreRecord> records = state_->takeStoreRecords();
  if (!store_ || records.empty()) return;
  try {
    store_->append(records);
  } catch (const std::exception& error) {
    log_.error() << "the state store cannot be written (" << error.what()
                 << "); stopping rather than acknowledge what a restart would forget";
    flushLogs();
    std::_Exit(70);
  }
}

void ResourceManagerServer::dispatch(Outbox outbox) {
  if (outbox.empty()) return;
  {
    std::lock_guard<std::mutex> lock(workMutex_);
    work_.push_back(std::move(outbox));
  }
  workChanged_.notify_all();
}

void ResourceManagerServer::runExpiryChecker() {
  DurationMs interval = options_.expiryCheckIntervalMs;
  if (interval <= 0) {
    interval = std::min<DurationMs>(
        {250, options_.config.nodeExpiryMs / 4, options_.config.amLivenessExpiryMs / 4});
    interval = std::max<DurationMs>(interval, 10);
  }
  std::unique_lock<std::mutex> lock(workMutex_);
  while (!stopping_) {
    workChanged_.wait_for(lock, std::chrono::milliseconds(interval), [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    withState([](ClusterState& s) { s.checkExpiries(); });
    lock.lock();
  }
}

void ResourceManagerServer::runDispatcher() {
  std::unique_lock<std::mutex> lock(workMutex_);
  while (true) {
    workChanged_.wait(lock, [this] { return stopping_ || !work_.empty(); });
    if (stopping_) break;
    Outbox outbox = std::move(work_.front());
    work_.pop_front();
    lock.unlock();
    for (const AmLaunch& item : outbox.launches) launch(item);
    for (const ContainerStopOrder& item : outbox.stops) stopOnNode(item);
    lock.lock();
  }
}

void ResourceManagerServer::launch(const AmLaunch& item) {
  rest::HttpClientOptions clientOptions;
  clientOptions.connectTimeout = std::chrono::milliseconds(2000);
  clientOptions.requestTimeout = std::chrono::milliseconds(10000);
  clientOptions.retry.maxAttempts = 3;
  clientOptions.log = [](const std::string& line) { Logger("rm").warn() << line; };
  options_.config.tls.applyTo(clientOptions);
  std::string failure;
  // Whether the node only could not take it just now: it answered 503 (not registered yet) or
  // refused the connection (restarting). The RM then places the AM again.
  bool transient = false;
  try {
    rest::HttpClient client(options_.config.tls.urlOf(item.nodeHttpAddress), clientOptions);
    const rest::HttpResponse response = client.request(
        "POST", "/ws/v1/node/containers", toJson(item.request),
        {{"Content-Type", "application/json"}, {kContainerTokenHeader, item.request.token}});
    if (!response.ok()) {
      failure = "node manager answered HTTP " + std::to_string(response.status) + ": " +
                response.body.substr(0, 300);
      transient = response.status == 503;
    }
  } catch (const rest::HttpError& error) {
    failure = error.what();
    // curl's CURLE_COULDNT_CONNECT: the request never reached the node.
    transient =
        error.isTransportError() && error.detail().rfind("Couldn't connect to server", 0) == 0;
  } catch (const std::exception& error) {
    failure = error.what();
  }
  if (failure.empty()) {
    log_.info() << "AM container " << item.request.containerId << " launched on " << item.nodeId;
    return;
  }
  log_.warn() << "AM container " << item.request.containerId << " could not be launched on "
              << item.nodeId << ": " << failure;
  withState(
      [&](ClusterState& s) { s.amLaunchFailed(item.request.containerId, failure, transient); });
}

void ResourceManagerServer::stopOnNode(const ContainerStopOrder& order) {
  rest::HttpClientOptions clientOptions;
  clientOptions.connectTimeout = std::chrono::milliseconds(1000);
  clientOptions.requestTimeout = std::chrono::milliseconds(5000);
  clientOptions.retry.maxAttempts = 1;  // the heartbeat's containersToStop is the fallback
  options_.config.tls.applyTo(clientOptions);
  try {
    rest::HttpClient client(options_.config.tls.urlOf(order.nodeHttpAddress), clientOptions);
    const rest::HttpResponse response =
        client.request("DELETE", "/ws/v1/node/containers/" + order.containerId, "",
                       {{"Authorization", "Bearer " + order.nodeSecret}});
    TIDE_LOG(log_, debug) << "DELETE of " << order.containerId << " on " << order.nodeId
                          << ": HTTP " << response.status;
  } catch (const std::exception& error) {
    TIDE_LOG(log_, debug) << "DELETE of " << order.containerId << " on " << order.nodeId
                          << " failed: " << error.what() << " (its next heartbeat will stop it)";
  }
}

}  // namespace tide::rm
