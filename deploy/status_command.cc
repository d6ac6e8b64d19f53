// `tide status URL|APP_ID [--json] [--watch] [--master URL]`: a compact terminal view of a
// running application master (bounds, target/live/busy executors, pending tasks, the last
// decisions), read from its status API. Given an application id it finds the AM through the
// resource manager's tracking URL.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "am/config.h"
#include "am/status/event_log_replay.h"
#include "common/command_line.h"
#include "deploy/cluster_client.h"
#include "deploy/commands.h"
#include "deploy/history_server.h"
#include "deploy/master_location.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"
#include "rest/tls_settings.h"

namespace tide::deploy {
namespace {

using rest::JsonWriter;

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
  std::optional<rest::ApplicationReport> ended;  // the RM's report of an application that ended
};

// The compact view of one moment: the status and decisions documents (the AM's, or a
// history's), and where they are from.
std::string renderStatus(const rapidjson::Value& s, const rapidjson::Value& d,
                         const std::string& where) {
  const auto& a = s["allocation"];
  const auto& t = s["tasks"];
  std::ostringstream out;
  out << s["applicationId"].GetString() << "  " << s["attemptId"].GetString() << "  "
      << s["state"].GetString() << "  up " << humanDuration(s["uptimeMs"].GetInt64()) << "  "
      << where << "\n";
  out << "executors  target " << a["target"].GetInt() << "  live " << a["live"].GetInt()
      << "  busy " << a["busy"].GetInt() << "  idle " << a["idle"].GetInt() << "  pending "
      << a["pending"].GetInt() << "  removing " << a["pendingRemoval"].GetInt();
  // Only while some are (an older AM's or history's document has no such field).
  if (a.HasMember("decommissioning") && a["decommissioning"].GetInt() > 0) {
    out << "  decommissioning " << a["decommissioning"].GetInt();
  }
  out << "\n";
  out << "bounds     min " << a["min"].GetInt() << "  initial " << a["initial"].GetInt() << "  max "
      << maxText(a["max"].GetInt()) << "  max needed " << a["maxNeeded"].GetInt() << "  next step +"
      << a["numExecutorsToAdd"].GetInt() << (a["initializing"].GetBool() ? "  (initializing)" : "")
      << "\n";
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
  out << "tasks      pending " << t["pending"].GetInt64() << "  running " << t["running"].GetInt64()
      << "  succeeded " << t["succeeded"].GetInt64() << "  failed " << t["failed"].GetInt64()
      << "\n";
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
    out << "  " << std::setw(6) << std::setfill(' ') << clock(decision["lastMs"].GetInt64()) << "  "
        << std::left << std::setw(15) << decision["action"].GetString() << " " << std::right
        << (decision.HasMember("summary") ? decision["summary"] : decision["why"]).GetString();
    if (decision["repeats"].GetInt64() > 1) out << "  (x" << decision["repeats"].GetInt64() << ")";
    out << "\n";
  }
  return out.str();
}

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
    return renderStatus(
        status(),
        client_->getJson("api/v1/allocation/decisions?limit=" + std::to_string(kDecisionsShown)),
        amUrl_);
  }

 private:
  std::string amUrl_;
  std::unique_ptr<rest::HttpClient> client_;
};

Target resolve(const std::string& what, const std::string& master, const Properties& props) {
  if (isUrl(what)) {
    // A page URL as printed (http://host:port/?token=T): the token goes in a header instead.
    const size_t query = what.find("?token=");
    if (query == std::string::npos) return {what, std::nullopt, "", std::nullopt};
    return {what.substr(0, query), std::nullopt, what.substr(query + 7), std::nullopt};
  }
  if (what.rfind("application_", 0) != 0) {
    throw ConfigError("'" + what +
                      "': expected the AM's URL (http(s)://HOST:PORT/) or an application id "
                      "(application_...)");
  }
  ClusterClient cluster(master, rest::rmClientToken(props), caFileOf(props));
  const rest::ApplicationReport report = applicationReportRidingOut(
      cluster, what, [](const std::string& line) { std::cerr << "tide status: " << line << "\n"; });
  if (isFinal(report)) return {"", what, "", report};
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
  return {report.trackingUrl, what, controlToken, std::nullopt};
}

// The status of an application from its event log in history.dir (its last status, with the
// state it ended in), or nullopt when there is no log. `endedOnly`: nullopt too for a log
// without its end (the AM may still be running). Throws am::EventLogError for a log that does
// not read.
std::optional<std::string> statusFromHistory(const std::string& applicationId,
                                             const Properties& props, bool json, bool endedOnly) {
  const std::string dir = am::historyDirOf(props);
  if (dir.empty() || !validApplicationId(applicationId)) return std::nullopt;
  const std::string path = am::eventLogPath(dir, applicationId);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  const am::ReplayedApplication app = am::replayEventLog(path);
  if (endedOnly && !app.ended) return std::nullopt;
  const std::string status = am::replayedStatusDocument(app);
  if (json) return status + "\n";
  const rapidjson::Document s = rest::parseJson(status);
  std::ostringstream out;
  if (s.HasMember("allocation")) {
    rapidjson::Document d = rest::parseJson(app.last.decisions);
    auto& list = d["decisions"];
    while (list.Size() > static_cast<rapidjson::SizeType>(kDecisionsShown)) list.PopBack();
    out << renderStatus(s, d, "history " + path);
  } else {
    out << applicationId << "  " << app.state() << "  history " << path << "\n";
  }
  out << "ended      " << app.state();
  const std::string diagnostics = s["diagnostics"].GetString();
  if (!diagnostics.empty()) out << ": " << diagnostics;
  out << "\n";
  return out.str();
}

