// Startup failures say why (issue 14, item 7): a taken ui.port moves the AM to the next port;
// an AM that exits before registering leaves the end of its stderr in the RM's diagnostics,
// which `tide run` and `tide submit --wait` print; `tide run` names a missing sibling binary.
// Real processes on 127.0.0.1.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/am_cluster_test.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::eventually;

// A TCP port on 127.0.0.1 held (bound and listening) for the life of this object.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot hold a port";
    }
    port_ = ntohs(address.sin_port);
  }
  ~HeldPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A port that was free a moment ago.
int freePort() {
  HeldPort held;
  return held.port();
}

int portOf(const std::string& url) {
  const size_t colon = url.rfind(':');
  return std::stoi(url.substr(colon + 1));
}

constexpr char kSessionJob[] = R"({"name": "s", "stages": [
    {"id": "s", "tasks": 1, "builtin": "noop"}]})";

class StartupTest : public testing_support::AmClusterTest {};

TEST_F(StartupTest, TwoApplicationsOnTheSameUiPortBothComeUp) {
  startCluster(1, 4);
  const int port = freePort();
  const Conf conf = {{"ui.port", std::to_string(port)}};
  submit(kSessionJob, conf, /*session=*/true);
  const std::string firstApp = appId;
  const std::string firstUrl = trackingUrl;
  submit(kSessionJob, conf, /*session=*/true);
  EXPECT_NE(appId, firstApp);
  EXPECT_EQ(portOf(firstUrl), port);
  EXPECT_GT(portOf(trackingUrl), port);
  EXPECT_LE(portOf(trackingUrl), port + 16);
  // Both serve their own status.
  EXPECT_TRUE(rest::HttpClient(firstUrl).getJson("api/v1/status").IsObject());
  EXPECT_TRUE(status().IsObject());
  client->kill(firstApp);
}

TEST_F(StartupTest, WithoutRetriesATakenPortFailsTheAmAndSubmitWaitSaysWhy) {
  startCluster(1, 4);
  HeldPort held;
  const std::string job = dir.writeFile("job.json", kSessionJob);
  // tide submit authenticates with the token in its environment.
  ::setenv("TIDE_RM_TOKEN", cluster->adminToken().c_str(), 1);
  auto result = testing_support::runCommand(
      {std::string(TIDE_BIN_DIR) + "/tide", "submit", "--master", cluster->rmAddress(), job,
       "--wait", "--conf", "ui.port=" + std::to_string(held.port()), "--conf", "port.maxRetries=0",
       "--conf", "am.maxAttempts=1", "--conf", "am.memory=256m"},
      (dir.path() / "submit.log").string(), 120s);
  ::unsetenv("TIDE_RM_TOKEN");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("without unregistering"));
  EXPECT_THAT(result.output, HasSubstr("last lines of its stderr:"));
  EXPECT_THAT(result.output, HasSubstr("cannot bind 127.0.0.1:" + std::to_string(held.port()) +
                                       ": Address already in use"));
}

class TideRunStartupTest : public ::testing::Test {
 protected:
  testing_support::CommandResult tideRun(const std::string& tide, std::vector<std::string> args) {
    args.insert(args.begin(), {tide, "run"});
    return testing_support::runCommand(deploy::withConf(args, {{"nm.cores", "2"},
                                                               {"nm.memory", "2g"},
                                                               {"executor.memory", "256m"},
                                                               {"am.memory", "256m"},
                                                               {"am.maxAttempts", "1"}}),
                                       (dir.path() / "tide-run.log").string(), 120s);
  }
  const std::string tide = std::string(TIDE_BIN_DIR) + "/tide";
  testing_support::TempDir dir;
};

TEST_F(TideRunStartupTest, ATakenUiPortMovesTheAmToTheNextPort) {
  HeldPort held;
  const std::string job = dir.writeFile("job.json", kSessionJob);
  auto result = tideRun(tide, {job, "--conf", "ui.port=" + std::to_string(held.port())});
  EXPECT_EQ(result.status, 0) << result.output;
  // The page it announces is on a later port.
  const std::regex page("tide: status page http://127\\.0\\.0\\.1:([0-9]+)/\\?token=");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(result.output, match, page)) << result.output;
  EXPECT_GT(std::stoi(match[1].str()), held.port());
  EXPECT_LE(std::stoi(match[1].str()), held.port() + 16);
}

TEST_F(TideRunStartupTest, AnAmThatCannotStartPrintsTheEndOfItsStderr) {
  HeldPort held;
  const std::string job = dir.writeFile("job.json", kSessionJob);
  auto result = tideRun(tide, {job, "--conf", "ui.port=" + std::to_string(held.port()), "--conf",
                               "port.maxRetries=0"});
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("exited with code 1 without unregistering"));
  EXPECT_THAT(result.output, HasSubstr("attempt 1 of 1\nlast lines of its stderr:\n"));
  EXPECT_THAT(result.output, HasSubstr("cannot bind 127.0.0.1:" + std::to_string(held.port()) +
                                       ": Address already in use"));
}

TEST_F(TideRunStartupTest, AMissingSiblingBinaryIsNamedBeforeAnythingStarts) {
  // A copy of tide in a directory of its own, with every sibling but tide-am.
  const std::filesystem::path bin = dir.path() / "bin";
  std::filesystem::create_directory(bin);
  std::filesystem::copy_file(tide, bin / "tide");
  for (const char* name : {"tide-rm", "tide-nm", "tide-executor"}) {
    std::filesystem::create_symlink(std::string(TIDE_BIN_DIR) + "/" + name, bin / name);
  }
  const std::string job = dir.writeFile("job.json", kSessionJob);
  auto result = tideRun((bin / "tide").string(), {job});
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("tide run: cannot run: tide-am is missing from " + bin.string()));
  EXPECT_THAT(result.output, Not(HasSubstr("starting an embedded cluster")));

  std::filesystem::remove(bin / "tide-nm");
  result = tideRun((bin / "tide").string(), {job});
  EXPECT_THAT(result.output, HasSubstr("tide-nm, tide-am are missing from " + bin.string()));
}

}  // namespace
}  // namespace tide
