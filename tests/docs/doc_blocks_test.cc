// The command blocks of README.md and docs/ run as written (issue 14, item 10). A fenced block
// whose opening line is "```sh doctest" is run by /bin/sh -e in a fresh directory that holds
// the checkout's examples/, scripts/ and deploy/ and the build's bin/ as build/bin, with HOME
// there, build/bin first on PATH, and every "8088" in the block replaced by a free port (the
// tests run side by side). Whatever the block leaves running is killed after it, and checked
// gone by walking /proc. Every other "```sh" block must be listed in kNotRunnable with the
// reason it cannot run on one machine, so that no new block goes unchecked by accident.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/child_process.h"
#include "tests/support/files.h"
#include "tests/support/polling.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const fs::path kSource = TIDE_SOURCE_DIR;
const fs::path kBin = TIDE_BIN_DIR;

// "```sh" blocks that cannot run on one machine, by their file and first line.
const std::map<std::string, std::string> kNotRunnable = {
    {"README.md: # 1. install the dependencies, build, and run the example job on an embedded "
     "cluster",
     "installs packages and builds: what CI itself runs first"},
    {"README.md: scripts/sanitize               # both; or `scripts/sanitize asan`, "
     "`scripts/sanitize tsan`",
     "the sanitizer builds take most of an hour: CI runs them (scripts/test)"},
    {"README.md: build/bin/tide-rm --conf rm.host=10.0.0.1 &                         # one host",
     "a cluster on other hosts (10.0.0.1, 10.0.0.2)"},
    {"README.md: export SLURM_JWT=...        # scontrol token username=$USER lifespan=86400 (or "
     "--conf slurm.tokenFile=FILE)",
     "a Slurm cluster on another host (slurm-head)"},
    {"docs/rm.md: tide app list [--state RUNNING,ACCEPTED]   # id, name, state, final status, "
     "queue, start, tracking URL",
     "needs a running application's id (tests/cli/tide_app_test.cc runs these commands)"},
    {"docs/security.md: # on the RM host, as its operator: a token for users (or --node for node "
     "managers)",
     "a cluster on another host (10.0.0.1)"},
    {"docs/security.md: tide-rm --conf rm.host=10.0.0.1 --conf "
     "tls.certFile=/etc/tide/tls/host.pem \\",
     "a cluster on other hosts with certificates under /etc/tide"},
    {"docs/slurm.md: deploy/slurm/local-slurm start          # installs slurm-wlm, slurmrestd, "
     "munge; prints SLURM_JWT=...",
     "installs and starts Slurm as root (tests/slurm runs it in CI)"},
};

struct Block {
  std::string where;  // "file:line" of the opening fence
  std::string key;    // "file: first line", as kNotRunnable names it
  std::string text;
  bool runnable = false;
};

std::vector<Block> shellBlocks() {
  std::vector<fs::path> files = {kSource / "README.md"};
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Block> blocks;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::optional<Block> open;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (open) {
        if (line.rfind("```", 0) == 0) {
          blocks.push_back(*open);
          open.reset();
        } else {
          if (open->text.empty()) open->key += line;
          open->text += line + "\n";
        }
      } else if (line == "```sh" || line == "```sh doctest") {
        const std::string name = fs::relative(file, kSource).string();
        open = Block{name + ":" + std::to_string(number), name + ": ", "", line == "```sh doctest"};
      }
    }
  }
  return blocks;
}

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

TEST(DocBlocks, EveryShellBlockRunsOrSaysWhyItCannot) {
  int runnable = 0;
  std::set<std::string> listed;
  for (const Block& block : shellBlocks()) {
    if (block.runnable) {
      ++runnable;
      EXPECT_EQ(kNotRunnable.count(block.key), 0u) << block.where << " is marked doctest";
      continue;
    }
    listed.insert(block.key);
    EXPECT_EQ(kNotRunnable.count(block.key), 1u)
        << block.where << ": a ```sh block that no test runs; mark it ```sh doctest, or add it "
        << "to kNotRunnable with the reason it cannot run on one machine:\n"
        << block.key << "\n"
        << block.text;
  }
  for (const auto& [where, why] : kNotRunnable) {
    EXPECT_EQ(listed.count(where), 1u) << "no ```sh block starts with " << where;
  }
  EXPECT_GE(runnable, 3);
}

class DocBlock : public ::testing::TestWithParam<Block> {};

TEST_P(DocBlock, RunsAsWritten) {
  const Block& block = GetParam();
  testing_support::TempDir dir;
  fs::create_directories(dir.path() / "build");
  fs::create_directory_symlink(kBin, dir.path() / "build" / "bin");
  for (const char* name : {"examples", "scripts", "deploy"}) {
    fs::create_directory_symlink(kSource / name, dir.path() / name);
  }
  const std::string port = std::to_string(freePort());
  const std::string script = replaceAll(block.text, "8088", port);
  dir.writeFile("block.sh", script);
  const char* path = getenv("PATH");
  ChildSpec spec;
  spec.argv = {"/bin/sh",          "-e", "-c", "cd \"$1\" && exec /bin/sh -e ./block.sh", "sh",
               dir.path().string()};
  spec.environment = {{"HOME", dir.path().string()},
                      {"PATH", (dir.path() / "build" / "bin").string() + ":" +
                                   std::string(path ? path : "/usr/bin:/bin")}};
  spec.logPath = (dir.path() / "block.log").string();
  spec.newProcessGroup = true;
  std::optional<int> status;
  {
    ChildProcess shell(spec);
    status = shell.waitFor(240s);
    // What it started in the background (daemons) is in its group: stop them all.
    ::kill(-shell.pid(), SIGTERM);
    testing_support::eventually([&] { return testing_support::processesUnder(dir.path()).empty(); },
                                20s, 50ms);
  }
  const std::string log = testing_support::readFile(dir.path() / "block.log");
  ASSERT_TRUE(status.has_value()) << block.where << " did not end in 240 s:\n" << log;
  EXPECT_EQ(*status, 0) << block.where << " (8088 -> " << port << "):\n" << script << "\n" << log;
  EXPECT_EQ(testing_support::processesUnder(dir.path()), std::vector<pid_t>{}) << block.where;
}

std::vector<Block> runnableBlocks() {
  std::vector<Block> runnable;
  for (const Block& block : shellBlocks()) {
    if (block.runnable) runnable.push_back(block);
  }
  return runnable;
}

INSTANTIATE_TEST_SUITE_P(ReadmeAndDocs, DocBlock, ::testing::ValuesIn(runnableBlocks()),
                         [](const ::testing::TestParamInfo<Block>& info) {
                           std::string name;
                           for (char c : info.param.where) name += std::isalnum(c) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace tide
