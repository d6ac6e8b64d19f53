#include "rest/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

#include "rest/json.h"

namespace tide::rest {
namespace {

constexpr char kUnixPrefix[] = "unix:";
// Requests over a Unix socket still need an http URL; curl ignores its host.
constexpr char kUnixDummyBase[] = "http://localhost";

void initCurlOnce() {
  // curl_global_init is not thread-safe and must run before any other curl call.
  static std::once_flag once;
  std::call_once(once, [] {
    CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
      throw std::runtime_error(std::string("curl_global_init failed: ") + curl_easy_strerror(code));
    }
  });
}

std::string toLower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool equalsIgnoreCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && toLower(a) == toLower(b);
}

bool isIdempotentMethod(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS";
}

size_t appendBody(char* data, size_t size, size_t count, void* target) {
  static_cast<std::string*>(target)->append(data, size * count);
  return size * count;
}

size_t collectHeader(char* data, size_t size, size_t count, void* target) {
  auto& headers = *static_cast<std::map<std::string, std::string>*>(target);
  std::string line(data, size * count);
  // A status line starts each response (also of a 100 Continue or a redirect): headers
  // belong to the last one.
  if (line.rfind("HTTP/", 0) == 0) {
    headers.clear();
    return size * count;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string value = line.substr(colon + 1);
  auto first = value.find_first_not_of(" \t");
  auto last = value.find_last_not_of(" \t\r\n");
  value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  headers[toLower(line.substr(0, colon))] = value;
  return size * count;
}

std::string excerpt(const std::string& body) {
  if (body.size() <= HttpError::kBodyExcerptChars) return body;
  return body.substr(0, HttpError::kBodyExcerptChars) + "...";
}

std::string describeFailure(const std::string& method, const std::string& url, long status,
                            const std::string& bodyExcerpt, const std::string& detail) {
  std::string text = method + " " + url + ": ";
  if (status == 0) return text + "transport error: " + detail;
  text += "HTTP " + std::to_string(status);
  if (!detail.empty()) text += ": " + detail;
  if (!bodyExcerpt.empty()) text += ": " + bodyExcerpt;
  return text;
}

// Curl failures where the request certainly never reached the server.
bool isUnsent(CURLcode code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
         code == CURLE_COULDNT_RESOLVE_PROXY;
}

bool isConnectionError(CURLcode code) {
  return isUnsent(code) || code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR ||
         code == CURLE_GOT_NOTHING || code == CURLE_PARTIAL_FILE;
}

using HeaderList = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

// Timeouts, keep-alive and certificate checks: the same for every request of a client.
void setTransportOptions(CURL* curl, const HttpClientOptions& options,
                         std::chrono::milliseconds timeout) {
  // Signals cannot interrupt other threads' calls; timeouts then rely on curl's own polling.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connectTimeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options.caFile.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options.caFile.c_str());
}

// `body` must outlive the request: curl sends it from there.
void setMethodAndBody(CURL* curl, const std::string& method, const std::string& body) {
  if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method == "GET" && body.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (body.empty() && method != "POST" && method != "PUT" && method != "PATCH") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  } else {
    // POSTFIELDS sends the body with a Content-Length; CUSTOMREQUEST names the method.
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    if (method != "POST") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
}

// The client's default headers that the call does not override, then the call's own.
curl_slist* requestHeaderList(const HttpHeaders& defaults, const HttpHeaders& headers,
                              bool emptyBody) {
  curl_slist* list = nullptr;
  auto addHeader = [&list](const std::string& name, const std::string& value) {
    // "Name;" is curl's spelling of a header with an empty value ("Name:" would remove it).
    std::string line = value.empty() ? name + ";" : name + ": " + value;
    list = curl_slist_append(list, line.c_str());
  };
  for (const auto& header : defaults) {
    bool overridden = std::any_of(headers.begin(), headers.end(), [&](const auto& h) {
      return equalsIgnoreCase(h.first, header.first);
    });
    if (!overridden) addHeader(header.first, header.second);
  }
  for (const auto& header : headers) addHeader(header.first, header.second);
  auto isContentType = [](const auto& h) { return equalsIgnoreCase(h.first, "Content-Type"); };
  bool hasContentType = std::any_of(headers.begin(), headers.end(), isContentType) ||
                        std::any_of(defaults.begin(), defaults.end(), isContentType);
  // curl would label even an empty POST body as a form; an empty body has no type.
  if (emptyBody && !hasContentType) list = curl_slist_append(list, "Content-Type:");
  // Without this curl waits for a "100 Continue" before sending larger bodies.
  return curl_slist_append(list, "Expect:");
}

}  // namespace

