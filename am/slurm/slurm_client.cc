#include "am/slurm/slurm_client.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "common/config.h"

namespace tide::am {
namespace {

// A job missing from this many listings in a row is taken as gone (Slurm purges ended jobs
// MinJobAge, 300s by default, after their end; a job is listed from its submission on).
constexpr int kMissingPollsBeforeLost = 3;
constexpr char kContainerIdPrefix[] = "slurm-job-";
constexpr DurationMs kFirstSubmitBackoff = 1000;
constexpr DurationMs kMaxSubmitBackoff = 30000;
// Variables of the AM's environment every executor gets too: slurmrestd starts a job with
// only the environment it is given (plus Slurm's own SLURM_* variables).
constexpr const char* kInheritedVariables[] = {"PATH",   "HOME",   "LANG",
                                               "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH"};

// Each resource profile's asks are its own: jobs count against the ask of their shape.
bool sameShape(const rest::Resource& a, const rest::Resource& b) {
  return a.memoryMb == b.memoryMb && a.vCores == b.vCores;
}

std::string optional(const Properties& props, const char* key) {
  return props.getOptionalString(key).value_or("");
}

}  // namespace

SlurmBackendSettings SlurmBackendSettings::fromProperties(const Properties& props) {
  SlurmBackendSettings settings;
  settings.connection = SlurmConnection::fromProperties(props);
  settings.partition = optional(props, "slurm.partition");
  settings.account = optional(props, "slurm.account");
  settings.qos = optional(props, "slurm.qos");
  try {
    settings.timeLimitMinutes = parseSlurmTimeLimit(optional(props, "slurm.timeLimit"));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(props.describe("slurm.timeLimit") + ": " + e.what());
  }
  settings.jobNamePrefix = props.getString("slurm.jobNamePrefix");
  if (settings.jobNamePrefix.empty() ||
      settings.jobNamePrefix.find_first_of(" \t\n'\"$`\\/") != std::string::npos) {
    throw ConfigError(props.describe("slurm.jobNamePrefix") +
                      ": must be a non-empty word (no spaces, quotes or slashes)");
  }
  settings.workDir = optional(props, "slurm.workDir");
  return settings;
}

std::string slurmExecutorJobNamePrefix(const std::string& jobNamePrefix,
                                       const std::string& applicationId) {
  return jobNamePrefix + "-" + applicationId + "-exec-";
}

std::string slurmContainerId(int64_t jobId) {
  return kContainerIdPrefix + std::to_string(jobId);
}

SlurmClient::SlurmClient(SlurmBackendSettings settings, std::string applicationId,
                         std::optional<int64_t> amJobId, const Clock* clock)
    : settings_(std::move(settings)),
      applicationId_(std::move(applicationId)),
      amJobId_(amJobId),
      workDir_(settings_.workDir.empty() ? "/tmp/tide-slurm-" + applicationId_ : settings_.workDir),
      clock_(clock != nullptr ? *clock : steadyClock_) {
  slurm_ = std::make_unique<SlurmRestClient>(
      settings_.connection, [this](const std::string& line) { log_.warn() << line; });
}

SlurmClient::~SlurmClient() {
  if (unregistered_ || jobs_.empty()) return;
  try {
    cancelEverything(std::chrono::seconds(5));
  } catch (const std::exception& e) {
    log_.error() << "could not cancel the executor jobs: " << e.what();
  }
}

void SlurmClient::setExecutorTemplate(const ExecutorTemplate& executorTemplate) {
  template_ = executorTemplate;
}

rest::RegisterApplicationMasterResponse SlurmClient::registerAm(const AmEndpoint& endpoint) {
  std::filesystem::create_directories(workDir_);
  log_.info() << "executors are Slurm jobs "
              << slurmExecutorJobNamePrefix(settings_.jobNamePrefix, applicationId_) << "N"
              << (settings_.partition.empty() ? "" : " in partition " + settings_.partition)
              << " through " << slurm_->describe() << "; their logs are in " << workDir_;
  if (amJobId_) {
    // `tide status` finds the AM of a Slurm job through the job's comment.
    try {
      slurm_->setComment(*amJobId_, endpoint.trackingUrl);
    } catch (const std::exception& e) {
      log_.warn() << "could not write the status URL into Slurm job " << *amJobId_ << ": "
                  << e.what();
    }
  }
  return {};
}

void SlurmClient::launchExecutor(const rest::Container&, const ExecutorLaunch&) {}

void SlurmClient::grant(ExecutorJob& job, HeartbeatResult& result) {
  job.granted = true;
  rest::Container container;
  container.id = slurmContainerId(job.jobId);
  container.nodeId = job.node;
  container.resource = job.resource;
  result.executorIds[container.id] = job.executorId;
  result.granted.push_back(std::move(container));
}

HeartbeatResult SlurmClient::heartbeat(const ContainerAsk& ask) {
  takeReleases(ask.releases);
  const std::vector<SlurmJob> listed = slurm_->jobs();  // one listing for all of them
  HeartbeatResult result;
  // squeue says nothing of what the partition could still hold for this job's size.
  result.capacity.source = "unknown: Slurm does not say how many executor jobs its partition holds";
  followJobs(listed, result);

  // Pending jobs against what the AM still wants, for each executor shape it asks (the
  // default one and each resource profile's); the grants above are no longer wanted.
  std::vector<std::pair<rest::Resource, int>> asks{{ask.resource, ask.outstanding}};
  for (const ProfileAsk& profile : ask.profileAsks) {
    asks.emplace_back(profile.resource, profile.outstanding);
  }
  for (const auto& [resource, outstanding] : asks) {
    // A job's resource is what it was submitted with: cpus at least 1.
    const rest::Resource submitted{resource.memoryMb, std::max(1, resource.vCores)};
    const auto grantedNow =
        std::count_if(result.granted.begin(), result.granted.end(),
                      [&](const rest::Container& c) { return sameShape(c.resource, submitted); });
    matchPending(resource, submitted, std::max(0, outstanding - static_cast<int>(grantedNow)));
  }

  for (const auto& [id, job] : jobs_) {
    if (!job.granted && !job.cancelRequested) result.startingExecutors.push_back(job.executorId);
  }
  return result;
}

void SlurmClient::takeReleases(const std::vector<std::string>& releases) {
  // Kept until delivered: the AM hands each one over only once.
  for (const auto& containerId : releases) {
    for (auto& [id, job] : jobs_) {
      if (slurmContainerId(id) == containerId && !job.cancelRequested) cancelJob(job);
    }
  }
  deliverCancels();
}

std::map<int64_t, const SlurmJob*> SlurmClient::ourListedJobs(const std::vector<SlurmJob>& listed) {
  const std::string namePrefix =
      slurmExecutorJobNamePrefix(settings_.jobNamePrefix, applicationId_);
  std::map<int64_t, const SlurmJob*> ours;
  for (const auto& job : listed) {
    if (jobs_.count(job.jobId) != 0) {
      ours[job.jobId] = &job;
    } else if (job.name.rfind(namePrefix, 0) == 0 && job.phase() != SlurmJobPhase::kEnded &&
               cancelQueue_.insert(job.jobId).second) {
      // Submitted, but the answer with its id was lost (a timed-out POST): nobody waits for it.
      log_.warn() << "cancelling Slurm job " << job.jobId << " (" << job.name
                  << "): submitted by this AM without its id coming back";
    }
  }
  return ours;
}

void SlurmClient::followJobs(const std::vector<SlurmJob>& listed, HeartbeatResult& result) {
  const std::map<int64_t, const SlurmJob*> ours = ourListedJobs(listed);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    auto found = ours.find(it->first);
    const bool done = found == ours.end() ? followUnlisted(it->second, result)
                                          : followListed(it->second, *found->second, result);
    it = done ? jobs_.erase(it) : std::next(it);
  }
}

