// tide-am: the ApplicationMaster. Started by a resource manager in a container, with the
// attempt's identity in its environment; runs one job (or, with --session, any number).
//
//   tide-am [--properties-file F] [--conf k=v]... --job FILE [--session] [--report FILE]

#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "am/application_master.h"
#include "am/bounds_reload.h"
#include "am/config.h"
#include "am/containers/tide_rm_client.h"
#include "am/scheduler/job.h"
#include "am/slurm/slurm_client.h"
#include "common/child_process.h"
#include "common/command_line.h"
#include "common/config.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "common/process_memory.h"

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    throw tide::ConfigError(std::string("environment variable ") + name +
                            " is not set: tide-am is started by a resource manager (tide submit)");
  }
  return value;
}

std::optional<tide::am::Job> readJob(const tide::CommandLine& cli, bool session) {
  if (auto path = cli.option("job")) {
    try {
      return tide::am::loadJobFile(*path);
    } catch (const tide::am::JobError& e) {
      throw tide::ConfigError(e.what());
    }
  } else if (!session) {
    throw tide::ConfigError("--job FILE is required (or --session)");
  }
  return std::nullopt;
}

// am.resourceManager: true for "slurm", false for "tide".
bool runsOnSlurm(const tide::Properties& properties) {
  const std::string resourceManager = properties.getString("am.resourceManager");
  if (resourceManager != "tide" && resourceManager != "slurm") {
    throw tide::ConfigError(properties.describe("am.resourceManager") +
                            ": expected 'tide' or 'slurm'");
  }
  return resourceManager == "slurm";
}

tide::am::AmIdentity identityFromEnvironment(bool onSlurm) {
  const std::string applicationId = environment("TIDE_APPLICATION_ID");
  // Slurm has no application attempts: one AM per application.
  const char* attempt = std::getenv("TIDE_APP_ATTEMPT_ID");
  return tide::am::AmIdentity{
      applicationId,
      onSlurm && (attempt == nullptr || *attempt == '\0') ? applicationId + "-attempt-1"
                                                          : environment("TIDE_APP_ATTEMPT_ID"),
      environment("TIDE_APP_SECRET"), tide::selfDirectory() + "/tide-executor"};
}

std::unique_ptr<tide::am::ResourceManagerClient> slurmClient(const tide::Properties& properties,
                                                             const std::string& applicationId) {
  // Set by the job script of `tide submit --master slurm+...`: the AM's own Slurm job.
  std::optional<int64_t> amJob;
  if (const char* id = std::getenv("TIDE_SLURM_AM_JOB_ID"); id != nullptr && *id != '\0')
    amJob = std::stoll(id);
  return std::make_unique<tide::am::SlurmClient>(
      tide::am::SlurmBackendSettings::fromProperties(properties), applicationId, amJob);
}

std::unique_ptr<tide::am::ResourceManagerClient> tideRmClient(const tide::rest::TlsSettings& tls) {
  return std::make_unique<tide::am::TideRmClient>(
      tide::am::TideRmAttempt{environment("TIDE_RM_ADDRESS"), environment("TIDE_APP_ATTEMPT_ID"),
                              environment("TIDE_AM_TOKEN")},
      tls);
}

int runAm(const tide::CommandLine& cli) {
  using namespace tide;
  initLogging(cli.properties());
  warnUnknownKeys(cli.properties());
  Logger log("am");
  std::vector<std::string> warnings;
  am::AmConfig config = am::AmConfig::fromProperties(cli.properties(), &warnings);
  for (const auto& w : warnings) log.warn() << w;
  config.session = cli.flag("session");
  config.reportFile = cli.option("report").value_or("");
  std::optional<am::Job> job = readJob(cli, config.session);
  const bool onSlurm = runsOnSlurm(cli.properties());
  const am::AmIdentity identity = identityFromEnvironment(onSlurm);
  std::unique_ptr<am::ResourceManagerClient> rm;
  if (onSlurm) rm = slurmClient(cli.properties(), identity.applicationId);

  // SIGHUP re-reads the properties file (with the --conf values on top) for new bounds.
  am::BoundsReloader reloader = am::BoundsReloader::fromCommandLine(
      cli.propertiesFile(), cli.properties(), config.allocation.bounds);

  // Signals are taken by one thread (sigwait), so the others never see them; SIGUSR2 ends that
  // thread.
  const sigset_t stopSignals = blockSignals({SIGTERM, SIGINT, SIGHUP, SIGUSR2});

  if (!rm) rm = tideRmClient(config.tls);
  am::ApplicationMaster master(std::move(config), identity, std::move(rm));
  master.start();
  // A new attempt of an application whose earlier attempt accepted the job has it back from the
  // recovery journal, with what was done of it.
  if (job && master.recoveredJobs() == 0) master.submitJob(std::move(*job));

  // Declared after the master, so that it is gone (joined) before the master is.
  const SignalThread stopOnSignal(stopSignals, SIGUSR2, [&](int signal) {
    if (signal == SIGHUP) {
      (void)reloader.reload(master);  // it logs what happened
      return true;
    }
    master.requestStop("KILLED", std::string("stopped by signal ") + strsignal(signal));
    return false;
  });

  const am::AmOutcome outcome = master.run();
  return outcome.finalStatus == "SUCCEEDED" ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tide;
  // The AM runs for as long as its application, through journal compactions and status
  // documents megabytes large, on threads that come and go: what it frees goes back, and no
  // thread keeps a cache of it (bench/README.md, "Scale").
  restartWithoutMallocThreadCaches(argv);
  keepMallocFromHoardingFreedMemory();
  CommandLine cli("tide-am", "Runs a job's tasks on executors it rents from a resource manager.");
  cli.addOption("job", "FILE", "The job to run (JSON)");
  cli.addFlag("session", "Stay up after the job and accept more at POST /api/v1/jobs");
  cli.addOption("report", "FILE", "Write a JSON summary of the run here at the end");
  return parseAndRun(
      cli, argc, argv, [&]() -> int { return runAm(cli); }, "tide-am");
}
