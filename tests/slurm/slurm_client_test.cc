// The Slurm backend (SlurmClient) against an in-memory slurmrestd: what it submits, how job
// states become grants and completions, what it cancels, how it handles Slurm's errors and a
// rotating token.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "am/slurm/slurm_client.h"
#include "common/clock.h"
#include "fake_slurmrestd.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::FakeSlurmrestd;

class SlurmClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<SlurmClient> client(const std::string& partition = "") {
    SlurmBackendSettings settings;
    settings.connection.url = fake.url();
    settings.connection.user = "alice";
    settings.connection.tokenFile = tokenFile;
    settings.partition = partition;
    settings.workDir = (dir.path() / "work").string();
    auto backend = std::make_unique<SlurmClient>(settings, "app-7", std::nullopt, &clock);
    backend->setExecutorTemplate({"exec '/opt/tide/bin/tide-executor' --conf 'executor.cores=1'",
                                  {{"TIDE_AM_ADDRESS", "http://127.0.0.1:4040"},
                                   {"TIDE_APP_SECRET", "the-secret"},
                                   {"TIDE_APPLICATION_ID", "app-7"}}});
    backend->registerAm({"127.0.0.1", 4040, "http://127.0.0.1:4040/"});
    return backend;
  }

  static ContainerAsk ask(int outstanding, std::vector<std::string> releases = {}) {
    ContainerAsk a;
    a.resource = {512, 1};
    a.outstanding = outstanding;
    a.releases = std::move(releases);
    return a;
  }

  ManualClock clock{1000000};  // times the submission backoff
  testing_support::TempDir dir;
  std::string tokenFile = dir.writeFile("jwt", "SLURM_JWT=token-one\n");
  FakeSlurmrestd fake;
};

TEST_F(SlurmClientTest, SubmitsOneJobPerWantedExecutorWithTheSecretInItsEnvironment) {
  auto backend = client("debug");
  HeartbeatResult result = backend->heartbeat(ask(2));
  EXPECT_TRUE(result.granted.empty());
  EXPECT_THAT(result.startingExecutors, ElementsAre("e1", "e2"));
  // What the partition could hold is not known: the page says "unknown", never a made-up 0.
  EXPECT_EQ(result.capacity.fitNow, -1);
  EXPECT_EQ(result.capacity.fitTotal, -1);
  EXPECT_THAT(result.capacity.source, ::testing::HasSubstr("unknown: Slurm"));
  const auto jobs = fake.jobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].name, "tide-app-7-exec-1");
  EXPECT_EQ(jobs[1].name, "tide-app-7-exec-2");

  const auto body = rest::parseJson(jobs[0].body);
  const auto& job = body["job"];
  EXPECT_STREQ(job["partition"].GetString(), "debug");
  EXPECT_EQ(job["cpus_per_task"].GetInt(), 1);
  EXPECT_EQ(job["memory_per_node"].GetInt(), 512);
  EXPECT_STREQ(job["environment"]["TIDE_APP_SECRET"].GetString(), "the-secret");
  EXPECT_STREQ(job["environment"]["TIDE_EXECUTOR_ID"].GetString(), "e1");
  EXPECT_STREQ(job["environment"]["TIDE_AM_ADDRESS"].GetString(), "http://127.0.0.1:4040");
  EXPECT_TRUE(job["environment"].HasMember("PATH"));
  const std::string script = body["script"].GetString();
  EXPECT_THAT(script, HasSubstr("exec '/opt/tide/bin/tide-executor'"));
  EXPECT_THAT(script, HasSubstr("TIDE_CONTAINER_ID=\"slurm-job-$SLURM_JOB_ID\""));
  EXPECT_THAT(script, Not(HasSubstr("the-secret")));
  EXPECT_THAT(std::string(job["standard_output"].GetString()), HasSubstr("/work/exec-1-%j.log"));
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "work"));

  // Still 2 outstanding next beat: nothing more is submitted.
  backend->heartbeat(ask(2));
  EXPECT_EQ(fake.jobs().size(), 2u);
  EXPECT_THAT(fake.users(), ::testing::Each("alice"));
  EXPECT_THAT(fake.tokens(), ::testing::Each("token-one"));
}