bool SlurmClient::followUnlisted(ExecutorJob& job, HeartbeatResult& result) {
  if (++job.missingPolls < kMissingPollsBeforeLost) return false;
  log_.warn() << "Slurm no longer lists job " << job.jobId << " (executor " << job.executorId
              << ")";
  if (job.granted) {
    result.completed.push_back(
        {slurmContainerId(job.jobId), rest::exit_status::kAborted, rest::container_state::kComplete,
         "Slurm job " + std::to_string(job.jobId) + " is no longer known to Slurm"});
  }
  cancelQueue_.erase(job.jobId);
  return true;
}

bool SlurmClient::followListed(ExecutorJob& job, const SlurmJob& slurmJob,
                               HeartbeatResult& result) {
  job.missingPolls = 0;
  job.phase = slurmJob.phase();
  if (!slurmJob.batchHost.empty()) job.node = slurmJob.batchHost;
  if (job.phase == SlurmJobPhase::kRunning && !job.granted && !job.cancelRequested) {
    grant(job, result);
  }
  if (job.phase != SlurmJobPhase::kEnded) return false;
  cancelQueue_.erase(job.jobId);
  // A pending request the AM took back: nobody is waiting for its end.
  if (job.cancelRequested && !job.granted) return true;
  if (!job.granted) {
    // It ended before a listing showed it running (a quick failure, or cancelled or refused
    // by Slurm while pending): granted and completed at once, so the allocator sees its exit
    // and counts a failure as it would for any executor.
    grant(job, result);
  }
  const SlurmJobEnd end = slurmJobEnd(slurmJob, job.cancelRequested);
  log_.info() << "executor " << job.executorId << ": " << end.diagnostics << " (exit "
              << end.exitStatus << ")";
  result.completed.push_back({slurmContainerId(job.jobId), end.exitStatus,
                              rest::container_state::kComplete, end.diagnostics});
  return true;
}

