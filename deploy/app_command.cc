// `tide app list | status APP | kill APP`: the applications of a tide-rm, as `yarn application
// -list / -status / -kill` shows and manages them. The RM is --master, else $TIDE_MASTER, else
// the embedded cluster of a `tide run` still running in this directory (master_location.h).

#include <time.h>

#include <iomanip>
#include <iostream>
#include <iterator>
#include <sstream>

#include "common/command_line.h"
#include "common/strings.h"
#include "deploy/cluster_client.h"
#include "deploy/commands.h"
#include "deploy/master_location.h"
#include "deploy/subcommands.h"
#include "rest/messages/credentials.h"
#include "rest/tls_settings.h"

namespace tide::deploy {
namespace {

constexpr char kMasterHelp[] =
    "The resource manager (default: $TIDE_MASTER, else the cluster of a `tide run` running in "
    "this directory, else http://127.0.0.1:8088)";

// The options every `tide app` subcommand has.
void addCommonOptions(CommandLine& cli) {
  cli.addOption("master", "URL", kMasterHelp);
  cli.addFlag("json", "Print the resource manager's JSON instead");
  cli.showConfigKeys({"rm.secretFile", "rm.tokenFile", "tls."});
}

ClusterClient clusterOf(CommandLine& cli) {
  const MasterLocation master = resolveMaster(cli.option("master"));
  Properties& props = cli.properties();
  useMasterCredentials(master, props);
  return ClusterClient(master.url, rest::rmClientToken(props),
                       rest::TlsSettings::fromProperties(props).caFile);
}

// "2026-12-01 10:24:14 UTC"; "-" for 0 (not yet).
std::string utcTime(int64_t epochMs) {
  if (epochMs <= 0) return "-";
  const time_t seconds = static_cast<time_t>(epochMs / 1000);
  struct tm parts {};
  gmtime_r(&seconds, &parts);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

std::string orDash(const std::string& text) {
  return text.empty() ? "-" : text;
}

void printTable(const std::vector<rest::ApplicationReport>& apps, std::ostream& out) {
  const std::vector<std::string> header = {"ID",    "NAME",    "STATE",       "FINAL",
                                           "QUEUE", "STARTED", "TRACKING URL"};
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& app : apps) {
    rows.push_back({app.id, orDash(app.name), app.state, app.finalStatus, orDash(app.queue),
                    utcTime(app.startedTime), orDash(app.trackingUrl)});
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out << row[i];
      if (i + 1 < row.size()) out << std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out << "\n";
  }
}

void printReport(const rest::ApplicationReport& app, std::ostream& out) {
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"Application-Id", app.id},
      {"Name", orDash(app.name)},
      {"Queue", orDash(app.queue)},
      {"State", app.state},
      {"Final-Status", app.finalStatus},
      {"Started", utcTime(app.startedTime)},
      {"Finished", utcTime(app.finishedTime)},
      {"Attempt", orDash(app.currentAppAttemptId)},
      {"AM-Host", orDash(app.amHostHttpAddress)},
      {"Tracking-URL", orDash(app.trackingUrl)},
      {"Running-Containers", std::to_string(app.runningContainers)},
      {"Allocated",
       std::to_string(app.allocatedMB) + " MB, " + std::to_string(app.allocatedVCores) + " vcores"},
      {"Diagnostics", orDash(app.diagnostics)},
  };
  for (const auto& [name, value] : lines) {
    out << std::left << std::setw(20) << name << ": " << value << "\n";
  }
}

int listApplications(int argc, char** argv) {
  CommandLine cli("tide app list", "Lists the applications of a resource manager.");
  addCommonOptions(cli);
  cli.addOption("state", "STATES",
                "Only applications in these states, comma-separated (NEW_SAVING, SUBMITTED, "
                "ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)");
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        std::vector<std::string> states;
        if (auto wanted = cli.option("state")) {
          std::stringstream list(*wanted);
          for (std::string state; std::getline(list, state, ',');) {
            if (!trim(state).empty()) states.push_back(toUpper(trim(state)));
          }
        }
        ClusterClient cluster = clusterOf(cli);
        const auto apps = cluster.applications(states);
        if (cli.flag("json")) {
          std::cout << rest::toJson(apps) << "\n";
        } else {
          std::cout << "Total applications: " << apps.size() << " at " << cluster.address() << "\n";
          printTable(apps, std::cout);
        }
        return 0;
      },
      "tide app list");
}

int showApplication(int argc, char** argv) {
  CommandLine cli("tide app status", "Shows one application's report from the resource manager.");
  cli.addPositional("APP", "The application id (application_...)");
  addCommonOptions(cli);
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        ClusterClient cluster = clusterOf(cli);
        const auto app = cluster.application(*cli.positional("APP"));
        if (cli.flag("json")) {
          std::cout << rest::toJson(app) << "\n";
        } else {
          printReport(app, std::cout);
        }
        return 0;
      },
      "tide app status");
}

int killApplication(int argc, char** argv) {
  CommandLine cli("tide app kill",
                  "Kills an application: its AM and executors are stopped and it ends KILLED.");
  cli.addPositional("APP", "The application id (application_...)");
  addCommonOptions(cli);
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        const std::string id = *cli.positional("APP");
        ClusterClient cluster = clusterOf(cli);
        const auto before = cluster.application(id);
        if (isFinal(before)) {
          std::cerr << "tide app kill: " << id << " has already ended: " << before.state << " ("
                    << before.finalStatus << ")\n";
          if (cli.flag("json")) std::cout << rest::toJson(before) << "\n";
          return 0;
        }
        cluster.kill(id);
        const auto after = cluster.application(id);
        if (cli.flag("json")) {
          std::cout << rest::toJson(after) << "\n";
        } else {
          std::cout << "Killed " << id << ": " << after.state << " (" << after.finalStatus << ")\n";
        }
        return 0;
      },
      "tide app kill");
}

constexpr Subcommand kSubcommands[] = {
    {"list", "List the applications (--state RUNNING,ACCEPTED to filter)", listApplications},
    {"status", "Show one application's report", showApplication},
    {"kill", "Kill an application", killApplication},
};

}  // namespace

int runAppCommand(int argc, char** argv) {
  static const SubcommandSet kApp{
      "tide app",
      "Usage: tide app <list|status|kill> [OPTIONS]\n\n"
      "Lists and manages the applications of a tide-rm (as `yarn application`).\n\n"
      "Commands:\n",
      kSubcommands,
      std::size(kSubcommands),
      10,
      false,
      ": expected list, status or kill"};
  return runSubcommand(kApp, argc, argv);
}

}  // namespace tide::deploy
