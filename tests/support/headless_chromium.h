#pragma once

// Headless Chromium, for the tests that look at tide's web page in a real browser.

#include <filesystem>
#include <string>
#include <vector>

namespace tide::testing_support {

// The chromium a browser test runs; "" after skipping the test (TIDE_SKIP_BROWSER_TESTS is
// set) or failing it (no chromium installed; `purpose` says what the test needs it for). A
// test returns at once on "".
std::string chromiumForTest(const std::string& purpose);

// Runs headless chromium (bounded) on `url` with a fresh profile under `dir`, its files named
// after `tag`, `extraArgs` (--dump-dom, --screenshot=...) and a virtual time budget of
// `budgetMs`; its stdout goes to `outFile`. A test failure with chromium's log when it fails.
void runHeadlessChromium(const std::string& chromium, const std::filesystem::path& dir,
                         const std::string& tag, const std::vector<std::string>& extraArgs,
                         const std::string& url, int budgetMs, const std::string& outFile);

}  // namespace tide::testing_support
