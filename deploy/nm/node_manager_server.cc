#include "deploy/nm/node_manager_server.h"

#include <algorithm>

#include "common/app_logs.h"
#include "rest/http_status.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::nm {
namespace {

constexpr char kContainersPath[] = "/ws/v1/node/containers";
constexpr char kContainerPath[] = R"(/ws/v1/node/containers/([^/]+))";
constexpr char kLogsNeedAClientToken[] =
    "reading an application's logs needs 'Authorization: Bearer <client token>' (tide token; "
    "the cluster secret is accepted too), or the node secret";
constexpr char kAppLogsPath[] = R"(/api/v1/logs/([^/]+)/?)";
constexpr char kLogFilePath[] = R"(/api/v1/logs/([^/]+)/([^/]+)/(.*))";

void writeResource(rest::JsonWriter& out, const rest::Resource& resource) {
  out.startObject().field("memory", resource.memoryMb).field("vCores", resource.vCores).endObject();
}

}  // namespace

NodeManagerServer::NodeManagerServer(ContainerManager& containers, NodeIdentity& identity,
                                     rest::HttpServerOptions serverOptions)
    : containers_(containers), identity_(identity) {
  serverOptions.auth = nullptr;
  server_ = std::make_unique<rest::HttpServer>(std::move(serverOptions));
  server_->post(kContainersPath, [this](const auto& req, auto& res) { launch(req, res); });
  server_->get(kContainersPath, [this](const auto& req, auto& res) { list(req, res); });
  server_->get(kContainerPath, [this](const auto& req, auto& res) { get(req, res); });
  server_->del(kContainerPath, [this](const auto& req, auto& res) { remove(req, res); });
  server_->get("/ws/v1/node/info", [this](const auto& req, auto& res) { info(req, res); });
  server_->get(kAppLogsPath, [this](const auto& req, auto& res) { listLogs(req, res); });
  server_->get(kLogFilePath, [this](const auto& req, auto& res) { getLog(req, res); });
}

std::string NodeManagerServer::requireSecret() const {
  std::string secret = identity_.nodeSecret();
  if (secret.empty()) {
    throw rest::RestError(503, "the node has not registered with the resource manager yet");
  }
  return secret;
}

bool NodeManagerServer::isResourceManager(const httplib::Request& req,
                                          const std::string& secret) const {
  return req.has_header("Authorization") &&
         rest::secretsEqual(req.get_header_value("Authorization"), "Bearer " + secret);
}

void NodeManagerServer::authorizeContainer(const httplib::Request& req,
                                           const std::string& containerId) const {
  const std::string secret = requireSecret();
  if (isResourceManager(req, secret)) return;
  if (!req.has_header(kTokenHeader)) {
    throw rest::RestError(401, std::string("missing ") + kTokenHeader + " header");
  }
  const std::string token = req.get_header_value(kTokenHeader);
  // The token the container was launched with stays valid even if the node re-registered
  // and got a new secret since.
  if (rest::secretsEqual(token, rest::containerToken(secret, containerId)) ||
      containers_.tokenMatches(containerId, token)) {
    return;
  }
  throw rest::RestError(401, "invalid container token for " + containerId);
}

bool NodeManagerServer::isClient(const httplib::Request& req) const {
  const std::string digest = identity_.logReaderDigest();
  if (digest.empty() || !req.has_header("Authorization")) return false;
  const std::string token = rest::bearerTokenOf(req.get_header_value("Authorization"));
  if (token.empty()) return false;
  // The cluster secret is accepted as what it derives: whoever holds it holds the client token.
  return rest::secretsEqual(rest::logReaderDigestOf(token), digest) ||
         rest::secretsEqual(rest::logReaderDigestOf(rest::clientTokenOf(token)), digest);
}

void NodeManagerServer::listLogs(const httplib::Request& req, httplib::Response& res) {
  const std::string appId = req.matches[1];
  const std::string secret = requireSecret();
  if (!isResourceManager(req, secret) && !isClient(req)) {
    throw rest::RestError(401, kLogsNeedAClientToken);
  }
  std::vector<ContainerLogs> containers;
  rest::throwIfError(listApplicationLogs(containers_.options().logDir, appId, &containers));
  rest::JsonWriter out;
  out.startObject()
      .field("applicationId", appId)
      .field("nodeId", identity_.nodeId())
      .key("containers")
      .startArray();
  for (const ContainerLogs& container : containers) {
    out.startObject()
        .field("containerId", container.containerId)
        .field("executorId", container.executorId)
        .key("files")
        .startArray();
    for (const LogFile& file : container.files) {
      out.startObject().field("path", file.path).field("size", file.size).endObject();
    }
    out.endArray().endObject();
  }
  out.endArray().endObject();
  rest::replyJson(res, out.str());
}

