// The status port's check, request by request: what needs the control token, and what a
// web page of another origin may not send.

#include "am/control_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tide::am {
namespace {

const std::string kToken(64, 'c');

httplib::Request request(const std::string& method, const std::string& path,
                         std::multimap<std::string, std::string> headers = {}) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers.insert({"Host", "127.0.0.1:4040"});
  for (auto& header : headers) req.headers.insert(header);
  return req;
}

int statusOf(const rest::AuthHook& hook, const httplib::Request& req) {
  try {
    return hook(req) ? 401 : 200;
  } catch (const rest::RestError& e) {
    return e.status();
  }
}

// The answer to a JSON POST /api/v1/jobs with the token, sent by a page of `origin`.
int postFrom(const rest::AuthHook& hook, const std::string& origin) {
  return statusOf(hook, request("POST", "/api/v1/jobs",
                                {{"Content-Type", "application/json"},
                                 {"Authorization", "Bearer " + kToken},
                                 {"Origin", origin}}));
}

TEST(ControlAuthTest, WritesNeedTheTokenReadsDoNot) {
  const auto hook = controlAuth(kToken, UiAuth::kWrites);
  const std::string bearer = "Bearer " + kToken;
  const std::multimap<std::string, std::string> json = {{"Content-Type", "application/json"}};
  EXPECT_EQ(statusOf(hook, request("GET", "/api/v1/status")), 200);
  EXPECT_EQ(statusOf(hook, request("POST", "/api/v1/jobs", json)), 401);
  EXPECT_EQ(statusOf(hook, request("PUT", "/api/v1/allocation/bounds",
                                   {{"Content-Type", "application/json"},
                                    {"Authorization", "Bearer wrong"}})),
            401);
  EXPECT_EQ(statusOf(hook, request("DELETE", "/api/v1/cache/s")), 401);
  EXPECT_EQ(statusOf(hook, request("PUT", "/api/v1/allocation/bounds",
                                   {{"Content-Type", "application/json; charset=utf-8"},
                                    {"Authorization", bearer}})),
            200);
  EXPECT_EQ(statusOf(hook, request("DELETE", "/api/v1/cache/s", {{"Authorization", bearer}})), 200);
}

TEST(ControlAuthTest, CrossOriginAndNonJsonWritesAreRefused) {
  const auto hook = controlAuth(kToken, UiAuth::kWrites);
  const std::string bearer = "Bearer " + kToken;
  EXPECT_EQ(postFrom(hook, "http://evil.example"), 403);
  EXPECT_EQ(postFrom(hook, "null"), 403);
  EXPECT_EQ(postFrom(hook, "http://127.0.0.1:4040"), 200);
  EXPECT_EQ(statusOf(hook, request("POST", "/api/v1/jobs",
                                   {{"Content-Type", "text/plain"}, {"Authorization", bearer}})),
            415);
  EXPECT_EQ(statusOf(hook, request("POST", "/api/v1/jobs", {{"Authorization", bearer}})), 415);
}

TEST(ControlAuthTest, OverTlsThePagesOriginIsHttps) {
  const auto hook = controlAuth(kToken, UiAuth::kWrites, "https");
  EXPECT_EQ(postFrom(hook, "https://127.0.0.1:4040"), 200);
  EXPECT_EQ(postFrom(hook, "http://127.0.0.1:4040"), 403) << "not the page's own origin over TLS";
}

TEST(ControlAuthTest, AllGuardsReadsToo) {
  const auto hook = controlAuth(kToken, UiAuth::kAll);
  EXPECT_EQ(statusOf(hook, request("GET", "/metrics")), 401);
  EXPECT_EQ(statusOf(hook, request("GET", "/api/v1/status", {{"Authorization", "Bearer x"}})), 401);
  EXPECT_EQ(
      statusOf(hook, request("GET", "/api/v1/status", {{"Authorization", "Bearer " + kToken}})),
      200);
  EXPECT_EQ(controlAuthExemptPaths().count("/"), 1u);
}

}  // namespace
}  // namespace tide::am
