#pragma once

// The slurmrestd endpoints tide uses, for one OpenAPI plugin version. Every path and version
// string lives here, so supporting a newer plugin (v0.0.39 moved and reshaped some of them)
// means adding it in this one place, plus its JSON differences in am/slurm/json.cc.
//
//   GET    /slurm/{v}/ping             slurmctld reachable and the token accepted
//   POST   /slurm/{v}/job/submit       {"job": {...properties}, "script": "..."} -> job_id
//   GET    /slurm/{v}/jobs             every job slurmctld still knows (MinJobAge after its end)
//   GET    /slurm/{v}/job/{id}         one job
//   POST   /slurm/{v}/job/{id}         {...properties} (NOT wrapped in "job") updates a job
//   DELETE /slurm/{v}/job/{id}         cancels it (SIGTERM, then SIGKILL after KillWait)

#include <cstdint>
#include <string>
#include <vector>

namespace tide::am {

struct SlurmApi {
  // Debian 12's Slurm 22.05 serves openapi/v0.0.36 to v0.0.38; tide speaks v0.0.38.
  static constexpr char kDefaultVersion[] = "v0.0.38";
  static std::vector<std::string> supportedVersions() { return {kDefaultVersion}; }

  std::string version = kDefaultVersion;

  std::string base() const { return "/slurm/" + version; }
  std::string pingPath() const { return base() + "/ping"; }
  std::string submitPath() const { return base() + "/job/submit"; }
  std::string jobsPath() const { return base() + "/jobs"; }
  std::string jobPath(int64_t jobId) const { return base() + "/job/" + std::to_string(jobId); }
  std::string cancelPath(int64_t jobId) const { return jobPath(jobId); }
  std::string updatePath(int64_t jobId) const { return jobPath(jobId); }
};

}  // namespace tide::am