// An ended application as the RM recorded it, when there is no history of it.
std::string statusFromReport(const rest::ApplicationReport& report, const Properties& props,
                             bool json) {
  if (json) {
    JsonWriter w;
    w.startObject()
        .field("applicationId", report.id)
        .field("state", report.finalStatus)
        .field("rmState", report.state)
        .field("finalStatus", report.finalStatus)
        .field("diagnostics", report.diagnostics)
        .field("trackingUrl", report.trackingUrl)
        .endObject();
    return w.str() + "\n";
  }
  const std::string dir = am::historyDirOf(props);
  return report.id + "  " + report.state + " (" + report.finalStatus + ")" +
         (report.diagnostics.empty() ? "" : ": " + report.diagnostics) + "\n" +
         "ended      no event log in " + (dir.empty() ? "history.dir (none)" : dir) +
         "; the resource manager's record above is all there is\n";
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

// Once the application has ended: its final status, from its history or the RM.
void printFinalStatus(const std::string& applicationId, const Target& target,
                      const std::string& master, const Properties& props, bool json) {
  try {
    if (auto history = statusFromHistory(applicationId, props, json, false)) {
      std::cout << *history << std::flush;
      return;
    }
    if (target.applicationId) {
      ClusterClient cluster(master, rest::rmClientToken(props), caFileOf(props));
      std::cout << statusFromReport(cluster.application(applicationId), props, json) << std::flush;
    }
  } catch (const std::exception& e) {
    std::cerr << "tide status: no final status for " << applicationId << ": " << e.what() << "\n";
  }
}

// --watch: redraws every second until interrupted or the application ends, then prints its
// final status.
int watchStatus(StatusView& view, const Target& target, const std::string& master,
                const Properties& props, bool json) {
  struct sigaction action {};
  action.sa_handler = onStatusInterrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  bool shownOnce = false;
  std::string applicationId = target.applicationId.value_or("");
  while (!statusInterrupted) {
    std::string frame;
    try {
      if (applicationId.empty()) applicationId = view.status()["applicationId"].GetString();
      frame = json ? view.statusText() + "\n" : view.render();
    } catch (const rest::HttpError& e) {
      // The AM goes away when its application ends: that ends the watch with its final
      // status.
      if (shownOnce && (e.isTransportError() || applicationEnded(target, master, props))) {
        std::cerr << "tide status: the application master at " << target.amUrl
                  << " is gone (the application ended)\n";
        if (!applicationId.empty()) printFinalStatus(applicationId, target, master, props, json);
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
    if (applicationEnded(target, master, props)) {
      printFinalStatus(applicationId, target, master, props, json);
      return 0;
    }
    // Sleep in small steps so that Ctrl-C ends the watch at once.
    for (int i = 0; i < 20 && !statusInterrupted; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return 0;
}

}  // namespace

int runStatusCommand(int argc, char** argv) {
  CommandLine cli("tide status",
                  "Shows a running application master's allocation: bounds, target, live and "
                  "busy executors, pending tasks and the last decisions; for an application that "
                  "has ended, its final status from its event log in history.dir (or the "
                  "resource manager's record of it).");
  cli.addPositional("TARGET", "The AM's URL (http://HOST:PORT/) or an application id");
  cli.addFlag("json", "Print the status JSON (GET /api/v1/status) instead");
  cli.addFlag("watch", "Redraw every second until interrupted or the application ends");
  cli.addOption("master", "URL",
                "The resource manager to look an application id up in (default: $TIDE_MASTER, "
                "else the cluster of a `tide run` running in this directory, else "
                "http://127.0.0.1:8088)");
  cli.hideConfigKeys();
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        const MasterLocation location = resolveMaster(cli.option("master"));
        useMasterCredentials(location, cli.properties());
        const std::string master = location.url;
        const std::string what = *cli.positional("TARGET");
        const bool json = cli.flag("json");
        // An application that has ended is shown from its event log, without asking the RM
        // (the RM of a `tide run` has gone with it).
        if (!isUrl(what)) {
          if (auto history = statusFromHistory(what, cli.properties(), json, true)) {
            std::cout << *history << std::flush;
            return 0;
          }
        }
        const Target target = resolve(what, master, cli.properties());
        if (target.ended) {
          const auto history = statusFromHistory(what, cli.properties(), json, false);
          std::cout << (history ? *history
                                : statusFromReport(*target.ended, cli.properties(), json))
                    << std::flush;
          return 0;
        }
        if (target.applicationId && !target.controlToken.empty()) {
          // Once, on stderr: the page with the token that lets it change the bounds.
          std::cerr << "tide status: page " << pageUrlWithToken(target.amUrl, target.controlToken)
                    << "\n";
        }
        StatusView view(target.amUrl, target.controlToken, caFileOf(cli.properties()));
        if (!cli.flag("watch")) {
          std::cout << (json ? view.statusText() + "\n" : view.render()) << std::flush;
          return 0;
        }
        return watchStatus(view, target, master, cli.properties(), json);
      },
      "tide status");
}

}  // namespace tide::deploy
