#include "rest/http_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rest/http_server.h"
#include "rest/json.h"
#include "tests/rest/rest_test_util.h"

namespace tide::rest {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.bindAddress = "127.0.0.1";
    options.port = 0;
    options.threadCount = 4;
    options.log = log_.function();
    server_ = std::make_unique<HttpServer>(options);
    // Answers 503 to the first `failuresLeft_` calls, then 200.
    auto flaky = [this](const httplib::Request&, httplib::Response& res) {
      ++calls_;
      if (failuresLeft_.fetch_sub(1) > 0) {
        replyError(res, 503, "warming up");
      } else {
        replyJson(res, R"({"ok":true})");
      }
    };
    server_->get("/flaky", flaky);
    server_->post("/flaky", flaky);
    server_->put("/flaky", flaky);
    server_->get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      gate_.waitOpen();
      replyJson(res, R"({"late":true})");
    });
    server_->post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      JsonWriter writer;
      writer.startObject()
          .field("method", req.method)
          .field("body", req.body)
          .field("contentType", req.get_header_value("Content-Type"))
          .field("auth", req.get_header_value("Authorization"))
          .field("custom", req.get_header_value("X-Custom"))
          .endObject();
      replyJson(res, writer.str());
    });
    server_->get("/text", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("not json", "text/plain");
    });
    server_->get("/long-error", [](const httplib::Request&, httplib::Response& res) {
      res.status = 400;
      res.set_content(std::string(1000, 'e'), "text/plain");
    });
    server_->get("/empty",
                 [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    server_->start();
  }

  void TearDown() override {
    gate_.open();  // never leave a handler blocked, whatever the test did
    server_.reset();
  }

  // Options whose sleeps are recorded, not slept.
  HttpClientOptions recordingOptions() {
    HttpClientOptions options;
    options.rngSeed = 42;
    options.retry.maxAttempts = 4;
    options.retry.initialBackoff = milliseconds(100);
    options.retry.maxBackoff = milliseconds(1000);
    options.sleep = [this](milliseconds delay) { sleeps_.push_back(delay); };
    options.log = log_.function();
    return options;
  }

  // `method` on /flaky while its next `failures` answers are 503s: the client ends on a 503
  // after `attempts` attempts.
  void expect503After(HttpClient& client, const std::string& method, int failures, int attempts) {
    failuresLeft_ = failures;
    const HttpResponse response = client.request(method, "/flaky", "{}");
    EXPECT_EQ(response.status, 503);
    EXPECT_EQ(response.attempts, attempts);
  }

  // The delays a client seeded with `seed` draws for its first `retries` retries.
  static std::vector<milliseconds> expectedDelays(const RetryPolicy& policy, uint64_t seed,
                                                  int retries) {
    std::mt19937_64 rng(seed);
    std::vector<milliseconds> delays;
    for (int retry = 1; retry <= retries; ++retry)
      delays.push_back(policy.backoffDelay(retry, rng));
    return delays;
  }

  testing::LogCapture log_;
  testing::Gate gate_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> failuresLeft_{0};
  std::atomic<int> calls_{0};
  std::vector<milliseconds> sleeps_;
};

TEST_F(HttpClientTest, RetriesIdempotentCallsWithJitteredGrowingBackoff) {
  failuresLeft_ = 2;
  HttpClientOptions options = recordingOptions();
  HttpClient client(server_->baseUrl(), options);

  HttpResponse response = client.request("GET", "/flaky");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.attempts, 3);
  EXPECT_EQ(calls_.load(), 3);
  ASSERT_EQ(sleeps_.size(), 2u);
  // Full jitter: each delay lies in [0, ceiling], and the ceiling doubles per retry.
  EXPECT_LE(sleeps_[0], milliseconds(100));
  EXPECT_LE(sleeps_[1], milliseconds(200));
  EXPECT_GE(sleeps_[0], milliseconds(0));
  // The injected seed fully determines the delays.
  EXPECT_EQ(sleeps_, expectedDelays(options.retry, 42, 2));
  EXPECT_THAT(log_.lines(), ::testing::Contains(HasSubstr("after HTTP 503")));
}

