// `tide status URL|APP_ID [--json] [--watch] [--master URL]`: a compact terminal view of a
// running application master (bounds, target/live/busy executors, pending tasks, the last
// decisions), read from its status API. Given an application id it finds the AM through the
// resource manager's tracking URL.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/command_line.h"
#include "deploy/cluster_client.h"
#include "deploy/commands.h"
#include "deploy/master_location.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "rest/tls_settings.h"

namespace tide::deploy {
namespace {

std::atomic<bool> statusInterrupted{false};
void onStatusInterrupt(int) {
  statusInterrupted = true;
}

constexpr int kDecisionsShown = 6;

// tls.caFile: what https:// servers (the RM, the AM) are verified against.
std::string caFileOf(const Properties& props) {
  return rest::TlsSettings::fromProperties(props).caFile;
}

bool isUrl(const std::string& text) {
  return text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0;
}

// "1m 05s", "2h 03m", "12.5s".
std::string humanDuration(int64_t ms) {
  std::ostringstream out;
  if (ms < 60000) {
    out << std::fixed << std::setprecision(1) << static_cast<double>(ms) / 1000.0 << "s";
  } else if (ms < 3600000) {
    out << ms / 60000 << "m " << std::setw(2) << std::setfill('0') << (ms / 1000) % 60 << "s";
  } else {
    out << ms / 3600000 << "h " << std::setw(2) << std::setfill('0') << (ms / 60000) % 60 << "m";
  }
  return out.str();
}

// "m:ss" of AM uptime, as the decision log is stamped.
std::string clock(int64_t ms) {
  std::ostringstream out;
  const int64_t s = ms / 1000;
  out << s / 60 << ":" << std::setw(2) << std::setfill('0') << s % 60;
  return out.str();
}

std::string maxText(int max) {
  return max >= INT_MAX ? "inf" : std::to_string(max);
}

// Where the AM's status API is: the URL itself, or the tracking URL the RM has for the app.
// The control token, when known, is sent on every read (ui.auth=all needs it).
struct Target {
  std::string amUrl;
  std::optional<std::string> applicationId;
  std::string controlToken;
};

class StatusView {
 public:
  StatusView(std::string amUrl, const std::string& token, const std::string& caFile)
      : amUrl_(std::move(amUrl)) {
    rest::HttpClientOptions options;
    options.caFile = caFile;
    options.connectTimeout = std::chrono::milliseconds(2000);
    options.requestTimeout = std::chrono::milliseconds(5000);
    options.retry.maxAttempts = 2;
    if (!token.empty()) options.defaultHeaders.push_back({"Authorization", "Bearer " + token});
    client_ = std::make_unique<rest::HttpClient>(amUrl_, options);
  }

  rapidjson::Document status() { return client_->getJson("api/v1/status"); }
  std::string statusText() {
    auto response = client_->request("GET", "api/v1/status");
    if (!response.ok()) throw rest::HttpError::fromResponse("GET", amUrl_, response);
    return response.body;
  }

  // The compact view of one moment.
  std::string render() {
    const rapidjson::Document s = status();
    const rapidjson::Document d =
        client_->getJson("api/v1/allocation/decisions?limit=" + std::to_string(kDecisionsShown));
    const auto& a = s["allocation"];
    const auto& t = s["tasks"];
    std::ostringstream out;
    out << s["applicationId"].GetString() << "  " << s["attemptId"].GetString() << "  "
        << s["state"].GetString() << "  up " << humanDuration(s["uptimeMs"].GetInt64()) << "  "
        << amUrl_ << "\n";
    out << "executors  target " << a["target"].GetInt() << "  live " << a["live"].GetInt()
        << "  busy " << a["busy"].GetInt() << "  idle " << a["idle"].GetInt() << "  pending "
        << a["pending"].GetInt() << "  removing " << a["pendingRemoval"].GetInt() << "\n";
    out << "bounds     min " << a["min"].GetInt() << "  initial " << a["initial"].GetInt()
        << "  max " << maxText(a["max"].GetInt()) << "  max needed " << a["maxNeeded"].GetInt()
        << "  next step +" << a["numExecutorsToAdd"].GetInt()
        << (a["initializing"].GetBool() ? "  (initializing)" : "") << "\n";
    if (s.HasMember("capacity")) {  // what the target runs into (an older AM does not say)
      const auto& c = s["capacity"];
      out << "cluster    ";
      if (c["known"].GetBool()) {
        out << "fits " << c["executorsFitTotal"].GetInt() << " executors in all, "
            << c["executorsFitNow"].GetInt() << " more now";
      } else {
        out << "capacity unknown";
      }
      out << "  (" << c["source"].GetString() << ")\n";
    }
    out << "tasks      pending " << t["pending"].GetInt64() << "  running "
        << t["running"].GetInt64() << "  succeeded " << t["succeeded"].GetInt64() << "  failed "
        << t["failed"].GetInt64() << "\n";
    for (const auto& job : s["jobs"].GetArray()) {
      out << "job        " << job["id"].GetString() << " " << job["name"].GetString() << "  "
          << job["state"].GetString() << "  " << job["succeeded"].GetInt64() << "/"
          << job["tasks"].GetInt64() << " tasks";
      if (job["failedAttempts"].GetInt64() > 0) {
        out << ", " << job["failedAttempts"].GetInt64() << " failed attempts";
      }
      out << "\n";
    }
    out << "decisions (newest first)\n";
    for (const auto& decision : d["decisions"].GetArray()) {
      out << "  " << std::setw(6) << std::setfill(' ') << clock(decision["lastMs"].GetInt64())
          << "  " << std::left << std::setw(15) << decision["action"].GetString() << " "
          << std::right
          << (decision.HasMember("summary") ? decision["summary"] : decision["why"]).GetString();
      if (decision["repeats"].GetInt64() > 1)
        out << "  (x" << decision["repeats"].GetInt64() << ")";
      out << "\n";
    }
    return out.str();
  }

