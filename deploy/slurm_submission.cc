#include "deploy/slurm_submission.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "am/slurm/slurm_client.h"
#include "deploy/cluster_client.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::deploy {
namespace {

constexpr char kSlurmScheme[] = "slurm+";
constexpr char kApplicationPrefix[] = "slurm-";
// Passed on to the AM's job: slurmrestd starts it with only the environment it is given.
constexpr const char* kInheritedVariables[] = {"PATH",   "HOME",   "LANG",
                                               "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH"};

// A job name Slurm and a shell both take as is.
std::string nameWord(const std::string& text) {
  std::string word;
  for (char c : text) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    word += plain ? c : '_';
  }
  return word.empty() ? "job" : word.substr(0, 64);
}

}  // namespace

std::optional<std::string> slurmUrlOfMaster(const std::string& master) {
  if (master.rfind(kSlurmScheme, 0) != 0) return std::nullopt;
  return master.substr(sizeof(kSlurmScheme) - 1);
}

std::optional<int64_t> slurmJobIdOfApplication(const std::string& applicationId) {
  if (applicationId.rfind(kApplicationPrefix, 0) != 0) return std::nullopt;
  const std::string digits = applicationId.substr(sizeof(kApplicationPrefix) - 1);
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

std::string slurmApplicationId(int64_t jobId) {
  return kApplicationPrefix + std::to_string(jobId);
}

int64_t submitApplicationMasterToSlurm(am::SlurmRestClient& slurm, const AmSubmission& submission,
                                       const Properties& props, std::string* controlToken) {
  const am::SlurmBackendSettings settings = am::SlurmBackendSettings::fromProperties(props);
  std::string command = "exec " + shellQuote(submission.binDir + "/tide-am") + " --job " +
                        shellQuote(submission.jobFile);
  if (submission.propertiesFile) {
    command += " --properties-file " + shellQuote(*submission.propertiesFile);
  }
  // Several AMs may share a node: an ephemeral status port unless one is asked for.
  if (!props.has("ui.port")) command += " --conf ui.port=0";
  for (const auto& [key, value] : submission.conf)
    command += " --conf " + shellQuote(key + "=" + value);
  // Last, so that nothing above overrides where the executors come from.
  command += " --conf am.resourceManager=slurm --conf " +
             shellQuote("slurm.url=" + slurm.connection().url);
  if (submission.session) command += " --session";
  if (submission.reportFile) command += " --report " + shellQuote(*submission.reportFile);

  am::SlurmJobSpec spec;
  spec.name = settings.jobNamePrefix + "-am-" + nameWord(submission.jobName);
  spec.partition = settings.partition;
  spec.account = settings.account;
  spec.qos = settings.qos;
  spec.timeLimitMinutes = settings.timeLimitMinutes;
  spec.cpusPerTask = static_cast<int>(props.getInt("am.cores"));
  spec.memoryPerNodeMiB = props.getSizeBytes("am.memory") / (1024 * 1024);
  // Like sbatch: the job runs, and writes its log, where it was submitted from, unless
  // slurm.workDir names a directory for it.
  const std::string directory =
      settings.workDir.empty() ? std::filesystem::current_path().string() : settings.workDir;
  // Slurm fails a job whose log file it cannot open; on a cluster this is a shared directory.
  std::error_code ignored;
  std::filesystem::create_directories(directory, ignored);
  spec.workingDirectory = directory;
  spec.standardOutput = directory + "/tide-am-%j.log";
  for (const char* name : kInheritedVariables) {
    if (const char* value = std::getenv(name)) spec.environment.emplace_back(name, value);
  }
  // Secrets travel in the job's environment, never in its script or on a command line.
  const std::string secret = rest::newRandomSecret();
  spec.environment.emplace_back("TIDE_APP_SECRET", secret);
  if (controlToken != nullptr) *controlToken = rest::controlTokenOf(secret);
  if (settings.connection.tokenFile.empty()) {
    if (const char* token = std::getenv("SLURM_JWT"); token != nullptr && *token != '\0') {
      spec.environment.emplace_back("SLURM_JWT", token);
    }
  }
  spec.script = std::string("#!/bin/sh\n# tide application master for ") +
                nameWord(submission.jobName) + "\nexport TIDE_APPLICATION_ID=\"" +
                kApplicationPrefix +
                "$SLURM_JOB_ID\"\n"
                "export TIDE_SLURM_AM_JOB_ID=\"$SLURM_JOB_ID\"\n" +
                command + "\n";
  return slurm.submit(spec);
}

int followSlurmApplicationMaster(am::SlurmRestClient& slurm, int64_t jobId,
                                 const SlurmFollowOptions& options) {
  const std::string appId = slurmApplicationId(jobId);
  bool cancelled = false;
  std::string lastState;
  std::string lastComment;
  int missing = 0;
  while (true) {
    // Slurm sends the AM SIGTERM: it ends KILLED and cancels its executors itself.
    stopOnInterrupt(options.interrupted, cancelled, appId, "cancelling", "cancel",
                    [&] { slurm.cancel(jobId); });
    std::optional<am::SlurmJob> job;
    try {
      job = slurm.job(jobId);
    } catch (const am::SlurmUnavailable& e) {
      std::cerr << "tide: " << e.what() << " (trying again)\n";
    }
    if (job) {
      missing = 0;
      if (job->state != lastState) {
        std::cerr << "tide: " << appId << " " << job->state;
        if (job->phase() == am::SlurmJobPhase::kPending && !job->stateReason.empty())
          std::cerr << " (" << job->stateReason << ")";
        if (!job->batchHost.empty()) std::cerr << " on " << job->batchHost;
        std::cerr << "\n";
        lastState = job->state;
      }
      if (job->comment != lastComment && job->phase() != am::SlurmJobPhase::kEnded &&
          job->comment.rfind("http", 0) == 0) {
        std::cerr << "tide: status at "
                  << (options.controlToken.empty()
                          ? job->comment
                          : pageUrlWithToken(job->comment, options.controlToken))
                  << "\n";
      }
      lastComment = job->comment;
      if (job->phase() == am::SlurmJobPhase::kEnded) {
        const int code = am::exitCodeOfWaitStatus(job->exitCode);
        const bool succeeded = job->state == "COMPLETED" && code == 0;
        // The AM leaves "FINALSTATUS: diagnostics" in the comment as it ends.
        std::string outcome = job->comment.rfind("http", 0) == 0 ? "" : job->comment;
        if (outcome.empty()) outcome = succeeded ? "SUCCEEDED" : "FAILED";
        std::cerr << "tide: " << appId << " " << job->state << " (exit " << code << "): " << outcome
                  << "\n";
        return succeeded ? 0 : 1;
      }
    } else if (++missing >= 5) {
      std::cerr << "tide: Slurm no longer knows " << appId << "\n";
      return 1;
    }
    std::this_thread::sleep_for(options.pollInterval);
  }
}

std::optional<std::string> slurmTrackingUrl(int64_t jobId, const am::SlurmConnection& options) {
  am::SlurmRestClient slurm(options);
  std::optional<am::SlurmJob> job = slurm.job(jobId);
  if (!job || job->phase() == am::SlurmJobPhase::kEnded) return std::nullopt;
  if (job->comment.rfind("http://", 0) != 0 && job->comment.rfind("https://", 0) != 0) {
    return std::nullopt;
  }
  return job->comment;
}

int runSlurmSubmit(const std::string& slurmUrl, const AmSubmission& submission, Properties& props,
                   bool wait, const std::function<bool()>& interrupted) {
  props.set("slurm.url", slurmUrl);
  am::SlurmRestClient slurm(am::SlurmConnection::fromProperties(props),
                            [](const std::string& line) { std::cerr << "tide: " << line << "\n"; });
  int64_t jobId = 0;
  std::string controlToken;
  try {
    jobId = submitApplicationMasterToSlurm(slurm, submission, props, &controlToken);
  } catch (const am::SlurmRejected& e) {
    std::cerr << "tide: " << e.what() << "\n";
    return 1;
  }
  std::cout << slurmApplicationId(jobId) << std::endl;
  if (!wait) return 0;
  SlurmFollowOptions follow;
  follow.interrupted = interrupted;
  follow.controlToken = controlToken;
  return followSlurmApplicationMaster(slurm, jobId, follow);
}

}  // namespace tide::deploy
