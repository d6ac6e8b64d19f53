// The JSON mapping of the Slurm backend, against answers recorded from a real slurmrestd
// (Slurm 22.05.8, openapi/v0.0.38, deploy/slurm/local-slurm) in tests/slurm/data/:
//   submit.json                 POST /job/submit, accepted (job 1)
//   submit-bad-partition.json   POST /job/submit with "partition": "nosuchpartition"
//   jobs.json                   GET /jobs: COMPLETED, FAILED (exit 3), RUNNING, CANCELLED,
//                               PENDING, TIMEOUT, FAILED by SIGKILL, jobs 1-12
//   job.json                    GET /job/3 after its comment was set
//   cancel-unknown-job.json     DELETE /job/999
//   jobs-bad-token.json         GET /jobs with a token slurmctld refuses

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "am/containers/container_allocator.h"
#include "am/slurm/json.h"
#include "rest/json.h"
#include "tests/support/files.h"

namespace tide::am {
namespace {

rapidjson::Document recorded(const std::string& name) {
  const std::string text = testing_support::readFile(std::string(TIDE_SLURM_DATA_DIR) + "/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return rest::parseJson(text);
}

const SlurmJob& jobById(const std::vector<SlurmJob>& jobs, int64_t id) {
  for (const auto& job : jobs) {
    if (job.jobId == id) return job;
  }
  throw std::runtime_error("no job " + std::to_string(id));
}

TEST(SlurmJson, AcceptedSubmissionGivesTheJobId) {
  const SlurmSubmitResponse response = slurmSubmitResponseFromJson(recorded("submit.json"));
  EXPECT_EQ(response.jobId, 1);
  EXPECT_TRUE(response.errors.empty());
}

// Found by fuzz_slurm_json: a number beyond int64_t was cast to it (undefined behaviour); it is
// no job id, so the answer is refused naming the field.
TEST(SlurmJson, ANumberBeyondInt64IsNoJobId) {
  EXPECT_THROW(slurmSubmitResponseFromJson(rest::parseJson(R"({"job_id": 2.017e78})")),
               rest::JsonFieldError);
  EXPECT_EQ(slurmSubmitResponseFromJson(rest::parseJson(R"({"job_id": 7.0})")).jobId, 7);
}

TEST(SlurmJson, BadPartitionIsARejectionWithSlurmsMessage) {
  const auto doc = recorded("submit-bad-partition.json");
  const SlurmSubmitResponse response = slurmSubmitResponseFromJson(doc);
  EXPECT_EQ(response.jobId, 0);
  ASSERT_EQ(response.errors.size(), 1u);
  EXPECT_EQ(response.errors[0].code, 2000);
  EXPECT_EQ(response.errors[0].message, "Invalid partition name specified");
  EXPECT_TRUE(isSlurmRejection(response.errors));
  EXPECT_EQ(describeSlurmErrors(response.errors), "Invalid partition name specified (error 2000)");
}

TEST(SlurmJson, RefusedTokenAndUnknownJobAreNotRejections) {
  const auto badToken = slurmErrorsFromJson(recorded("jobs-bad-token.json"));
  ASSERT_EQ(badToken.size(), 1u);
  EXPECT_EQ(badToken[0].code, -1);
  EXPECT_EQ(badToken[0].message, "Unspecified error: Failed while looking for jobs");
  EXPECT_FALSE(isSlurmRejection(badToken));

  const auto unknown = slurmErrorsFromJson(recorded("cancel-unknown-job.json"));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].code, 2017);
  EXPECT_NE(unknown[0].message.find("Invalid job id specified"), std::string::npos);
}

TEST(SlurmJson, JobsListReadsEveryStateOfTheRecording) {
  const std::vector<SlurmJob> jobs = slurmJobsFromJson(recorded("jobs.json"));
  ASSERT_EQ(jobs.size(), 12u);

  const SlurmJob& completed = jobById(jobs, 1);
  EXPECT_EQ(completed.name, "tide-rec-exec-1");
  EXPECT_EQ(completed.state, "COMPLETED");
  EXPECT_EQ(completed.phase(), SlurmJobPhase::kEnded);
  EXPECT_EQ(completed.batchHost, "vm");

  const SlurmJob& running = jobById(jobs, 3);
  EXPECT_EQ(running.state, "RUNNING");
  EXPECT_EQ(running.phase(), SlurmJobPhase::kRunning);
  EXPECT_EQ(running.comment, "http://127.0.0.1:4041/");

  const SlurmJob& pending = jobById(jobs, 7);
  EXPECT_EQ(pending.state, "PENDING");
  EXPECT_EQ(pending.phase(), SlurmJobPhase::kPending);
  EXPECT_EQ(pending.stateReason, "Resources");
  EXPECT_EQ(pending.batchHost, "");

  EXPECT_EQ(jobById(jobs, 2).exitCode, 3 << 8);  // `exit 3`, as a wait status
  EXPECT_EQ(jobById(jobs, 4).state, "CANCELLED");
  EXPECT_EQ(jobById(jobs, 8).state, "TIMEOUT");
  EXPECT_EQ(jobById(jobs, 9).stateReason, "JobLaunchFailure");
}

TEST(SlurmJson, OneJobAnswerHasTheSameShape) {
  const std::vector<SlurmJob> jobs = slurmJobsFromJson(recorded("job.json"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].jobId, 3);
  EXPECT_EQ(jobs[0].comment, "http://127.0.0.1:4041/");
}

TEST(SlurmJson, EndedJobsMapOntoTideRmsExitClasses) {
  const std::vector<SlurmJob> jobs = slurmJobsFromJson(recorded("jobs.json"));
  namespace es = rest::exit_status;

  const SlurmJobEnd completed = slurmJobEnd(jobById(jobs, 1), false);
  EXPECT_EQ(completed.exitStatus, 0);
  EXPECT_FALSE(classifyExit(completed.exitStatus, completed.diagnostics).executorFailure);

  const SlurmJobEnd failed = slurmJobEnd(jobById(jobs, 2), false);
  EXPECT_EQ(failed.exitStatus, 3);
  EXPECT_TRUE(classifyExit(failed.exitStatus, failed.diagnostics).executorFailure);
  EXPECT_NE(failed.diagnostics.find("Slurm job 2 FAILED (NonZeroExitCode)"), std::string::npos);

  // Cancelled: by the AM (released) or by someone else; neither is the app's fault.
  EXPECT_EQ(slurmJobEnd(jobById(jobs, 4), true).exitStatus, es::kKilledByAppMaster);
  const SlurmJobEnd scancelled = slurmJobEnd(jobById(jobs, 4), false);
  EXPECT_EQ(scancelled.exitStatus, es::kKilledByResourceManager);
  EXPECT_FALSE(classifyExit(scancelled.exitStatus, scancelled.diagnostics).executorFailure);

  // TIMEOUT: Slurm ended it with SIGTERM; the executor's (the app's) failure.
  const SlurmJobEnd timedOut = slurmJobEnd(jobById(jobs, 8), false);
  EXPECT_EQ(timedOut.exitStatus, 128 + 15);
  EXPECT_TRUE(classifyExit(timedOut.exitStatus, timedOut.diagnostics).executorFailure);
  EXPECT_NE(timedOut.diagnostics.find("time limit"), std::string::npos);

  EXPECT_EQ(slurmJobEnd(jobById(jobs, 9), false).exitStatus, 128 + 9);  // killed by SIGKILL
}

TEST(SlurmJson, NodeFailurePreemptionAndMemoryAreTheirOwnClasses) {
  namespace es = rest::exit_status;
  SlurmJob job;
  job.jobId = 42;
  job.state = "NODE_FAIL";
  EXPECT_EQ(slurmJobEnd(job, false).exitStatus, es::kAborted);
  EXPECT_NE(slurmJobEnd(job, false).diagnostics.find("node failure"), std::string::npos);
  EXPECT_EQ(classifyExit(es::kAborted, "").executorFailure, false);
  job.state = "PREEMPTED";
  EXPECT_EQ(slurmJobEnd(job, false).exitStatus, es::kPreempted);
  job.state = "OUT_OF_MEMORY";
  EXPECT_EQ(slurmJobEnd(job, false).exitStatus, es::kKilledExceededPmem);
  EXPECT_EQ(classifyExit(es::kKilledExceededPmem, "").cause, "memory");
  job.state = "BOOT_FAIL";
  EXPECT_EQ(slurmJobEnd(job, false).exitStatus, es::kAborted);
  job.state = "DEADLINE";
  EXPECT_EQ(slurmJobEnd(job, false).exitStatus, es::kKilledByResourceManager);
}

TEST(SlurmJson, PhasesOfTransientStates) {
  EXPECT_EQ(slurmJobPhase("CONFIGURING"), SlurmJobPhase::kPending);
  EXPECT_EQ(slurmJobPhase("REQUEUED"), SlurmJobPhase::kPending);
  EXPECT_EQ(slurmJobPhase("COMPLETING"), SlurmJobPhase::kRunning);
  EXPECT_EQ(slurmJobPhase("SUSPENDED"), SlurmJobPhase::kRunning);
  EXPECT_EQ(slurmJobPhase("OUT_OF_MEMORY"), SlurmJobPhase::kEnded);
}

TEST(SlurmJson, LaterPluginShapesAreReadToo) {
  const auto doc = rest::parseJson(R"({"jobs": [{"job_id": {"set": true, "number": 7},
      "job_state": ["FAILED"], "exit_code": {"status": ["EXITED"],
      "return_code": {"set": true, "number": 3}, "signal": {"id": {"set": false, "number": 0}}}}]})");
  const auto jobs = slurmJobsFromJson(doc);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].jobId, 7);
  EXPECT_EQ(jobs[0].state, "FAILED");
  EXPECT_EQ(slurmJobEnd(jobs[0], false).exitStatus, 3);
}