TEST_F(HttpClientTest, BackoffCeilingGrowsToTheCapAndJitterFillsIt) {
  RetryPolicy policy;
  policy.initialBackoff = milliseconds(100);
  policy.maxBackoff = milliseconds(1000);
  policy.multiplier = 2.0;
  EXPECT_EQ(policy.backoffCeiling(1), milliseconds(100));
  EXPECT_EQ(policy.backoffCeiling(2), milliseconds(200));
  EXPECT_EQ(policy.backoffCeiling(3), milliseconds(400));
  EXPECT_EQ(policy.backoffCeiling(4), milliseconds(800));
  EXPECT_EQ(policy.backoffCeiling(5), milliseconds(1000));
  EXPECT_EQ(policy.backoffCeiling(60), milliseconds(1000));

  // Over many draws the delays spread over the whole [0, ceiling] range and their mean
  // grows with the retry number.
  std::mt19937_64 rng(7);
  double previousMean = -1;
  for (int retry = 1; retry <= 4; ++retry) {
    int64_t sum = 0, low = INT64_MAX, high = 0;
    const int draws = 2000;
    for (int i = 0; i < draws; ++i) {
      int64_t delay = policy.backoffDelay(retry, rng).count();
      sum += delay;
      low = std::min(low, delay);
      high = std::max(high, delay);
    }
    int64_t ceiling = policy.backoffCeiling(retry).count();
    double mean = static_cast<double>(sum) / draws;
    EXPECT_GE(low, 0);
    EXPECT_LE(high, ceiling);
    EXPECT_LT(low, ceiling / 10) << "retry " << retry;
    EXPECT_GT(high, ceiling * 9 / 10) << "retry " << retry;
    EXPECT_NEAR(mean, ceiling / 2.0, ceiling * 0.1) << "retry " << retry;
    EXPECT_GT(mean, previousMean);
    previousMean = mean;
  }
}

TEST_F(HttpClientTest, GivesUpAfterMaxAttemptsAndReportsTheLastAnswer) {
  HttpClient client(server_->baseUrl(), recordingOptions());
  expect503After(client, "PUT", 100, 4);
  EXPECT_EQ(sleeps_.size(), 3u);
  EXPECT_EQ(sleeps_, expectedDelays(recordingOptions().retry, 42, 3));

  try {
    client.getJson("/flaky");
    FAIL() << "expected HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.status(), 503);
    EXPECT_EQ(error.method(), "GET");
    EXPECT_EQ(error.url(), server_->baseUrl() + "/flaky");
    EXPECT_EQ(std::string(error.what()),
              "GET " + server_->baseUrl() +
                  R"(/flaky: HTTP 503: {"error":{"code":503,"message":"warming up"}})");
  }
}

TEST_F(HttpClientTest, DoesNotRetryAPostUnlessMarkedIdempotent) {
  HttpClient client(server_->baseUrl(), recordingOptions());
  expect503After(client, "POST", 1, 1);
  EXPECT_EQ(calls_.load(), 1);
  EXPECT_TRUE(sleeps_.empty());

  failuresLeft_ = 1;
  RequestOptions idempotent;
  idempotent.idempotent = true;
  auto doc = client.postJson("/flaky", "{}", idempotent);
  EXPECT_TRUE(requireBool(doc, "ok"));
  EXPECT_EQ(calls_.load(), 3);
  EXPECT_EQ(sleeps_.size(), 1u);
}

