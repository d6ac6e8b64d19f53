// `tide run JOB`: the first thing a newcomer types. Starts an embedded tide-rm with one local
// tide-nm, submits the ApplicationMaster to it, follows the job and exits 0 only if it
// succeeded.

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "common/command_line.h"
#include "deploy/am_submission.h"
#include "deploy/commands.h"
#include "deploy/embedded_cluster.h"
#include "deploy/master_location.h"
#include "deploy/slurm_submission.h"
#include "rest/messages/credentials.h"
#include "rest/tls_settings.h"

namespace tide::deploy {
namespace {

std::atomic<bool> interruptedFlag{false};
void onInterrupt(int) {
  interruptedFlag = true;
}

// Ctrl-C (and `signals`) no longer end this process: they ask for the application to be
// killed, and the command goes on following it to its end.
void interceptInterrupts(std::initializer_list<int> signals) {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  for (int sig : signals) sigaction(sig, &action, nullptr);
}

// Follows the application to its end, with a progress line on a terminal, and says how it
// ended: its diagnostics, then a summary. `reportFile`: the AM's --report, when it is
// readable here; `sources` says where the output and the logs are.
rest::ApplicationReport followAndReport(ClusterClient& client, const std::string& appId,
                                        const std::string& controlToken,
                                        const std::optional<std::string>& reportFile,
                                        SummarySources sources) {
  FollowOptions follow;
  follow.controlToken = controlToken;
  follow.statusToken = controlToken;
  follow.progress = isatty(STDERR_FILENO) != 0;
  follow.interrupted = [] { return interruptedFlag.load(); };
  follow.lastStatusJson = &sources.lastStatusJson;
  const rest::ApplicationReport report = followApplication(client, appId, follow);
  std::cerr << "tide: " << appId << " " << report.state << " (" << report.finalStatus << ")"
            << (report.diagnostics.empty() ? "" : ": " + report.diagnostics) << "\n";
  if (reportFile) {
    std::ifstream in(*reportFile);
    std::stringstream text;
    text << in.rdbuf();
    sources.amReportJson = text.str();
  }
  std::cerr << formatRunSummary(report, sources);
  return report;
}

// `tide run` starts tide-rm and tide-nm, which start tide-am and tide-executor, all from the
// directory `tide` is in: a missing one is named before anything starts.
void checkSiblingBinaries(const std::string& binDir) {
  std::vector<std::string> missing;
  for (const char* name : {"tide-rm", "tide-nm", "tide-am", "tide-executor"}) {
    if (::access((binDir + "/" + name).c_str(), X_OK) != 0) missing.push_back(name);
  }
  if (missing.empty()) return;
  std::string names;
  for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
  throw std::runtime_error("cannot run: " + names + (missing.size() == 1 ? " is" : " are") +
                           " missing from " + binDir +
                           " (tide run needs tide-rm, tide-nm, tide-am and tide-executor next to "
                           "tide)");
}

constexpr char kStrictConfHelp[] =
    "Make configuration warnings (an unknown key, ...) errors: exit 2 before submitting";

std::string absolute(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

// tls.* paths given here reach the AM, whose container runs in another directory: a relative
// one is made absolute and passed on as a --conf (over the properties file's).
void makeTlsPathsAbsolute(Properties& props) {
  for (const char* key : {"tls.certFile", "tls.keyFile", "tls.caFile"}) {
    const auto entry = props.entry(key);
    if (entry && !std::filesystem::path(entry->value).is_absolute()) {
      props.set(key, absolute(entry->value));
    }
  }
}

// The job file (JOB) of `tide run` and `tide submit`, checked as the AM will read it: a bad job,
// or a configuration warning with --strict-conf, exits before anything starts.
struct CheckedJob {
  std::string file;  // absolute
  std::string name;
  std::string output;  // where its results go, for the summary
};

CheckedJob checkJobOf(const CommandLine& cli, const Properties& props) {
  CheckedJob job;
  job.file = absolute(*cli.positional("JOB"));
  checkBeforeSubmitting(job.file, props, &job.name, cli.flag("strict-conf"), &job.output);
  return job;
}

// What both commands submit: the job, the properties file and the --conf pairs as `props` holds
// them now, and the binaries next to this one.
AmSubmission submissionOf(const CheckedJob& job, const CommandLine& cli, const Properties& props) {
  AmSubmission submission;
  submission.jobFile = job.file;
  submission.jobName = job.name;
  if (cli.propertiesFile()) submission.propertiesFile = absolute(*cli.propertiesFile());
  submission.conf = commandLineConf(props);
  submission.binDir = selfDirectory();
  return submission;
}

// --work-dir, or a new directory under $TMPDIR.
std::string runWorkDir(const std::optional<std::string>& option) {
  if (option) return absolute(*option);
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tide-run-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create " + pattern);
  return pattern;
}

// The node's logs outlive the run (and its work dir): `tide logs APP` here reads them once the
// cluster is gone. Sets nm.logDir unless it is set.
void keepLogsOutsideWorkDir(Properties& props, const std::string& workDir) {
  if (props.has("nm.logDir")) return;
  std::error_code unwritable;
  std::filesystem::create_directories(kEmbeddedLogDir, unwritable);
  if (unwritable) {
    std::cerr << "tide: warning: cannot create " << absolute(kEmbeddedLogDir) << " ("
              << unwritable.message() << "): the logs stay in " << workDir
              << "/logs, removed if the job succeeds\n";
    props.set("nm.logDir", workDir + "/logs");
  } else {
    // The logs are private: only this user may read them (as .tide's pointer file).
    ::chmod(std::filesystem::path(kEmbeddedLogDir).parent_path().c_str(), 0700);
    props.set("nm.logDir", absolute(kEmbeddedLogDir));
  }
}

// One node; the nm.*, rm.* and log.* properties go to the daemons they are for.
EmbeddedClusterOptions embeddedClusterOptionsOf(const Properties& props, const std::string& workDir,
                                                const rest::TlsSettings& tls) {
  EmbeddedClusterOptions options;
  options.workDir = workDir;
  options.nodes = 1;
  options.tls = tls;
  for (const auto& [key, entry] : props.entries()) {
    if (key.rfind("nm.", 0) == 0) options.nmConf.emplace_back(key, entry.value);
    if (key.rfind("rm.", 0) == 0) options.rmConf.emplace_back(key, entry.value);
    if (key.rfind("log.", 0) == 0) {
      options.nmConf.emplace_back(key, entry.value);
      options.rmConf.emplace_back(key, entry.value);
    }
  }
  return options;
}

}  // namespace

int runRunCommand(int argc, char** argv) {
  CommandLine cli("tide run",
                  "Runs a job on this machine: an embedded resource manager and node manager, "
                  "and the application master, which grows and shrinks the job's executors.");
  cli.addPositional("JOB", "The job file (JSON)");
  cli.addOption("report", "FILE", "Write a JSON summary of the run to FILE");
  cli.addOption("work-dir", "DIR",
                "Where the cluster keeps logs and containers (default: a new "
                "directory under $TMPDIR)");
  cli.addOption("keep-alive", "DURATION",
                "Keep the application up this long after the job ends, so that its idle "
                "executors are seen going (e.g. 30s; sets am.keepAlive)");
  cli.addFlag("strict-conf", kStrictConfHelp);
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        Properties& props = cli.properties();
        if (auto keepAlive = cli.option("keep-alive")) {
          props.set("am.keepAlive", *keepAlive);
          props.getDuration("am.keepAlive");  // a bad duration is named here, not in the AM
        }
        makeTlsPathsAbsolute(props);
        // The status port of an embedded run is whatever is free, unless asked for.
        if (!props.has("ui.port")) props.set("ui.port", "0");
        // The AM mostly waits; on one machine its container should not cost the executors a
        // core, so the local node offers this machine's cores plus the AM's.
        if (!props.has("nm.cores")) {
          const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
          props.set("nm.cores", std::to_string(cores + props.getInt("am.cores")));
        }
        const CheckedJob job = checkJobOf(cli, props);
        checkSiblingBinaries(selfDirectory());
        // tls.*: the embedded tide-rm and tide-nm serve HTTPS, and with them the AM and its
        // executors (in the node's containers); this command verifies them against tls.caFile.
        const rest::TlsSettings tls = rest::TlsSettings::fromProperties(props);

        const std::string workDir = runWorkDir(cli.option("work-dir"));
        keepLogsOutsideWorkDir(props, workDir);
        const EmbeddedClusterOptions options = embeddedClusterOptionsOf(props, workDir, tls);
        std::cerr << "tide: starting an embedded cluster in " << workDir << "\n";
        EmbeddedCluster cluster(options);
        // `tide app` and `tide status` run here find this cluster while it runs.
        const EmbeddedClusterPointer pointer(".", cluster.rmAddress(), cluster.secretFile(),
                                             std::cerr);

        AmSubmission submission = submissionOf(job, cli, props);
        // The summary at the end reads the AM's report: one in the work dir unless asked for.
        submission.reportFile =
            cli.option("report") ? absolute(*cli.option("report")) : workDir + "/report.json";
        ClusterClient client(cluster.rmAddress(), cluster.adminToken(), tls.caFile);
        std::string controlToken;
        const std::string appId = submitApplicationMaster(client, submission, props, &controlToken);
        std::cerr << "tide: submitted " << appId << " (" << job.name << ")\n";

        interceptInterrupts({SIGINT, SIGTERM});
        SummarySources sources;
        sources.output = job.output;
        sources.logs = "`tide logs " + appId + "` in this directory (kept in " +
                       props.getString("nm.logDir") + "/" + appId + ")";
        const int status = exitStatusOf(
            followAndReport(client, appId, controlToken, submission.reportFile, sources));
        if (status != 0) std::cerr << "tide: the cluster's own logs are in " << workDir << "\n";
        cluster.stop();
        if (status == 0 && !cli.option("work-dir")) std::filesystem::remove_all(workDir);
        return status;
      },
      "tide run");
}