 private:
  std::string amUrl_;
  std::unique_ptr<rest::HttpClient> client_;
};

Target resolve(const std::string& what, const std::string& master, const Properties& props) {
  if (isUrl(what)) {
    // A page URL as printed (http://host:port/?token=T): the token goes in a header instead.
    const size_t query = what.find("?token=");
    if (query == std::string::npos) return {what, std::nullopt, ""};
    return {what.substr(0, query), std::nullopt, what.substr(query + 7)};
  }
  if (what.rfind("application_", 0) != 0) {
    throw ConfigError("'" + what +
                      "': expected the AM's URL (http(s)://HOST:PORT/) or an application id "
                      "(application_...)");
  }
  ClusterClient cluster(master, rest::rmClientToken(props), caFileOf(props));
  const rest::ApplicationReport report = applicationReportRidingOut(
      cluster, what, [](const std::string& line) { std::cerr << "tide status: " << line << "\n"; });
  if (isFinal(report)) {
    throw std::runtime_error(what + " has ended: " + report.state + " (" + report.finalStatus +
                             ")" + (report.diagnostics.empty() ? "" : ": " + report.diagnostics));
  }
  if (report.trackingUrl.empty()) {
    throw std::runtime_error(what + " is " + report.state +
                             ": its application master has not registered a status URL yet");
  }
  std::string controlToken;
  try {
    controlToken = cluster.controlToken(what);
  } catch (const std::exception& e) {
    std::cerr << "tide status: no control token for " << what << " (" << e.what() << ")\n";
  }
  return {report.trackingUrl, what, controlToken};
}

// Whether the application is still on: for an app id the RM says; for a URL, the AM answering.
bool applicationEnded(const Target& target, const std::string& master, const Properties& props) {
  if (!target.applicationId) return false;
  try {
    ClusterClient cluster(master, rest::rmClientToken(props), caFileOf(props));
    return isFinal(cluster.application(*target.applicationId));
  } catch (const std::exception&) {
    return false;  // the RM briefly unreachable is not the application's end
  }
}

}  // namespace

int runStatusCommand(int argc, char** argv) {
  CommandLine cli("tide status",
                  "Shows a running application master's allocation: bounds, target, live and "
                  "busy executors, pending tasks and the last decisions.");
  cli.addPositional("TARGET", "The AM's URL (http://HOST:PORT/) or an application id");
  cli.addFlag("json", "Print the status JSON (GET /api/v1/status) instead");
  cli.addFlag("watch", "Redraw every second until interrupted or the application ends");
  cli.addOption("master", "URL",
                "The resource manager to look an application id up in (default: $TIDE_MASTER, "
                "else the cluster of a `tide run` running in this directory, else "
                "http://127.0.0.1:8088)");
  cli.hideConfigKeys();
  return runMain(
      [&]() -> int {
        if (!cli.parse(argc, argv)) return 0;
        const MasterLocation location = resolveMaster(cli.option("master"));
        useMasterCredentials(location, cli.properties());
        const std::string master = location.url;
        const Target target = resolve(*cli.positional("TARGET"), master, cli.properties());
        if (target.applicationId && !target.controlToken.empty()) {
          // Once, on stderr: the page with the token that lets it change the bounds.
          std::cerr << "tide status: page " << pageUrlWithToken(target.amUrl, target.controlToken)
                    << "\n";
        }
        StatusView view(target.amUrl, target.controlToken, caFileOf(cli.properties()));
        const bool json = cli.flag("json");
        if (!cli.flag("watch")) {
          std::cout << (json ? view.statusText() + "\n" : view.render()) << std::flush;
          return 0;
        }

        struct sigaction action {};
        action.sa_handler = onStatusInterrupt;
        sigaction(SIGINT, &action, nullptr);
        sigaction(SIGTERM, &action, nullptr);
        const bool terminal = isatty(STDOUT_FILENO) != 0;
        bool shownOnce = false;
        while (!statusInterrupted) {
          std::string frame;
          try {
            frame = json ? view.statusText() + "\n" : view.render();
          } catch (const rest::HttpError& e) {
            // The AM goes away when its application ends: that ends the watch, quietly.
            if (shownOnce &&
                (e.isTransportError() || applicationEnded(target, master, cli.properties()))) {
              std::cerr << "tide status: the application master at " << target.amUrl
                        << " is gone (the application ended)\n";
              return 0;
            }
            throw;
          }
          if (terminal && !json) {
            std::cout << "\033[H\033[2J";  // home and clear: redraw in place
          } else if (shownOnce && !json) {
            std::cout << "\n";
          }
          std::cout << frame << std::flush;
          shownOnce = true;
          if (applicationEnded(target, master, cli.properties())) return 0;
          // Sleep in small steps so that Ctrl-C ends the watch at once.
          for (int i = 0; i < 20 && !statusInterrupted; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }
        return 0;
      },
      "tide status");
}

}  // namespace tide::deploy