void SlurmClient::matchPending(const rest::Resource& resource, const rest::Resource& submitted,
                               int wanted) {
  std::vector<ExecutorJob*> pending;
  for (auto& [id, job] : jobs_) {
    if (job.phase == SlurmJobPhase::kPending && !job.granted && !job.cancelRequested &&
        sameShape(job.resource, submitted)) {
      pending.push_back(&job);
    }
  }
  const int pendingCount = static_cast<int>(pending.size());
  if (pendingCount > wanted) {
    // The newest first: the oldest are nearest the front of Slurm's queue.
    for (int i = pendingCount - 1; i >= wanted; --i) {
      log_.info() << "cancelling pending Slurm job " << pending[i]->jobId << " (executor "
                  << pending[i]->executorId << "): " << wanted << " pending wanted";
      cancelJob(*pending[i]);
    }
    deliverCancels();
  } else if (pendingCount < wanted) {
    submitExecutors(wanted - pendingCount, resource);
  }
}

void SlurmClient::submitExecutors(int count, const rest::Resource& resource) {
  if (rejected_ || clock_.nowMs() < submitNotBefore_) return;
  std::vector<std::pair<std::string, std::string>> environment;
  for (const char* name : kInheritedVariables) {
    if (const char* value = std::getenv(name)) environment.emplace_back(name, value);
  }
  environment.insert(environment.end(), template_.environment.begin(), template_.environment.end());
  for (int i = 0; i < count; ++i) {
    const int number = nextExecutorNumber_;
    const std::string executorId = "e" + std::to_string(number);
    SlurmJobSpec spec;
    spec.name = slurmExecutorJobNamePrefix(settings_.jobNamePrefix, applicationId_) +
                std::to_string(number);
    spec.partition = settings_.partition;
    spec.account = settings_.account;
    spec.qos = settings_.qos;
    spec.timeLimitMinutes = settings_.timeLimitMinutes;
    spec.cpusPerTask = std::max(1, resource.vCores);
    spec.memoryPerNodeMiB = resource.memoryMb;
    spec.workingDirectory = workDir_;
    // Without standard_error Slurm writes both streams into this one file.
    spec.standardOutput = workDir_ + "/exec-" + std::to_string(number) + "-%j.log";
    spec.environment = environment;
    spec.environment.emplace_back("TIDE_EXECUTOR_ID", executorId);
    // The container id names the job, known only once it runs; `exec` makes tide-executor's
    // exit status the job's.
    spec.script = "#!/bin/sh\n# tide executor " + executorId + " of " + applicationId_ +
                  "\nexport TIDE_CONTAINER_ID=\"" + kContainerIdPrefix + "$SLURM_JOB_ID\"\n" +
                  withExecutorCores(template_.command, spec.cpusPerTask) + "\n";
    int64_t jobId = 0;
    try {
      jobId = slurm_->submit(spec);
    } catch (const SlurmRejected& e) {
      rejected_ = true;
      throw ResourceManagerRejected(e.what());
    } catch (const SlurmUnavailable& e) {
      submitBackoff_ =
          std::min(kMaxSubmitBackoff, std::max(kFirstSubmitBackoff, submitBackoff_ * 2));
      submitNotBefore_ = clock_.nowMs() + submitBackoff_;
      log_.warn() << "could not submit executor job " << spec.name << " (trying again in "
                  << submitBackoff_ << " ms): " << e.what();
      return;
    }
    submitBackoff_ = 0;
    ++nextExecutorNumber_;
    ExecutorJob job;
    job.jobId = jobId;
    job.executorId = executorId;
    job.resource = {resource.memoryMb, spec.cpusPerTask};
    jobs_[jobId] = job;
    log_.info() << "submitted Slurm job " << jobId << " (" << spec.name << ") for executor "
                << executorId;
  }
}