TEST_F(SlurmClientTest, ARunningJobIsGrantedOnceWithItsExecutorId) {
  auto backend = client();
  backend->heartbeat(ask(2));
  const int64_t first = fake.jobs()[0].id;
  fake.setState(first, "RUNNING");
  HeartbeatResult result = backend->heartbeat(ask(2));
  ASSERT_EQ(result.granted.size(), 1u);
  EXPECT_EQ(result.granted[0].id, slurmContainerId(first));
  EXPECT_EQ(result.granted[0].nodeId, "node1");
  EXPECT_EQ(result.executorIds.at(slurmContainerId(first)), "e1");
  EXPECT_THAT(result.startingExecutors, ElementsAre("e2"));
  // The grant already answered one of the two outstanding: no third job.
  EXPECT_EQ(fake.jobs().size(), 2u);

  result = backend->heartbeat(ask(1));
  EXPECT_TRUE(result.granted.empty());
  EXPECT_EQ(fake.jobs().size(), 2u);
}

TEST_F(SlurmClientTest, LoweringTheAskCancelsTheNewestPendingJobsNeverARunningOne) {
  auto backend = client();
  backend->heartbeat(ask(4));
  const auto jobs = fake.jobs();
  fake.setState(jobs[0].id, "RUNNING");
  backend->heartbeat(ask(4));  // e1 granted; 3 pending wanted
  backend->heartbeat(ask(1));  // the AM wants only one more
  EXPECT_THAT(fake.cancelled(), ::testing::UnorderedElementsAre(jobs[3].id, jobs[2].id));
  EXPECT_EQ(fake.job(jobs[0].id).state, "RUNNING");
  EXPECT_EQ(fake.job(jobs[1].id).state, "PENDING");

  // Their end is not reported: they were requests, not containers.
  HeartbeatResult result = backend->heartbeat(ask(1));
  EXPECT_TRUE(result.completed.empty());
  EXPECT_EQ(fake.jobs().size(), 4u);
}

TEST_F(SlurmClientTest, AReleasedExecutorsJobIsCancelledAndItsEndReported) {
  auto backend = client();
  backend->heartbeat(ask(1));
  const int64_t id = fake.jobs()[0].id;
  fake.setState(id, "RUNNING");
  backend->heartbeat(ask(1));
  // Cancelled before the listing, which already shows it ended.
  HeartbeatResult result = backend->heartbeat(ask(0, {slurmContainerId(id)}));
  EXPECT_THAT(fake.cancelled(), ElementsAre(id));
  ASSERT_EQ(result.completed.size(), 1u);
  EXPECT_EQ(result.completed[0].exitStatus, rest::exit_status::kKilledByAppMaster);
}

TEST_F(SlurmClientTest, EndedJobsBecomeCompletedContainersWithTideRmsExitClasses) {
  auto backend = client();
  backend->heartbeat(ask(3));
  const auto jobs = fake.jobs();
  for (const auto& job : jobs) fake.setState(job.id, "RUNNING");
  backend->heartbeat(ask(3));
  fake.setState(jobs[0].id, "FAILED", 3 << 8);
  fake.setState(jobs[1].id, "NODE_FAIL");
  fake.setState(jobs[2].id, "COMPLETED", 0);
  HeartbeatResult result = backend->heartbeat(ask(0));
  ASSERT_EQ(result.completed.size(), 3u);
  EXPECT_EQ(result.completed[0].exitStatus, 3);
  EXPECT_EQ(result.completed[1].exitStatus, rest::exit_status::kAborted);
  EXPECT_THAT(result.completed[1].diagnostics, HasSubstr("node failure"));
  EXPECT_EQ(result.completed[2].exitStatus, 0);
}