int runSubmitCommand(int argc, char** argv) {
  CommandLine cli("tide submit",
                  "Submits a job's application master to a running tide-rm (YARN's cluster "
                  "mode) and prints its application id.");
  cli.addPositional("JOB", "The job file (JSON); it must be readable where the AM runs");
  cli.addOption("master", "URL",
                "The resource manager: tide-rm at http://HOST:8088 (https:// with TLS), or Slurm's "
                "slurmrestd at "
                "slurm+http://HOST:6820 (or slurm+unix:/path/to/socket)");
  cli.addFlag("wait", "Follow the application and exit with its final status");
  cli.addFlag("session", "Keep the AM up after the job to accept more jobs");
  cli.addFlag("strict-conf", kStrictConfHelp);
  return parseAndRun(
      cli, argc, argv,
      [&]() -> int {
        Properties& props = cli.properties();
        auto master = cli.option("master");
        if (!master) throw ConfigError("--master URL is required (e.g. http://127.0.0.1:8088)");
        const std::optional<std::string> slurmUrl = slurmUrlOfMaster(*master);
        makeTlsPathsAbsolute(props);
        if (master->rfind("http://", 0) != 0 && master->rfind("https://", 0) != 0 && !slurmUrl) {
          throw ConfigError("--master " + *master +
                            ": expected http://HOST:PORT, https://HOST:PORT or "
                            "slurm+http://HOST:PORT");
        }
        const CheckedJob job = checkJobOf(cli, props);
        AmSubmission submission = submissionOf(job, cli, props);
        submission.session = cli.flag("session");
        if (slurmUrl) {
          interceptInterrupts({SIGINT});
          return runSlurmSubmit(*slurmUrl, submission, props, cli.flag("wait"),
                                [] { return interruptedFlag.load(); });
        }
        // This command's tls.* are for its own connections: on tide-rm the AM takes its node's
        // TLS files from its container (the paths here may not exist there).
        submission.conf.erase(
            std::remove_if(submission.conf.begin(), submission.conf.end(),
                           [](const auto& pair) { return pair.first.rfind("tls.", 0) == 0; }),
            submission.conf.end());
        ClusterClient client(*master, rest::rmClientToken(props),
                             rest::TlsSettings::fromProperties(props).caFile);
        std::string controlToken;
        const std::string appId = submitApplicationMaster(client, submission, props, &controlToken);
        std::cout << appId << std::endl;
        if (!cli.flag("wait")) {
          std::cerr << "tide: `tide status " << appId << " --master " << *master
                    << "` prints its status page's URL with the control token\n";
          return 0;
        }
        interceptInterrupts({SIGINT});
        SummarySources sources;
        sources.output = job.output;
        sources.logs = "`tide logs " + appId + " --master " + *master + "`";
        return exitStatusOf(followAndReport(client, appId, controlToken, std::nullopt, sources));
      },
      "tide submit");
}

}  // namespace tide::deploy