void SlurmClient::cancelJob(ExecutorJob& job) {
  job.cancelRequested = true;
  cancelQueue_.insert(job.jobId);
}

void SlurmClient::deliverCancels() {
  for (auto it = cancelQueue_.begin(); it != cancelQueue_.end();) {
    try {
      slurm_->cancel(*it);  // false: already ended, which is as good
      it = cancelQueue_.erase(it);
    } catch (const SlurmUnavailable& e) {
      log_.warn() << "could not cancel Slurm job " << *it << " (trying again): " << e.what();
      ++it;
    }
  }
}

void SlurmClient::cancelEverything(std::chrono::milliseconds bound) {
  for (auto& [id, job] : jobs_) {
    if (job.phase != SlurmJobPhase::kEnded) cancelJob(job);
  }
  deliverCancels();
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    std::vector<int64_t> live;
    try {
      for (const auto& listed : slurm_->jobs()) {
        const bool ours =
            jobs_.count(listed.jobId) != 0 ||
            listed.name.rfind(slurmExecutorJobNamePrefix(settings_.jobNamePrefix, applicationId_),
                              0) == 0;
        if (ours && listed.phase() != SlurmJobPhase::kEnded) {
          live.push_back(listed.jobId);
        }
      }
    } catch (const SlurmUnavailable& e) {
      log_.warn() << "could not list jobs to check they ended: " << e.what();
    }
    if (live.empty() && cancelQueue_.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string ids;
      for (int64_t id : live) ids += (ids.empty() ? "" : " ") + std::to_string(id);
      log_.warn() << "Slurm jobs still ending after cancellation: " << ids;
      return;
    }
    // A job still PENDING or RUNNING after its cancel (it started meanwhile): again.
    for (int64_t id : live) cancelQueue_.insert(id);
    deliverCancels();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void SlurmClient::unregister(const std::string& finalStatus, const std::string& diagnostics) {
  unregistered_ = true;
  cancelEverything(std::chrono::seconds(20));
  jobs_.clear();
  if (amJobId_) {
    std::string comment = finalStatus + (diagnostics.empty() ? "" : ": " + diagnostics);
    if (comment.size() > 500) comment = comment.substr(0, 500) + "...";
    try {
      slurm_->setComment(*amJobId_, comment);
    } catch (const std::exception& e) {
      log_.warn() << "could not write the final status into Slurm job " << *amJobId_ << ": "
                  << e.what();
    }
  }
}

}  // namespace tide::am
