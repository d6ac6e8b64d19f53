#include "tests/support/headless_chromium.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "tests/support/files.h"
#include "tests/support/processes.h"

namespace tide::testing_support {
namespace {

// Marks the running test skipped (GTEST_SKIP returns from a void function only).
void skipTest() {
  GTEST_SKIP() << "TIDE_SKIP_BROWSER_TESTS is set";
}

}  // namespace

std::string chromiumForTest(const std::string& purpose) {
  if (std::getenv("TIDE_SKIP_BROWSER_TESTS") != nullptr) {
    skipTest();
    return "";
  }
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
      const std::string path = std::string(dir) + "/" + name;
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
  }
  ADD_FAILURE() << "chromium is not installed: " << purpose
                << ". Install it with scripts/install-deps (Debian package 'chromium'), or set "
                   "TIDE_SKIP_BROWSER_TESTS=1 to skip this test";
  return "";
}

void runHeadlessChromium(const std::string& chromium, const std::filesystem::path& dir,
                         const std::string& tag, const std::vector<std::string>& extraArgs,
                         const std::string& url, int budgetMs, const std::string& outFile) {
  const std::string log = (dir / ("chromium-" + tag + ".log")).string();
  // sh only redirects chromium's stdout and stderr: the words go as arguments, unquoted.
  std::vector<std::string> argv = {
      "/bin/sh", "-c",    "out=$1; err=$2; shift 2; exec \"$@\" > \"$out\" 2> \"$err\"",
      "sh",      outFile, log,
      chromium};
  for (const char* flag :
       {"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage"}) {
    argv.emplace_back(flag);
  }
  argv.push_back("--virtual-time-budget=" + std::to_string(budgetMs));
  argv.push_back("--user-data-dir=" + (dir / ("chromium-profile-" + tag)).string());
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  argv.push_back(url);
  const CommandResult result =
      runCommand(argv, (dir / ("chromium-sh-" + tag + ".log")).string(), std::chrono::seconds(90));
  EXPECT_EQ(result.status, 0) << "chromium failed:\n" << readFile(log);
}

}  // namespace tide::testing_support
