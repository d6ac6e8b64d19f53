#include "bench/scale/fake_node.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include "rest/json.h"
#include "rest/messages/credentials.h"

namespace tide::bench {
namespace {

constexpr char kTokenHeader[] = "X-Tide-Container-Token";

}  // namespace

FakeNode::FakeNode(std::string host, rest::Resource capability, const std::string& rmAddress,
                   const std::string& nodeCredential, LaunchHandler onLaunch, StopHandler onStop)
    : host_(std::move(host)),
      capability_(capability),
      nodeCredential_(nodeCredential),
      onLaunch_(std::move(onLaunch)),
      onStop_(std::move(onStop)) {
  rest::HttpServerOptions options;
  options.bindAddress = host_;
  options.threadCount = 1;  // launches come one at a time from the AM's two launch threads
  options.log = [](const std::string&) {};
  server_ = std::make_unique<rest::HttpServer>(options);
  server_->post("/ws/v1/node/containers",
                [this](const httplib::Request& req, httplib::Response& res) { launch(req, res); });
  server_->del(R"(/ws/v1/node/containers/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) { remove(req, res); });
  server_->start();

  rest::HttpClientOptions client;
  client.requestTimeout = std::chrono::milliseconds(10000);
  client.log = [](const std::string&) {};
  rm_ = std::make_unique<rest::HttpClient>(rmAddress, client);
  registerWithRm();
}

FakeNode::~FakeNode() {
  server_->stop();
}

void FakeNode::registerWithRm() {
  rest::NodeRegistration registration{host_, server_->port(), capability_};
  const rest::HttpResponse response = rm_->request(
      "POST", "/ws/v1/nm/register", rest::toJson(registration),
      {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + nodeCredential_}});
  if (!response.ok()) {
    throw std::runtime_error("fake node " + host_ + ": the RM refused its registration: HTTP " +
                             std::to_string(response.status) + " " + response.body);
  }
  const rest::NodeRegistrationResponse answer =
      rest::nodeRegistrationResponseFromJson(rest::parseJson(response.body));
  std::lock_guard<std::mutex> lock(mutex_);
  nodeId_ = answer.nodeId;
  nodeSecret_ = answer.nodeSecret;
  heartbeatIntervalMs_ = answer.heartbeatIntervalMs;
}

bool FakeNode::authorized(const httplib::Request& req, const std::string& containerId) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (rest::secretsEqual(rest::bearerTokenOf(req.get_header_value("Authorization")), nodeSecret_)) {
    return true;  // the RM
  }
  return req.has_header(kTokenHeader) &&
         rest::secretsEqual(req.get_header_value(kTokenHeader),
                            rest::containerToken(nodeSecret_, containerId));
}

void FakeNode::launch(const httplib::Request& req, httplib::Response& res) {
  rest::ContainerLaunchRequest request =
      rest::containerLaunchRequestFromJson(rest::parseJson(req.body));
  if (!authorized(req, request.containerId)) {
    throw rest::RestError(401, "invalid container token for " + request.containerId);
  }
  if (request.environment.count("TIDE_EXECUTOR_ID") == 0) {
    // Only executors are simulated; an AM container belongs on the real node manager.
    throw rest::RestError(409, "this simulated node runs executors only");
  }
  rest::ContainerReport report;
  report.containerId = request.containerId;
  report.applicationId = request.applicationId;
  report.state = "RUNNING";
  report.resource = request.resource;
  std::string nodeId;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (containers_.count(request.containerId) != 0) {
      throw rest::RestError(409, "container " + request.containerId + " exists");
    }
    containers_[request.containerId] = Held{report};
    nodeId = nodeId_;
  }
  onLaunch_(request, nodeId, host_);
  rest::replyJson(res, rest::toJson(report), 201);
}

void FakeNode::remove(const httplib::Request& req, httplib::Response& res) {
  const std::string containerId = req.matches[1];
  if (!authorized(req, containerId)) {
    throw rest::RestError(401, "invalid container token for " + containerId);
  }
  stopContainer(containerId, rest::exit_status::kKilledByAppMaster);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = containers_.find(containerId);
  if (it == containers_.end()) throw rest::RestError(404, "unknown container " + containerId);
  rest::replyJson(res, rest::toJson(it->second.report));
}

void FakeNode::stopContainer(const std::string& containerId, int exitStatus) {
  if (markComplete(containerId, exitStatus)) onStop_(containerId);
}

void FakeNode::containerExited(const std::string& containerId, int exitStatus) {
  markComplete(containerId, exitStatus);
}

bool FakeNode::markComplete(const std::string& containerId, int exitStatus) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = containers_.find(containerId);
  if (it == containers_.end() || it->second.report.state == "COMPLETE") return false;
  it->second.report.state = "COMPLETE";
  it->second.report.exitStatus = exitStatus;
  return true;
}

void FakeNode::heartbeat() {
  rest::NodeHeartbeat beat;
  std::string nodeId, secret;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    nodeId = nodeId_;
    secret = nodeSecret_;
    for (const auto& [id, held] : containers_) {
      beat.containers.push_back(
          {id, held.report.state, held.report.exitStatus, "", held.report.resource});
    }
  }
  const rest::HttpResponse response =
      rm_->request("POST", "/ws/v1/nm/" + nodeId + "/heartbeat", rest::toJson(beat),
                   {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + secret}});
  if (!response.ok()) return;  // the next one tries again
  const rest::NodeHeartbeatResponse answer =
      rest::nodeHeartbeatResponseFromJson(rest::parseJson(response.body));
  for (const std::string& id : answer.containersToStop) {
    stopContainer(id, rest::exit_status::kKilledByResourceManager);
  }
  if (answer.reRegister) registerWithRm();
}

}  // namespace tide::bench