void logToStderr(const std::string& line) {
  std::cerr << line << std::endl;
}

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(toLower(name));
  return it == headers.end() ? "" : it->second;
}

HttpError::HttpError(std::string method, std::string url, long status, std::string bodyExcerpt,
                     std::string detail)
    : std::runtime_error(describeFailure(method, url, status, bodyExcerpt, detail)),
      method_(std::move(method)),
      url_(std::move(url)),
      status_(status),
      bodyExcerpt_(std::move(bodyExcerpt)),
      detail_(std::move(detail)) {}

HttpError HttpError::fromResponse(const std::string& method, const std::string& url,
                                  const HttpResponse& response) {
  return HttpError(method, url, response.status, excerpt(response.body), "");
}

std::chrono::milliseconds RetryPolicy::backoffCeiling(int retryNumber) const {
  double ceiling = static_cast<double>(initialBackoff.count()) *
                   std::pow(multiplier, std::max(0, retryNumber - 1));
  double cap = static_cast<double>(maxBackoff.count());
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(ceiling, cap)));
}

std::chrono::milliseconds RetryPolicy::backoffDelay(int retryNumber, std::mt19937_64& rng) const {
  std::uniform_int_distribution<int64_t> jitter(0, backoffCeiling(retryNumber).count());
  return std::chrono::milliseconds(jitter(rng));
}

// The outcome of one try: either a response or a curl failure.
struct HttpClient::Attempt {
  CURLcode code = CURLE_OK;
  std::string curlError;
  HttpResponse response;
};

HttpClient::HttpClient(std::string baseUrl, HttpClientOptions options)
    : options_(std::move(options)), curl_(nullptr) {
  initCurlOnce();
  if (baseUrl.rfind(kUnixPrefix, 0) == 0) {
    unixSocketPath_ = baseUrl.substr(sizeof(kUnixPrefix) - 1);
    if (unixSocketPath_.empty())
      throw std::invalid_argument("empty Unix socket path in " + baseUrl);
    baseUrl_ = kUnixDummyBase;
  } else {
    baseUrl_ = std::move(baseUrl);
  }
  while (!baseUrl_.empty() && baseUrl_.back() == '/') baseUrl_.pop_back();
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds delay) { std::this_thread::sleep_for(delay); };
  }
  if (!options_.log) options_.log = logToStderr;
  rng_.seed(options_.rngSeed ? *options_.rngSeed : std::random_device{}());
  curl_ = curl_easy_init();
  if (curl_ == nullptr) throw std::runtime_error("curl_easy_init failed");
}

HttpClient::~HttpClient() {
  curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string HttpClient::urlFor(const std::string& path) const {
  if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) return path;
  if (path.empty() || path.front() == '/') return baseUrl_ + path;
  return baseUrl_ + "/" + path;
}

void HttpClient::setDefaultHeader(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& header : options_.defaultHeaders) {
    if (equalsIgnoreCase(header.first, name)) {
      header.second = value;
      return;
    }
  }
  options_.defaultHeaders.emplace_back(name, value);
}

HttpClient::Attempt HttpClient::performOnce(const std::string& method, const std::string& url,
                                            const std::string& body, const HttpHeaders& headers,
                                            std::chrono::milliseconds timeout) {
  CURL* curl = static_cast<CURL*>(curl_);
  // Reset clears the previous call's options but keeps the live connection for reuse.
  curl_easy_reset(curl);

  Attempt attempt;
  char errorBuffer[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errorBuffer);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  if (!unixSocketPath_.empty()) {
    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, unixSocketPath_.c_str());
  }
  setTransportOptions(curl, options_, timeout);
  setMethodAndBody(curl, method, body);
  const HeaderList headerList(requestHeaderList(options_.defaultHeaders, headers, body.empty()),
                              curl_slist_free_all);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headerList.get());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt.response.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, collectHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &attempt.response.headers);

  attempt.code = curl_easy_perform(curl);
  // The handle outlives this call's header list and error buffer.
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  if (attempt.code != CURLE_OK) {
    attempt.curlError = curl_easy_strerror(attempt.code);
    if (errorBuffer[0] != '\0') attempt.curlError += std::string(" (") + errorBuffer + ")";
    return attempt;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &attempt.response.status);
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &attempt.response.newConnections);
  return attempt;
}

