#pragma once

// `tide submit --master slurm+http://HOST:6820 JOB`: the ApplicationMaster as a Slurm batch
// job. Its script runs tide-am with am.resourceManager=slurm, so the AM then asks the same
// slurmrestd for its executors. The application id is `slurm-<job id>`; the AM writes its
// status URL into the job's comment (and its final status when it ends), which is how
// `tide status` finds it (slurmTrackingUrl).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "am/slurm/rest_client.h"
#include "common/config.h"
#include "deploy/am_submission.h"

namespace tide::deploy {

// "slurm+http://h:6820" -> "http://h:6820", "slurm+unix:/run/slurmrestd.sock" ->
// "unix:/run/slurmrestd.sock"; nullopt when `master` is not a slurm+ URL.
std::optional<std::string> slurmUrlOfMaster(const std::string& master);

// "slurm-123" -> 123; nullopt for any other application id.
std::optional<int64_t> slurmJobIdOfApplication(const std::string& applicationId);
std::string slurmApplicationId(int64_t jobId);

// Submits the AM as a Slurm job through `slurm` (props: the slurm.* keys, am.cores,
// am.memory). Returns the job id. Throws am::SlurmRejected with Slurm's message, or
// am::SlurmUnavailable.
// `controlToken` (when given) receives the application's control token.
int64_t submitApplicationMasterToSlurm(am::SlurmRestClient& slurm, const AmSubmission& submission,
                                       const Properties& props,
                                       std::string* controlToken = nullptr);

struct SlurmFollowOptions {
  std::function<bool()> interrupted;  // true once: the AM's job is cancelled, then followed
  std::chrono::milliseconds pollInterval{1000};
  std::string controlToken;  // printed in the page URL once the AM has one
};

// Follows the AM's job until it ends, telling its state changes on stderr. Returns the exit
// status for `tide submit --wait`: 0 only when the job COMPLETED with exit code 0 (the AM
// exits 0 only when the application SUCCEEDED).
int followSlurmApplicationMaster(am::SlurmRestClient& slurm, int64_t jobId,
                                 const SlurmFollowOptions& options);

// The AM's status URL from its Slurm job's comment, for `tide status`; nullopt while the AM has
// not written it, once it has ended, or when Slurm no longer knows the job.
std::optional<std::string> slurmTrackingUrl(int64_t jobId, const am::SlurmConnection& options);

// `tide submit` with a slurm+ master; returns the process exit status.
int runSlurmSubmit(const std::string& slurmUrl, const AmSubmission& submission, Properties& props,
                   bool wait, const std::function<bool()>& interrupted);

}  // namespace tide::deploy