void NodeManagerServer::getLog(const httplib::Request& req, httplib::Response& res) {
  const std::string appId = req.matches[1];
  const std::string containerId = req.matches[2];
  const std::string path = req.matches[3];
  const std::string secret = requireSecret();
  if (!isClient(req) && !isResourceManager(req, secret)) {
    if (!req.has_header(kTokenHeader)) throw rest::RestError(401, kLogsNeedAClientToken);
    authorizeContainer(req, containerId);
    // A container's token reads that container's logs only, under its own application.
    const std::optional<rest::ContainerReport> report = containers_.report(containerId);
    if (report && report->applicationId != appId) {
      throw rest::RestError(404, "container " + containerId + " is not one of " + appId);
    }
  }
  std::optional<int64_t> tail;
  if (req.has_param("tail")) {
    const std::string value = req.get_param_value("tail");
    const bool digits = !value.empty() && value.size() <= 18 &&
                        value.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      throw rest::RestError(400, "bad tail '" + value + "': expected a number of bytes");
    }
    tail = std::stoll(value);
  }
  std::string file;
  rest::throwIfError(resolveLogFile(containers_.options().logDir, appId, containerId, path, &file));
  std::string content;
  rest::throwIfError(readLogFile(file, tail, &content));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(content, "text/plain; charset=utf-8");
}

void NodeManagerServer::launch(const httplib::Request& req, httplib::Response& res) {
  const std::string secret = requireSecret();
  const rapidjson::Document body = rest::parseJson(req.body);
  const bool fromResourceManager = isResourceManager(req, secret);
  std::string token = req.has_header(kTokenHeader) ? req.get_header_value(kTokenHeader) : "";
  if (token.empty() && body.IsObject() && body.HasMember("token") && body["token"].IsString()) {
    token = body["token"].GetString();
  }
  // Refuse an anonymous caller before telling it anything about its request body.
  if (!fromResourceManager && token.empty()) {
    throw rest::RestError(401, std::string("missing ") + kTokenHeader + " header");
  }
  rest::ContainerLaunchRequest request = rest::containerLaunchRequestFromJson(body);
  const std::string expected = rest::containerToken(secret, request.containerId);
  if (!fromResourceManager && !rest::secretsEqual(token, expected)) {
    throw rest::RestError(401, "invalid container token for " + request.containerId);
  }
  request.token = expected;
  try {
    const rest::ContainerReport report = containers_.launch(request);
    rest::replyJson(res, rest::toJson(report), 201);
  } catch (const ContainerConflictError& conflict) {
    throw rest::RestError(409, conflict.what());
  }
}

void NodeManagerServer::list(const httplib::Request& req, httplib::Response& res) {
  const std::string secret = requireSecret();
  const bool fromResourceManager = isResourceManager(req, secret);
  const std::string token = req.has_header(kTokenHeader) ? req.get_header_value(kTokenHeader) : "";
  if (!fromResourceManager && token.empty()) {
    throw rest::RestError(401, std::string("missing Authorization (Bearer node secret) or ") +
                                   kTokenHeader + " header");
  }
  // A container token shows only the container it belongs to.
  rest::JsonWriter out;
  out.startObject().key("containers").startArray();
  for (const rest::ContainerReport& report : containers_.reports()) {
    if (!fromResourceManager &&
        !rest::secretsEqual(token, rest::containerToken(secret, report.containerId)) &&
        !containers_.tokenMatches(report.containerId, token)) {
      continue;
    }
    const std::string json = rest::toJson(report);
    out.raw().RawValue(json.data(), json.size(), rapidjson::kObjectType);
  }
  out.endArray().endObject();
  rest::replyJson(res, out.str());
}

void NodeManagerServer::get(const httplib::Request& req, httplib::Response& res) {
  const std::string containerId = req.matches[1];
  authorizeContainer(req, containerId);
  const std::optional<rest::ContainerReport> report = containers_.report(containerId);
  if (!report) throw rest::RestError(404, "unknown container " + containerId);
  rest::replyJson(res, rest::toJson(*report));
}

void NodeManagerServer::remove(const httplib::Request& req, httplib::Response& res) {
  const std::string containerId = req.matches[1];
  authorizeContainer(req, containerId);
  const std::optional<rest::ContainerReport> report =
      containers_.stop(containerId, StopReason::kAppMaster, /*wait=*/true);
  if (!report) throw rest::RestError(404, "unknown container " + containerId);
  rest::replyJson(res, rest::toJson(*report));
}

void NodeManagerServer::info(const httplib::Request&, httplib::Response& res) {
  const std::vector<rest::ContainerReport> reports = containers_.reports();
  const auto running = std::count_if(reports.begin(), reports.end(), [](const auto& report) {
    return report.state == ContainerManager::kRunning;
  });
  rest::JsonWriter out;
  out.startObject()
      .field("nodeId", identity_.nodeId())
      .field("registered", identity_.registered())
      .field("nmAddress", containers_.nmAddress())
      .key("capability");
  writeResource(out, containers_.options().capacity);
  out.key("allocated");
  writeResource(out, containers_.allocated());
  out.field("runningContainers", static_cast<int64_t>(running))
      .field("memoryEnforcement",
             std::string(memoryEnforcementName(containers_.memoryEnforcement())))
      .field("workDir", containers_.options().workDir)
      .endObject();
  rest::replyJson(res, out.str());
}

}  // namespace tide::nm
