#pragma once

// Handing an ApplicationMaster to tide-rm (YARN's cluster mode) and following it: shared by
// `tide run` (on its embedded cluster) and `tide submit` (on a running tide-rm).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "deploy/cluster_client.h"

namespace tide::deploy {

struct AmSubmission {
  std::string jobFile;  // absolute path
  std::string jobName;
  std::optional<std::string> propertiesFile;              // absolute path
  std::vector<std::pair<std::string, std::string>> conf;  // --conf pairs for the AM
  bool session = false;
  std::optional<std::string> reportFile;
  std::string binDir;  // where tide-am is
};

// Checks the job file and the whole configuration the AM will read, so that mistakes are
// reported before anything starts: throws ConfigError naming the field or key (exit status 2).
// Warnings (an unknown key with the nearest known one, initialExecutors below minExecutors) are
// printed to stderr; with `strictConf` (`--strict-conf`) they are errors.
void checkBeforeSubmitting(const std::string& jobFile, const Properties& props,
                           std::string* jobName, bool strictConf = false,
                           std::string* jobOutput = nullptr);

// Spark's check against the cluster's maximum allocation (from new-application): an executor
// or AM container larger than every node could never be granted. Throws ConfigError naming
// the key, the value asked and the largest node's (exit status 2). No check without nodes.
void checkAgainstLargestNode(const rest::Resource& largest, const Properties& props);

// The --conf pairs given on this command line (not those from the file), to pass on.
std::vector<std::pair<std::string, std::string>> commandLineConf(const Properties& props);

// Submits the AM; returns the application id. `controlToken` (when given) receives the
// application's control token, derived from the secret made here.
std::string submitApplicationMaster(ClusterClient& cluster, const AmSubmission& submission,
                                    const Properties& props, std::string* controlToken = nullptr);

struct FollowOptions {
  bool progress = false;              // a live line on stderr (for a terminal)
  std::function<bool()> interrupted;  // true once: the app is killed, then followed to its end
  // When set, the AM's page URL with this control token is printed (stderr) once known.
  std::string controlToken;
  // Sent with the progress line's reads of the AM (needed with ui.auth=all).
  std::string statusToken;
  // When set, receives the last AM status (GET api/v1/status) seen, for the summary.
  std::string* lastStatusJson = nullptr;
};

// Follows the application until it ends; returns its last report.
rest::ApplicationReport followApplication(ClusterClient& cluster, const std::string& applicationId,
                                          const FollowOptions& options);

// Where a run's summary gets its numbers and what it points to.
struct SummarySources {
  std::string amReportJson;    // the AM's --report (exact), or else
  std::string lastStatusJson;  // the last AM status seen while following (may lag the end)
  std::string output;          // the job's output directory, if it has one
  std::string logs;            // where the containers' logs are (or why they are not kept)
};

// The lines printed after an application ended: final status, tasks, peak and launched
// executors, executor-seconds, output and logs. Each line starts with two spaces.
std::string formatRunSummary(const rest::ApplicationReport& report, const SummarySources& sources);

// Exit status for a finished application: 0 only when it succeeded.
int exitStatusOf(const rest::ApplicationReport& report);

}  // namespace tide::deploy
