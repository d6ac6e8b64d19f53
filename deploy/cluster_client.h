#pragma once

// The client side of tide-rm's YARN-shaped cluster API, as `tide run`, `tide submit` and
// `tide status` use it.

#include <chrono>
#include <functional>
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
  // Every application the RM knows (GET /ws/v1/cluster/apps), only those in `states` when
  // it is not empty (YARN's ?states=RUNNING,ACCEPTED).
  std::vector<rest::ApplicationReport> applications(const std::vector<std::string>& states = {});
  void kill(const std::string& applicationId);
  rest::ClusterMetrics metrics();
  // GET /ws/v1/cluster/info: the cluster timestamp (in every application id) and the versions.
  rest::ClusterInfo info();
  // The cluster's node managers (GET /ws/v1/cluster/nodes).
  std::vector<rest::NodeReport> nodes();
  // The application's control token (GET /ws/v1/cluster/apps/{id}/control-token).
  std::string controlToken(const std::string& applicationId);
  const std::string& address() const { return address_; }
  const std::string& caFile() const { return caFile_; }

 private:
  std::string address_;
  std::string caFile_;
  rest::HttpClient http_;
};

// How long the tide commands wait for an unreachable tide-rm (a restart, a network blip)
// before giving up, and the ceiling of the delay between their tries.
struct OutagePatience {
  std::chrono::milliseconds total{std::chrono::minutes(5)};
  std::chrono::milliseconds initialDelay{200};
  std::chrono::milliseconds maxDelay{5000};
};

// The application's report, riding out an unreachable tide-rm: a refused or broken connection,
// a time-out or a 502/503/504 is retried with growing delays (doubling up to maxDelay) until
// `patience.total` has passed; `say` gets one line when the wait starts (what it waits for)
// and one when the RM answers again. Any other error (a 404, a 401) is thrown at once.
rest::ApplicationReport applicationReportRidingOut(
    ClusterClient& cluster, const std::string& applicationId,
    const std::function<void(const std::string&)>& say, const OutagePatience& patience = {});

// Quotes one word for /bin/sh.
std::string shellQuote(const std::string& word);
// Whether the application has ended: FINISHED (whatever its final status), FAILED or KILLED.
bool isFinal(const rest::ApplicationReport& report);
// While following an application: the first time `interrupted` holds (Ctrl-C), says
// "interrupted; <doing> <applicationId>" and calls `stop` (kill or cancel it), reporting what
// that throws as "could not <verb> <applicationId>" instead of throwing. `stopped` remembers
// that it did (the caller then follows the application to its end).
void stopOnInterrupt(const std::function<bool()>& interrupted, bool& stopped,
                     const std::string& applicationId, const std::string& doing,
                     const std::string& verb, const std::function<void()>& stop);
// The AM's page with its control token, as Jupyter prints it: "http://host:port/?token=T".
std::string pageUrlWithToken(const std::string& trackingUrl, const std::string& controlToken);

}  // namespace tide::deploy
