// TLS end to end (issue 17.3): a throwaway CA and a certificate for 127.0.0.1 made with the
// openssl command; real tide-rm and tide-nm given tls.certFile, tls.keyFile and tls.caFile; an
// ApplicationMaster and executors that take the node's TLS files from their containers; a job
// whose second stage reads the first stage's blocks from another executor's block server.
// Every server the job uses answers HTTPS only, and refuses a client that trusts another CA.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "am_cluster_test.h"
#include "tests/support/certificates.h"
#include "tests/support/errors.h"

namespace tide::deploy {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::StartsWith;
using testing_support::eventually;
using testing_support::readFile;
namespace fs = std::filesystem;

// Two map tasks that each write one block and a reduce task that reads both: the reduce runs
// on one executor, so with the maps on two executors at least one block crosses between
// block servers. The maps wait for `gate` to exist, so that the test can see them running at
// once (on two one-core executors) before they finish.
std::string shuffleJob(const std::string& output, const std::string& gate) {
  const std::string wait =
      gate.empty() ? "" : "while [ ! -e '" + gate + "' ]; do sleep 0.05; done; ";
  return R"({"name": "tls-shuffle", "output": ")" + output + R"(", "stages": [
      {"id": "map", "tasks": 2, "command": ["sh", "-c",
       ")" +
         wait + R"(echo from-map-{task} > \"$TIDE_OUTPUT_DIR/part-0\""]},
      {"id": "reduce", "depends_on": ["map"], "tasks": 1, "command": ["sh", "-c",
       "cat \"$TIDE_INPUT_DIR\"/map/part-* > \"$TIDE_OUTPUT_DIR/part-0\""]}]})";
}

class TlsIntegrationTest : public testing_support::AmClusterTest {
 protected:
  void SetUp() override { serveTls(); }

  // Every container's stderr under the cluster's work directory, by path.
  std::map<std::string, std::string> containerLogs() {
    std::map<std::string, std::string> logs;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path() / "cluster", ec)) {
      if (entry.path().filename() == "stderr") logs[entry.path().string()] = readFile(entry.path());
    }
    return logs;
  }

  // Every match of `pattern`'s first group in the containers' logs.
  std::set<std::string> foundInLogs(const std::string& pattern) {
    std::set<std::string> found;
    const std::regex re(pattern);
    for (const auto& [path, text] : containerLogs()) {
      for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
        found.insert((*it)[1]);
      }
    }
    return found;
  }

  // A server that speaks HTTPS only, with our certificate: a client trusting our CA gets an
  // answer (whatever its status: 401 without a credential), one trusting another CA refuses it
  // naming the certificate problem, and a plain HTTP request gets no answer.
  void expectHttpsOnly(const std::string& url) {
    SCOPED_TRACE(url);
    ASSERT_THAT(url, StartsWith("https://127.0.0.1:"));
    rest::HttpClientOptions options;
    options.retry.maxAttempts = 1;
    options.requestTimeout = 10s;
    rest::HttpClientOptions trusting = options;
    trusting.caFile = certificates->caFile();
    EXPECT_GT(rest::HttpClient(url, trusting).request("GET", "/").status, 0);

    rest::HttpClientOptions wrongCa = options;
    wrongCa.caFile = certificates->otherCaFile();
    EXPECT_THAT(testing_support::expectedMessageOf<rest::HttpError>(
                    [&] { rest::HttpClient(url, wrongCa).request("GET", "/"); }),
                HasSubstr("SSL certificate problem"));

    const std::string plain = "http://" + url.substr(std::string("https://").size());
    try {
      const rest::HttpResponse answer = rest::HttpClient(plain, options).request("GET", "/");
      ADD_FAILURE() << "plain HTTP answered with HTTP " << answer.status;
    } catch (const rest::HttpError& error) {
      EXPECT_TRUE(error.isTransportError()) << error.what();
    }
  }
};