TEST(SlurmJson, SubmissionCarriesTheEnvironmentAndSizes) {
  SlurmJobSpec spec;
  spec.name = "tide-app-1-exec-1";
  spec.partition = "debug";
  spec.timeLimitMinutes = 90;
  spec.cpusPerTask = 2;
  spec.memoryPerNodeMiB = 512;
  spec.workingDirectory = "/tmp/w";
  spec.standardOutput = "/tmp/w/exec-1-%j.log";
  spec.environment = {{"TIDE_APP_SECRET", "s3cret"}, {"PATH", "/bin"}};
  spec.script = "#!/bin/sh\nexec tide-executor\n";
  const auto doc = rest::parseJson(slurmSubmissionJson(spec));
  const auto& job = doc["job"];
  EXPECT_STREQ(job["name"].GetString(), "tide-app-1-exec-1");
  EXPECT_STREQ(job["partition"].GetString(), "debug");
  EXPECT_EQ(job["time_limit"].GetInt(), 90);
  EXPECT_EQ(job["cpus_per_task"].GetInt(), 2);
  EXPECT_EQ(job["memory_per_node"].GetInt(), 512);
  EXPECT_STREQ(job["environment"]["TIDE_APP_SECRET"].GetString(), "s3cret");
  EXPECT_FALSE(job.HasMember("account"));  // unset: the cluster's default
  EXPECT_STREQ(doc["script"].GetString(), "#!/bin/sh\nexec tide-executor\n");
  EXPECT_EQ(slurmCommentUpdateJson("http://h:1/"), R"({"comment":"http://h:1/"})");
}

TEST(SlurmJson, TimeLimitsInSlurmSyntax) {
  EXPECT_EQ(parseSlurmTimeLimit(""), std::nullopt);
  EXPECT_EQ(parseSlurmTimeLimit("UNLIMITED"), std::nullopt);
  EXPECT_EQ(parseSlurmTimeLimit("90"), 90);
  EXPECT_EQ(parseSlurmTimeLimit("10:30"), 11);  // MM:SS, rounded up
  EXPECT_EQ(parseSlurmTimeLimit("1:30:00"), 90);
  EXPECT_EQ(parseSlurmTimeLimit("2-0"), 2 * 24 * 60);
  EXPECT_EQ(parseSlurmTimeLimit("1-2:30"), 24 * 60 + 150);
  EXPECT_EQ(parseSlurmTimeLimit("1-0:0:30"), 24 * 60 + 1);
  EXPECT_THROW(parseSlurmTimeLimit("an hour"), std::invalid_argument);
  EXPECT_THROW(parseSlurmTimeLimit("1:2:3:4"), std::invalid_argument);
  EXPECT_THROW(parseSlurmTimeLimit("0"), std::invalid_argument);
}

}  // namespace
}  // namespace tide::am
