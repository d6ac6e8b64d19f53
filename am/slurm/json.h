#pragma once

// slurmrestd's JSON, as tide reads and writes it: the job submission body, the submit and
// jobs-list answers, the `errors` array every answer carries, and how an ended Slurm job maps
// onto the container exit statuses tide-rm uses (rest::exit_status), so the allocator
// classifies a Slurm executor's end exactly like a tide-rm container's. Pure functions; the
// unit tests run them against answers recorded from a real slurmrestd (tests/slurm/data/).

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tide::am {

// One entry of an answer's `errors` array. The submit call names the code `error_code`, the
// others `error_number`; `description` (when present) says more than `error`.
struct SlurmError {
  int code = 0;
  std::string message;
};

std::vector<SlurmError> slurmErrorsFromJson(const rapidjson::Value& response);
// "Invalid partition name specified (error 2000)"; several are joined with "; ".
std::string describeSlurmErrors(const std::vector<SlurmError>& errors);
// Whether the errors say the request itself is wrong, so that sending it again cannot help:
// Slurm's ESLURM_* request errors (2000-2999: bad partition, account or QOS, a size no node
// has), and slurmrestd's own parse errors (9000-9999: a field it does not know). Anything else
// (slurmctld unreachable, -1 "Unspecified error" for a refused token) may pass.
bool isSlurmRejection(const std::vector<SlurmError>& errors);

// One batch job, as tide submits it.
struct SlurmJobSpec {
  std::string name;
  std::string partition;  // empty: the cluster's default
  std::string account;
  std::string qos;
  std::optional<int64_t> timeLimitMinutes;
  int cpusPerTask = 1;
  int64_t memoryPerNodeMiB = 0;  // 0: the partition's default (DefMemPerCPU)
  std::string workingDirectory;
  std::string standardOutput;  // may use Slurm's %j
  std::string standardError;
  // The job's whole environment (slurmrestd passes none of its own); secrets go here, never
  // into the script.
  std::vector<std::pair<std::string, std::string>> environment;
  std::string comment;
  std::string script;  // starts with #!
};

// {"job": {...}, "script": "..."} for POST .../job/submit.
std::string slurmSubmissionJson(const SlurmJobSpec& spec);

struct SlurmSubmitResponse {
  int64_t jobId = 0;  // 0 when rejected
  std::vector<SlurmError> errors;
};
SlurmSubmitResponse slurmSubmitResponseFromJson(const rapidjson::Value& response);

// The body of POST .../job/{id} that sets the job's comment (v0.0.38 takes the properties
// unwrapped: {"job": {...}} is answered 200 with an "Unknown key" error and changes nothing).
std::string slurmCommentUpdateJson(const std::string& comment);

// Where a job stands, as far as the AM is concerned.
enum class SlurmJobPhase {
  kPending,  // waiting for resources (or held, requeued, its node booting)
  kRunning,  // its script runs (also while suspended or completing)
  kEnded,    // a final state: the exit is known
};
SlurmJobPhase slurmJobPhase(const std::string& state);

struct SlurmJob {
  int64_t jobId = 0;
  std::string name;
  std::string state;        // PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, TIMEOUT, ...
  std::string stateReason;  // "None", "Resources", "NonZeroExitCode", ...
  std::string stateDescription;
  // How the script ended: Slurm stores a wait(2) status (3 << 8 for `exit 3`, 15 for SIGTERM).
  int64_t exitCode = 0;
  std::string batchHost;  // the node running the script; "" while pending
  std::string comment;
  int64_t startTime = 0;  // epoch seconds; 0 (or the expected start) while pending

  SlurmJobPhase phase() const { return slurmJobPhase(state); }
};

// {"jobs": [...]} from GET .../jobs or GET .../job/{id}. Also reads the later plugins' forms
// (job_state as a list, numbers as {"number": N}), so a version bump only touches paths.
std::vector<SlurmJob> slurmJobsFromJson(const rapidjson::Value& response);

// The exit code of a wait(2) status: the process's code, or 128 + signal.
int exitCodeOfWaitStatus(int64_t waitStatus);

// An ended job as a container exit status with its diagnostics:
//   COMPLETED -> the script's exit code (tide-executor's: 0 when the AM let it go)
//   FAILED, TIMEOUT -> the exit code, at least 1: the executor's (the app's) failure
//   CANCELLED -> -105 when the AM cancelled it, else -106 (killed by the resource manager)
//   NODE_FAIL, BOOT_FAIL -> -100 (lost with its node); PREEMPTED -> -102;
//   OUT_OF_MEMORY -> -104; DEADLINE and anything else final -> -106.
struct SlurmJobEnd {
  int exitStatus = 0;
  std::string diagnostics;
};
SlurmJobEnd slurmJobEnd(const SlurmJob& job, bool cancelledByAm);

// Slurm's time syntax (sbatch --time): "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM",
// "D-HH:MM:SS", rounded up to whole minutes; "" / "UNLIMITED" / "INFINITE" mean none.
// Throws std::invalid_argument with a reason.
std::optional<int64_t> parseSlurmTimeLimit(const std::string& text);

}  // namespace tide::am