TEST_F(HttpClientTest, RetryableStatusesAreConfigurable) {
  failuresLeft_ = 1;
  HttpClientOptions options = recordingOptions();
  options.retry.retryableStatuses = {502};
  HttpClient client(server_->baseUrl(), options);
  EXPECT_EQ(client.request("GET", "/flaky").status, 503);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(HttpClientTest, RequestTimeoutIsATransportError) {
  HttpClientOptions options = recordingOptions();
  options.requestTimeout = milliseconds(200);
  HttpClient client(server_->baseUrl(), options);
  try {
    client.request("GET", "/slow");
    FAIL() << "expected a timeout";
  } catch (const HttpError& error) {
    EXPECT_TRUE(error.isTransportError());
    EXPECT_EQ(error.status(), 0);
    EXPECT_THAT(error.detail(), HasSubstr("Timeout was reached"));
    EXPECT_THAT(error.what(), HasSubstr("GET " + server_->baseUrl() + "/slow: transport error: "));
  }
  // Timeouts are not retried by default: the caller's budget is spent.
  EXPECT_TRUE(sleeps_.empty());
  gate_.open();

  // A per-call timeout overrides the client's.
  RequestOptions patient;
  patient.timeout = milliseconds(10000);
  EXPECT_TRUE(requireBool(client.getJson("/slow", patient), "late"));
}

TEST_F(HttpClientTest, ConnectionRefusedIsRetriedEvenForPostAndThenReported) {
  // A port that just stopped listening refuses connections.
  int port;
  {
    HttpServerOptions options;
    options.log = log_.function();
    HttpServer closed(options);
    port = closed.start();
  }
  HttpClient client("http://127.0.0.1:" + std::to_string(port), recordingOptions());
  try {
    client.request("POST", "/x", "{}");
    FAIL() << "expected a connection error";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.status(), 0);
    EXPECT_THAT(error.detail(), HasSubstr("Couldn't connect to server"));
  }
  // The request never left, so even a POST was retried.
  EXPECT_EQ(sleeps_.size(), 3u);
}

TEST_F(HttpClientTest, SendsDefaultAndPerCallHeadersAndJsonContentType) {
  HttpClientOptions options = recordingOptions();
  options.defaultHeaders = {{"Authorization", "Bearer X"}, {"X-Custom", "default"}};
  HttpClient client(server_->baseUrl() + "/", options);  // a trailing slash is fine

  rapidjson::Document body(rapidjson::kObjectType);
  body.AddMember("n", 1, body.GetAllocator());
  auto echoed = client.postJson("echo", body);  // and so is a path without a leading slash
  EXPECT_EQ(requireString(echoed, "method"), "POST");
  EXPECT_EQ(requireString(echoed, "body"), R"({"n":1})");
  EXPECT_EQ(requireString(echoed, "contentType"), "application/json");
  EXPECT_EQ(requireString(echoed, "auth"), "Bearer X");
  EXPECT_EQ(requireString(echoed, "custom"), "default");

  HttpResponse overridden = client.request("POST", "/echo", "", {{"x-custom", "mine"}});
  auto doc = parseJson(overridden.body);
  EXPECT_EQ(requireString(doc, "custom"), "mine");
  EXPECT_EQ(requireString(doc, "contentType"), "") << "an empty body was labelled";
}

TEST_F(HttpClientTest, JsonHelpersExplainBadAnswers) {
  HttpClient client(server_->baseUrl(), recordingOptions());
  try {
    client.getJson("/text");
    FAIL() << "expected HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.status(), 200);
    EXPECT_THAT(
        error.what(),
        HasSubstr("HTTP 200: response is not JSON: malformed JSON at offset 1: Invalid value"));
    EXPECT_EQ(error.bodyExcerpt(), "not json");
  }
  try {
    client.getJson("/long-error");
    FAIL() << "expected HttpError";
  } catch (const HttpError& error) {
    EXPECT_EQ(error.status(), 400);
    EXPECT_EQ(error.bodyExcerpt(), std::string(300, 'e') + "...");
  }
  EXPECT_TRUE(client.getJson("/empty").IsNull());
}

TEST(HttpClientUrls, JoinBaseAndPath) {
  HttpClient client("http://127.0.0.1:1/prefix/");
  EXPECT_EQ(client.baseUrl(), "http://127.0.0.1:1/prefix");
  EXPECT_EQ(client.urlFor("/a"), "http://127.0.0.1:1/prefix/a");
  EXPECT_EQ(client.urlFor("a"), "http://127.0.0.1:1/prefix/a");
  EXPECT_EQ(client.urlFor("http://127.0.0.1:2/b"), "http://127.0.0.1:2/b");
  EXPECT_TRUE(client.unixSocketPath().empty());

  HttpClient unixClient("unix:/run/slurmrestd.sock");
  EXPECT_EQ(unixClient.unixSocketPath(), "/run/slurmrestd.sock");
  EXPECT_EQ(unixClient.urlFor("/slurm/v0.0.38/ping"), "http://localhost/slurm/v0.0.38/ping");
  EXPECT_THROW(HttpClient("unix:"), std::invalid_argument);
}

}  // namespace
}  // namespace tide::rest
