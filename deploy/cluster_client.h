#pragma once

// The client side of tide-rm's YARN-shaped cluster API, as `tide run`, `tide submit` and
// `tide status` use it.

#include <optional>
#include <string>
#include <vector>

#include "rest/http_client.h"
#include "rest/messages/cluster.h"

namespace tide::deploy {

class ClusterClient {
 public:
  // `token` is sent as "Authorization: Bearer" on every request (see rmClientToken() in
  // rest/messages/credentials.h); nullopt sends none. `caFile` (tls.caFile): what an https://
  // RM, and the AMs whose tracking URLs it hands out, are verified against ("" = system CAs).
  explicit ClusterClient(const std::string& rmAddress,
                         const std::optional<std::string>& token = std::nullopt,
                         std::string caFile = "");
  rest::NewApplicationResponse newApplication();
  void submit(const rest::ApplicationSubmission& submission);
  rest::ApplicationReport application(const std::string& applicationId);
  void kill(const std::string& applicationId);
  rest::ClusterMetrics metrics();
  // The application's control token (GET /ws/v1/cluster/apps/{id}/control-token).
  std::string controlToken(const std::string& applicationId);
  const std::string& address() const { return address_; }
  const std::string& caFile() const { return caFile_; }

 private:
  std::string address_;
  std::string caFile_;
  rest::HttpClient http_;
};

// Quotes one word for /bin/sh.
std::string shellQuote(const std::string& word);
// Whether the application has ended: FINISHED (whatever its final status), FAILED or KILLED.
bool isFinal(const rest::ApplicationReport& report);
// The AM's page with its control token, as Jupyter prints it: "http://host:port/?token=T".
std::string pageUrlWithToken(const std::string& trackingUrl, const std::string& controlToken);

}  // namespace tide::deploy