TEST_F(TlsIntegrationTest, AShuffleJobRunsOverTlsAndEveryServerIsHttpsOnly) {
  startCluster(/*nodes=*/2, /*coresPerNode=*/3);
  EXPECT_THAT(cluster->rmAddress(), StartsWith("https://"));
  const fs::path output = dir.path() / "out";
  const fs::path gate = dir.path() / "maps-may-finish";
  // No tls.* for the AM: it and its executors take their node's files from the node manager.
  // log.level=debug (passed on to the executors) makes them log each block they fetch.
  submit(shuffleJob(output.string(), gate.string()),
         {{"executor.cores", "1"},
          {"dynamicAllocation.minExecutors", "2"},
          {"dynamicAllocation.initialExecutors", "2"},
          {"dynamicAllocation.maxExecutors", "2"},
          {"log.level", "debug"}},
         /*session=*/false);
  EXPECT_THAT(trackingUrl, StartsWith("https://127.0.0.1:"));

  // Both maps running at once: on two executors, one slot each.
  ASSERT_TRUE(eventually([&] { return status()["tasks"]["running"].GetInt64() == 2; }, 60s))
      << "the two map tasks never ran at once";

  // Meanwhile every server of the cluster is HTTPS only: tide-rm, each tide-nm, the AM's
  // status and executor ports, each executor's block server.
  expectHttpsOnly(cluster->rmAddress());
  for (size_t i = 0; i < cluster->nodeCount(); ++i) {
    expectHttpsOnly("https://127.0.0.1:" + std::to_string(cluster->nodeManagerPort(i)));
  }
  expectHttpsOnly(trackingUrl.substr(0, trackingUrl.size() - 1));  // without its trailing '/'
  const std::set<std::string> executorPorts = foundInLogs(R"(executors connect to port (\d+))");
  ASSERT_EQ(executorPorts.size(), 1u) << "the AM's log names its executor port once";
  expectHttpsOnly("https://127.0.0.1:" + *executorPorts.begin());
  const std::set<std::string> blockServers = foundInLogs(R"(serving blocks at (\S+))");
  EXPECT_EQ(blockServers.size(), 2u) << "one block server per executor";
  for (const std::string& url : blockServers) expectHttpsOnly(url);

  testing_support::writeFile(gate, "");
  const rest::ApplicationReport report = waitForEnd(90s);
  ASSERT_EQ(report.finalStatus, "SUCCEEDED") << report.diagnostics;
  EXPECT_EQ(readFile(output / "part-0"), "from-map-0\nfrom-map-1\n");
  // The reduce read the other executor's block from its block server, over HTTPS.
  const std::set<std::string> fetchedFrom =
      foundInLogs(R"(fetched block \S+ \(\d+ bytes\) from \S+ at (\S+))");
  ASSERT_FALSE(fetchedFrom.empty()) << "no block crossed between executors";
  for (const std::string& url : fetchedFrom) EXPECT_THAT(url, StartsWith("https://127.0.0.1:"));
}

TEST_F(TlsIntegrationTest, TideRunWithTlsKeysRunsAJobOverHttps) {
  const fs::path output = dir.path() / "out";
  const std::string job = dir.writeFile("job.json", shuffleJob(output.string(), ""));
  // As docs/security.md shows it: run where the files are, with relative paths.
  std::string command = "cd '" + (dir.path() / "tls").string() + "' && exec '" +
                        std::string(TIDE_BIN_DIR) + "/tide' run '" + job + "'";
  for (const char* conf :
       {"nm.cores=3", "nm.memory=2g", "executor.memory=256m", "am.memory=256m",
        "dynamicAllocation.schedulerBacklogTimeout=200ms", "tls.certFile=server.pem",
        "tls.keyFile=server.key", "tls.caFile=ca.pem"}) {
    command += std::string(" --conf ") + conf;
  }
  const auto result = testing_support::runCommand({"sh", "-c", command},
                                                  (dir.path() / "tide-run.log").string(), 120s);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("status page https://127.0.0.1:"));
  EXPECT_EQ(readFile(output / "part-0"), "from-map-0\nfrom-map-1\n");
  // Paths only: no key material reaches the output.
  EXPECT_THAT(result.output, testing::Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(TlsIntegrationTest, TideRunWithACertificateButNoKeyExits2NamingBothKeys) {
  const auto result = testing_support::runCommand(
      {std::string(TIDE_BIN_DIR) + "/tide", "run",
       dir.writeFile("job.json", shuffleJob((dir.path() / "out").string(), "")), "--conf",
       "tls.certFile=" + tls.certFile},
      (dir.path() / "tide-run.log").string(), 60s);
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("tls.certFile=" + tls.certFile));
  EXPECT_THAT(result.output, HasSubstr("tls.keyFile is not set"));
}

TEST_F(TlsIntegrationTest, DaemonsRefuseAnUnreadableCaFileNamingIt) {
  const std::string missing = (dir.path() / "no-such-ca.pem").string();
  for (const char* daemon : {"tide-rm", "tide-nm"}) {
    SCOPED_TRACE(daemon);
    const auto result = testing_support::runCommand(
        {std::string(TIDE_BIN_DIR) + "/" + daemon, "--conf", "rm.port=0", "--conf", "nm.port=0",
         "--conf", "rm.secretFile=" + (dir.path() / "rm.secret").string(), "--conf",
         "tls.caFile=" + missing},
        (dir.path() / (std::string(daemon) + ".log")).string(), 30s);
    EXPECT_EQ(result.status, 2) << result.output;
    EXPECT_THAT(result.output, HasSubstr("cannot read " + missing));
  }
}

}  // namespace
}  // namespace tide::deploy
