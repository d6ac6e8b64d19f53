#pragma once

// The AM's executors as Slurm batch jobs, through slurmrestd (am.resourceManager=slurm).
//
// Each executor is one job named <slurm.jobNamePrefix>-<appId>-exec-<n> whose script execs
// tide-executor; the executor's id (e<n>) is chosen at submission and reaches it, with the app
// secret, through the job's environment (never the script text). One GET .../jobs per
// heartbeat tells the state of all of them: a PENDING job is a pending container request, a
// RUNNING one a granted container (reported once, with its executor id), a final state a
// completed container whose exit status is classified like tide-rm's (am/slurm/json.h). The ask's
// `outstanding` is reconciled against the PENDING jobs: more are submitted, or the newest
// PENDING ones cancelled; a running executor is only cancelled when the AM releases it.
// unregister cancels every job the AM started and waits (bounded) until none is left.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "am/containers/resource_manager_client.h"
#include "am/slurm/rest_client.h"
#include "common/clock.h"
#include "common/logging.h"

namespace tide {
class Properties;
}

namespace tide::am {

struct SlurmBackendSettings {
  SlurmConnection connection;
  std::string partition;  // "" = the cluster's default partition
  std::string account;
  std::string qos;
  std::optional<int64_t> timeLimitMinutes;  // slurm.timeLimit; none = the partition's limit
  std::string jobNamePrefix = "tide";
  // Executors' working directory and log files (<workDir>/exec-<n>-<jobid>.log); it must
  // exist on the compute nodes (a shared file system on a real cluster). "" =
  // /tmp/tide-slurm-<appId>.
  std::string workDir;

  // slurm.* keys; throws ConfigError naming a bad one.
  static SlurmBackendSettings fromProperties(const Properties& props);
};

// The prefix of every executor job name of one application: "<prefix>-<appId>-exec-".
std::string slurmExecutorJobNamePrefix(const std::string& jobNamePrefix,
                                       const std::string& applicationId);
// The container id of the executor in Slurm job `jobId` (the job's script exports it too).
std::string slurmContainerId(int64_t jobId);

class SlurmClient final : public ResourceManagerClient {
 public:
  // amJobId: the Slurm job the AM itself runs in, if any (tide submit --master slurm+...):
  // its comment gets the AM's status URL, then the final status. `clock` (null: a steady
  // clock) times the backoff after a failed submission; it must outlive the client.
  SlurmClient(SlurmBackendSettings settings, std::string applicationId,
              std::optional<int64_t> amJobId = std::nullopt, const Clock* clock = nullptr);
  // Cancels whatever is still live if unregister was never called (the AM failed to start).
  ~SlurmClient() override;

  void setExecutorTemplate(const ExecutorTemplate& executorTemplate) override;
  rest::RegisterApplicationMasterResponse registerAm(const AmEndpoint& endpoint) override;
  HeartbeatResult heartbeat(const ContainerAsk& ask) override;
  // Nothing to do: the job's script started the executor.
  void launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) override;
  void unregister(const std::string& finalStatus, const std::string& diagnostics) override;

  const std::string& workDir() const { return workDir_; }

 private:
  struct ExecutorJob {
    int64_t jobId = 0;
    std::string executorId;
    rest::Resource resource;
    SlurmJobPhase phase = SlurmJobPhase::kPending;
    std::string node;
    bool granted = false;          // reported to the AM as a granted container
    bool cancelRequested = false;  // released by the AM, or a pending request taken back
    int missingPolls = 0;          // consecutive listings that did not show it
  };

  // heartbeat's steps: the AM's releases become cancellations; every job of ours follows the
  // listing (granted when running, completed when ended or gone); then the pending jobs of
  // each asked shape are matched to what the AM still wants.
  void takeReleases(const std::vector<std::string>& releases);
  // The listed jobs that are in jobs_, by id; listed jobs of this AM's name that are not (their
  // id was lost) are queued for cancelling.
  std::map<int64_t, const SlurmJob*> ourListedJobs(const std::vector<SlurmJob>& listed);
  void followJobs(const std::vector<SlurmJob>& listed, HeartbeatResult& result);
  // One job's step; true when it is done with and leaves jobs_.
  bool followListed(ExecutorJob& job, const SlurmJob& slurmJob, HeartbeatResult& result);
  bool followUnlisted(ExecutorJob& job, HeartbeatResult& result);
  // Cancels the newest pending jobs of the `submitted` shape beyond `wanted`, or submits the
  // missing ones of `resource`.
  void matchPending(const rest::Resource& resource, const rest::Resource& submitted, int wanted);
  void submitExecutors(int count, const rest::Resource& resource);
  void cancelJob(ExecutorJob& job);
  void deliverCancels();
  // Cancels every live job and polls (bounded) until none is pending or running.
  void cancelEverything(std::chrono::milliseconds bound);
  void grant(ExecutorJob& job, HeartbeatResult& result);

  SlurmBackendSettings settings_;
  std::string applicationId_;
  std::optional<int64_t> amJobId_;
  std::string workDir_;
  Logger log_{"slurm"};
  std::unique_ptr<SlurmRestClient> slurm_;
  ExecutorTemplate template_;
  std::map<int64_t, ExecutorJob> jobs_;  // by job id, i.e. in submission order
  std::set<int64_t> cancelQueue_;        // cancellations not yet delivered
  int nextExecutorNumber_ = 1;
  bool rejected_ = false;  // Slurm refused the executor job: submit no more
  SteadyClock steadyClock_;
  const Clock& clock_;          // steadyClock_ unless one was given
  TimeMs submitNotBefore_ = 0;  // on clock_: no submission before this after a failure
  DurationMs submitBackoff_ = 0;
  bool unregistered_ = false;
};

}  // namespace tide::am