TEST_F(SlurmClientTest, AJobThatFailedBeforeAListingSawItRunIsGrantedAndCompleted) {
  auto backend = client();
  backend->heartbeat(ask(1));
  const int64_t id = fake.jobs()[0].id;
  fake.setState(id, "FAILED", 1 << 8);
  HeartbeatResult result = backend->heartbeat(ask(1));
  ASSERT_EQ(result.granted.size(), 1u);
  ASSERT_EQ(result.completed.size(), 1u);
  EXPECT_EQ(result.completed[0].exitStatus, 1);
}

TEST_F(SlurmClientTest, ABadPartitionFailsTheApplicationWithSlurmsMessage) {
  auto backend = client("nope");
  try {
    backend->heartbeat(ask(1));
    FAIL() << "expected ResourceManagerRejected";
  } catch (const ResourceManagerRejected& e) {
    EXPECT_THAT(e.what(), HasSubstr("Invalid partition name specified"));
  }
  EXPECT_TRUE(fake.jobs().empty());
  // No more attempts afterwards.
  EXPECT_NO_THROW(backend->heartbeat(ask(1)));
  EXPECT_TRUE(fake.jobs().empty());
}

TEST_F(SlurmClientTest, AnUnavailableSlurmIsRetriedLaterNotFatal) {
  auto backend = client();
  fake.failSubmits(1);
  EXPECT_NO_THROW(backend->heartbeat(ask(1)));
  EXPECT_TRUE(fake.jobs().empty());
  // Within the backoff (1 s after the first failure) nothing is sent again.
  backend->heartbeat(ask(1));
  EXPECT_TRUE(fake.jobs().empty());
  clock.advance(999);
  backend->heartbeat(ask(1));
  EXPECT_TRUE(fake.jobs().empty());
  clock.advance(1);
  backend->heartbeat(ask(1));
  EXPECT_EQ(fake.jobs().size(), 1u);

  // A failed listing fails the heartbeat (the AM logs it and beats again).
  fake.failListings(1);
  EXPECT_THROW(backend->heartbeat(ask(1)), SlurmUnavailable);
  EXPECT_NO_THROW(backend->heartbeat(ask(1)));
}

// The file is read again when its size or modification time changes. Each rewrite here moves
// the modification time on explicitly, a second at a time, instead of sleeping for the
// filesystem's timestamp granularity: the second rewrite keeps the size, so only the time tells.
TEST_F(SlurmClientTest, ARotatedTokenFileIsReadAgain) {
  auto backend = client();
  backend->heartbeat(ask(0));
  const auto rewrite = [&](const std::string& contents) {
    const auto before = std::filesystem::last_write_time(tokenFile);
    dir.writeFile("jwt", contents);
    std::filesystem::last_write_time(tokenFile, before + std::chrono::seconds(1));
  };
  rewrite("token-two-longer\n");
  backend->heartbeat(ask(0));
  rewrite("token-3-as-long!\n");  // the same size as the one before
  backend->heartbeat(ask(0));
  const auto tokens = fake.tokens();
  ASSERT_GE(tokens.size(), 3u);
  EXPECT_EQ(tokens.front(), "token-one");
  EXPECT_THAT(tokens, ::testing::Contains("token-two-longer"));
  EXPECT_EQ(tokens.back(), "token-3-as-long!");
}

TEST_F(SlurmClientTest, AJobOfOursWhoseIdNeverCameBackIsCancelled) {
  auto backend = client();
  const int64_t orphan = fake.addJob("tide-app-7-exec-99", "PENDING");
  const int64_t other = fake.addJob("tide-app-77-exec-1", "PENDING");  // another application's
  backend->heartbeat(ask(0));
  backend->heartbeat(ask(0));
  EXPECT_THAT(fake.cancelled(), ElementsAre(orphan));
  EXPECT_EQ(fake.job(other).state, "PENDING");
}

