#pragma once

// The client side of tide-rm's YARN-shaped cluster API, as `tide run`, `tide submit` and
// `tide status` use it.

#include <string>
#include <vector>

#include "rest/http_client.h"
#include "rest/messages/cluster.h"

namespace tide::deploy {

class ClusterClient {
 public:
  explicit ClusterClient(const std::string& rmAddress);
  rest::NewApplicationResponse newApplication();
  void submit(const rest::ApplicationSubmission& submission);
  rest::ApplicationReport application(const std::string& applicationId);
  void kill(const std::string& applicationId);
  rest::ClusterMetrics metrics();
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  rest::HttpClient http_;
};

// Quotes one word for /bin/sh.
std::string shellQuote(const std::string& word);
// Whether the application has ended: FINISHED (whatever its final status), FAILED or KILLED.
bool isFinal(const rest::ApplicationReport& report);

}  // namespace tide::deploy
