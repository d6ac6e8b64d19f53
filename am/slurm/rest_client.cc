#include "am/slurm/rest_client.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/config.h"
#include "rest/json.h"

namespace tide::am {
namespace {

// Slurm's "Invalid job id specified" and "Job/step already completing or completed".
constexpr int kInvalidJobId = 2017;
constexpr int kAlreadyDone = 2021;

bool hasCode(const std::vector<SlurmError>& errors, int code) {
  return std::any_of(errors.begin(), errors.end(),
                     [code](const SlurmError& e) { return e.code == code; });
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string excerpt(const std::string& text) {
  const std::string trimmed = trim(text);
  return trimmed.size() <= 300 ? trimmed : trimmed.substr(0, 300) + "...";
}

}  // namespace

SlurmConnection SlurmConnection::fromProperties(const Properties& props) {
  SlurmConnection connection;
  connection.url = props.getString("slurm.url");
  const std::string version = props.getString("slurm.apiVersion");
  const auto supported = SlurmApi::supportedVersions();
  if (std::find(supported.begin(), supported.end(), version) == supported.end()) {
    std::string list;
    for (const auto& v : supported) list += (list.empty() ? "" : ", ") + v;
    throw ConfigError(props.describe("slurm.apiVersion") + ": not supported (supported: " + list +
                      ")");
  }
  connection.api.version = version;
  if (connection.url.rfind("http://", 0) != 0 && connection.url.rfind("https://", 0) != 0 &&
      connection.url.rfind("unix:", 0) != 0) {
    throw ConfigError(props.describe("slurm.url") +
                      ": expected http://HOST:PORT or unix:/path/to/socket");
  }
  connection.user = props.getOptionalString("slurm.user").value_or("");
  connection.tokenFile = props.getOptionalString("slurm.tokenFile").value_or("");
  return connection;
}

std::string currentUserName() {
  if (const passwd* entry = getpwuid(geteuid())) return entry->pw_name;
  if (const char* user = std::getenv("USER")) return user;
  return std::to_string(geteuid());
}

SlurmToken::SlurmToken(std::string tokenFile) : file_(std::move(tokenFile)) {}

std::optional<std::string> SlurmToken::current() {
  if (file_.empty()) {
    const char* token = std::getenv("SLURM_JWT");
    if (token == nullptr || *token == '\0') return std::nullopt;
    return std::string(token);
  }
  struct stat info {};
  if (::stat(file_.c_str(), &info) != 0) {
    throw SlurmUnavailable("cannot read the Slurm token file " + file_ + ": " +
                           std::strerror(errno));
  }
  const bool changed = !loaded_ || info.st_mtim.tv_sec != mtime_.tv_sec ||
                       info.st_mtim.tv_nsec != mtime_.tv_nsec || info.st_size != size_ ||
                       info.st_ino != inode_;
  if (changed) {
    std::ifstream in(file_);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw SlurmUnavailable("cannot read the Slurm token file " + file_);
    std::string token = trim(text.str());
    // `scontrol token` prints SLURM_JWT=...; a file holding that line works too.
    if (token.rfind("SLURM_JWT=", 0) == 0) token = trim(token.substr(10));
    if (token.empty()) throw SlurmUnavailable("the Slurm token file " + file_ + " is empty");
    token_ = token;
    loaded_ = true;
    mtime_ = info.st_mtim;
    size_ = info.st_size;
    inode_ = info.st_ino;
  }
  return token_;
}

SlurmRestClient::SlurmRestClient(SlurmConnection connection, rest::LogFunction log)
    : connection_(std::move(connection)),
      log_(log ? std::move(log) : rest::LogFunction(rest::logToStderr)),
      token_(connection_.tokenFile),
      http_(connection_.url, [this] {
        rest::HttpClientOptions options;
        options.requestTimeout = std::chrono::milliseconds(15000);
        options.log = log_;
        return options;
      }()) {
  if (connection_.user.empty()) connection_.user = currentUserName();
}

std::string SlurmRestClient::describe() const {
  return "slurmrestd at " + connection_.url + " (" + connection_.api.version + ")";
}

SlurmRestClient::Reply SlurmRestClient::call(const std::string& method, const std::string& path,
                                             const std::string& body) {
  rest::HttpHeaders headers{{"Accept", "application/json"}};
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  std::optional<std::string> token;
  {
    std::lock_guard<std::mutex> lock(tokenMutex_);
    token = token_.current();
  }
  if (token) {
    headers.emplace_back("X-SLURM-USER-NAME", connection_.user);
    headers.emplace_back("X-SLURM-USER-TOKEN", *token);
  }
  rest::HttpResponse response;
  try {
    response = http_.request(method, path, body, headers);
  } catch (const rest::HttpError& error) {
    throw SlurmUnavailable(describe() + ": " + error.what());
  }
  Reply reply;
  reply.status = response.status;
  if (!response.body.empty()) {
    try {
      reply.body = rest::parseJson(response.body);
    } catch (const rest::JsonParseError&) {
      // slurmrestd answers authentication failures and unparsable requests in plain text.
      reply.errors.push_back({0, excerpt(response.body)});
      return reply;
    }
    reply.errors = slurmErrorsFromJson(reply.body);
  }
  return reply;
}

void SlurmRestClient::throwUnavailable(const std::string& what, const Reply& reply) const {
  std::string text = what + " via " + describe() + ": HTTP " + std::to_string(reply.status);
  if (!reply.errors.empty()) text += ": " + describeSlurmErrors(reply.errors);
  if (reply.status == 401) text += " (is the token valid, and slurm.user its user?)";
  throw SlurmUnavailable(text);
}

void SlurmRestClient::ping() {
  Reply reply = call("GET", connection_.api.pingPath(), "");
  if (reply.status != 200 || !reply.errors.empty()) throwUnavailable("ping", reply);
}

int64_t SlurmRestClient::submit(const SlurmJobSpec& spec) {
  Reply reply = call("POST", connection_.api.submitPath(), slurmSubmissionJson(spec));
  if (!reply.errors.empty() && isSlurmRejection(reply.errors)) {
    throw SlurmRejected("Slurm rejected job " + spec.name + ": " +
                        describeSlurmErrors(reply.errors));
  }
  if (reply.status != 200 || !reply.errors.empty() || !reply.body.IsObject()) {
    throwUnavailable("submitting job " + spec.name, reply);
  }
  try {
    return slurmSubmitResponseFromJson(reply.body).jobId;
  } catch (const rest::JsonFieldError& e) {
    throwUnavailable(std::string("submitting job ") + spec.name + ": " + e.what(), reply);
  }
}

std::vector<SlurmJob> SlurmRestClient::jobs() {
  Reply reply = call("GET", connection_.api.jobsPath(), "");
  if (reply.status != 200 || !reply.errors.empty()) throwUnavailable("listing jobs", reply);
  try {
    return slurmJobsFromJson(reply.body);
  } catch (const rest::JsonFieldError& e) {
    throwUnavailable(std::string("listing jobs: ") + e.what(), reply);
  }
}

std::optional<SlurmJob> SlurmRestClient::job(int64_t jobId) {
  Reply reply = call("GET", connection_.api.jobPath(jobId), "");
  if (hasCode(reply.errors, kInvalidJobId)) return std::nullopt;
  if (reply.status != 200 || !reply.errors.empty()) {
    throwUnavailable("reading job " + std::to_string(jobId), reply);
  }
  try {
    auto jobs = slurmJobsFromJson(reply.body);
    for (auto& job : jobs) {
      if (job.jobId == jobId) return std::move(job);
    }
    return std::nullopt;
  } catch (const rest::JsonFieldError& e) {
    throwUnavailable("reading job " + std::to_string(jobId) + ": " + e.what(), reply);
  }
}

bool SlurmRestClient::cancel(int64_t jobId) {
  Reply reply = call("DELETE", connection_.api.cancelPath(jobId), "");
  if (hasCode(reply.errors, kInvalidJobId) || hasCode(reply.errors, kAlreadyDone)) return false;
  if (reply.status != 200 || !reply.errors.empty()) {
    throwUnavailable("cancelling job " + std::to_string(jobId), reply);
  }
  return true;
}

void SlurmRestClient::setComment(int64_t jobId, const std::string& comment) {
  Reply reply = call("POST", connection_.api.updatePath(jobId), slurmCommentUpdateJson(comment));
  if (!reply.errors.empty() && isSlurmRejection(reply.errors)) {
    throw SlurmRejected("Slurm refused to update job " + std::to_string(jobId) + ": " +
                        describeSlurmErrors(reply.errors));
  }
  if (reply.status != 200 || !reply.errors.empty()) {
    throwUnavailable("updating job " + std::to_string(jobId), reply);
  }
}

}  // namespace tide::am