TEST_F(SlurmClientTest, UnregisterCancelsEveryLiveJobAndLeavesOthersAlone) {
  const int64_t foreign = fake.addJob("someone-else", "RUNNING");
  auto backend = client();
  backend->heartbeat(ask(3));
  const auto jobs = fake.jobs();
  fake.setState(jobs[1].id, "RUNNING");
  backend->heartbeat(ask(3));
  backend->unregister("SUCCEEDED", "");
  for (const auto& job : fake.jobs()) {
    if (job.id == foreign) {
      EXPECT_EQ(job.state, "RUNNING");
    } else {
      EXPECT_EQ(job.state, "CANCELLED") << job.name;
    }
  }
}

TEST_F(SlurmClientTest, TheAmsOwnJobGetsTheStatusUrlThenTheFinalStatus) {
  const int64_t amJob = fake.addJob("tide-am-x", "RUNNING");
  SlurmBackendSettings settings;
  settings.connection.url = fake.url();
  settings.connection.tokenFile = tokenFile;
  settings.workDir = (dir.path() / "work").string();
  SlurmClient backend(settings, "slurm-" + std::to_string(amJob), amJob);
  backend.registerAm({"127.0.0.1", 4041, "http://127.0.0.1:4041/"});
  EXPECT_EQ(fake.job(amJob).comment, "http://127.0.0.1:4041/");
  backend.unregister("FAILED", "no luck");
  EXPECT_EQ(fake.job(amJob).comment, "FAILED: no luck");
}

TEST(SlurmClientUnixSocket, TalksToSlurmrestdOverAUnixSocketWithoutAToken) {
  testing_support::TempDir dir;
  const std::string socket = (dir.path() / "slurmrestd.socket").string();
  FakeSlurmrestd fake(socket);
  SlurmConnection connection;
  connection.url = "unix:" + socket;
  ::unsetenv("SLURM_JWT");
  SlurmRestClient slurm(connection);
  SlurmJobSpec spec;
  spec.name = "over-a-socket";
  spec.script = "#!/bin/sh\n";
  const int64_t id = slurm.submit(spec);
  ASSERT_EQ(slurm.jobs().size(), 1u);
  EXPECT_EQ(slurm.jobs()[0].jobId, id);
  EXPECT_THAT(fake.tokens(), ::testing::Each(""));
  EXPECT_TRUE(slurm.cancel(id));
  EXPECT_FALSE(slurm.cancel(9999));  // unknown: nothing to cancel
}

// Stage-level executor shapes: each resource profile's executors are Slurm jobs of that
// profile's cpus and memory, started with its executor.cores; lowering one profile's ask
// cancels only its pending jobs.
TEST_F(SlurmClientTest, EachResourceProfilesExecutorsAreJobsOfItsShape) {
  auto backend = client();
  ContainerAsk both = ask(1);
  both.profileAsks.push_back({1, {4096, 8}, 2, 2, {}});
  backend->heartbeat(both);
  const auto jobs = fake.jobs();
  ASSERT_EQ(jobs.size(), 3u);
  int wide = 0;
  for (const auto& submitted : jobs) {
    const auto body = rest::parseJson(submitted.body);
    const int cpus = body["job"]["cpus_per_task"].GetInt();
    const std::string script = body["script"].GetString();
    if (cpus == 8) {
      ++wide;
      EXPECT_EQ(body["job"]["memory_per_node"].GetInt(), 4096);
      EXPECT_THAT(script, HasSubstr("--conf 'executor.cores=8'"));
    } else {
      EXPECT_EQ(cpus, 1);
      EXPECT_THAT(script, HasSubstr("--conf 'executor.cores=1'"));
    }
  }
  EXPECT_EQ(wide, 2);

  // The same asks again submit nothing; profile 1 down to 1 cancels one of its own jobs.
  backend->heartbeat(both);
  EXPECT_EQ(fake.jobs().size(), 3u);
  both.profileAsks[0].outstanding = 1;
  backend->heartbeat(both);
  ASSERT_EQ(fake.cancelled().size(), 1u);
  for (const auto& submitted : fake.jobs()) {
    if (submitted.id != fake.cancelled()[0]) continue;
    EXPECT_EQ(rest::parseJson(submitted.body)["job"]["cpus_per_task"].GetInt(), 8);
  }
}

}  // namespace
}  // namespace tide::am