bool HttpClient::shouldRetry(const Attempt& attempt, bool idempotent) const {
  const RetryPolicy& policy = options_.retry;
  if (attempt.code != CURLE_OK) {
    if (policy.retryUnsentRequests && isUnsent(attempt.code)) return true;
    if (!idempotent) return false;
    if (attempt.code == CURLE_OPERATION_TIMEDOUT) return policy.retryTimeouts;
    return policy.retryConnectionErrors && isConnectionError(attempt.code);
  }
  return idempotent && policy.retryableStatuses.count(attempt.response.status) > 0;
}

HttpResponse HttpClient::request(const std::string& method, const std::string& path,
                                 const std::string& body, const HttpHeaders& headers,
                                 const RequestOptions& options) {
  const std::string url = urlFor(path);
  const bool idempotent = options.idempotent.value_or(isIdempotentMethod(method));
  const auto timeout = options.timeout.value_or(options_.requestTimeout);
  const int maxAttempts = std::max(1, options_.retry.maxAttempts);

  std::lock_guard<std::mutex> lock(mutex_);
  for (int attemptNumber = 1;; ++attemptNumber) {
    Attempt attempt = performOnce(method, url, body, headers, timeout);
    attempt.response.attempts = attemptNumber;
    bool retry = attemptNumber < maxAttempts && shouldRetry(attempt, idempotent);
    if (!retry) {
      if (attempt.code != CURLE_OK) throw HttpError(method, url, 0, "", attempt.curlError);
      return std::move(attempt.response);
    }
    std::chrono::milliseconds delay = options_.retry.backoffDelay(attemptNumber, rng_);
    std::string why = attempt.code != CURLE_OK ? attempt.curlError
                                               : "HTTP " + std::to_string(attempt.response.status);
    options_.log("retrying " + method + " " + url + " after " + why + " in " +
                 std::to_string(delay.count()) + " ms (attempt " +
                 std::to_string(attemptNumber + 1) + " of " + std::to_string(maxAttempts) + ")");
    options_.sleep(delay);
  }
}

rapidjson::Document HttpClient::requestJson(const std::string& method, const std::string& path,
                                            const std::string& jsonText,
                                            const RequestOptions& options) {
  HttpHeaders headers{{"Accept", "application/json"}};
  if (!jsonText.empty()) headers.emplace_back("Content-Type", "application/json");
  HttpResponse response = request(method, path, jsonText, headers, options);
  if (!response.ok()) throw HttpError::fromResponse(method, urlFor(path), response);
  if (response.body.empty()) return rapidjson::Document();  // null
  try {
    return parseJson(response.body);
  } catch (const JsonParseError& error) {
    throw HttpError(method, urlFor(path), response.status, excerpt(response.body),
                    std::string("response is not JSON: ") + error.what());
  }
}

JsonBody::JsonBody(const rapidjson::Value& value) : text_(toJsonString(value)) {}

rapidjson::Document HttpClient::getJson(const std::string& path, const RequestOptions& options) {
  return requestJson("GET", path, "", options);
}
rapidjson::Document HttpClient::postJson(const std::string& path, const JsonBody& body,
                                         const RequestOptions& options) {
  return requestJson("POST", path, body.text(), options);
}
rapidjson::Document HttpClient::putJson(const std::string& path, const JsonBody& body,
                                        const RequestOptions& options) {
  return requestJson("PUT", path, body.text(), options);
}
rapidjson::Document HttpClient::deleteJson(const std::string& path, const RequestOptions& options) {
  return requestJson("DELETE", path, "", options);
}

}  // namespace tide::rest
