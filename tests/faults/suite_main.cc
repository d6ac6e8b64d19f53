// fault_suite: the fault suite's one line (tests/faults/README.md).
//
//   fault_suite [--repeat N] [GTEST_ARGS...]  runs fault_tests and faults_tests (next to it),
//                                             N times each, and prints the line
//   fault_suite --reset                       empties the records file (ctest, before)
//   fault_suite --summary                     prints the line for the records file (ctest,
//                                             after; also written to summary.txt beside it)
//
// Exits non-zero when a test binary failed, or when a job was wrong, an output was committed
// twice or a process was left.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/child_process.h"
#include "tests/faults/tally.h"

namespace {

using tide::faults::faultRecordsFile;
using tide::faults::faultSummaryLine;
using tide::faults::faultTotalsClean;
using tide::faults::readFaultTotals;

int summary(const std::string& file) {
  const tide::faults::FaultTotals totals = readFaultTotals(file);
  std::cout << faultSummaryLine(totals) << std::endl;
  if (totals.records == 0) {
    std::cerr << "fault_suite: no fault test recorded anything in " << file << std::endl;
    return 1;
  }
  return faultTotalsClean(totals) ? 0 : 1;
}

int runAll(int repeat, const std::vector<std::string>& gtestArgs) {
  // A records file of this run's own (TMPDIR is honoured), so a ctest run at the same time
  // does not mix in.
  std::string path =
      (std::filesystem::temp_directory_path() / "tide-fault-records-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) {
    std::perror("fault_suite: mkstemp");
    return 2;
  }
  ::close(fd);
  ::setenv("TIDE_FAULT_RECORDS", path.c_str(), 1);
  const std::string file = faultRecordsFile();
  bool binariesPassed = true;
  for (const char* binary : {"fault_tests", "faults_tests"}) {
    tide::ChildSpec spec;
    spec.argv = {tide::selfDirectory() + "/" + binary, "--gtest_repeat=" + std::to_string(repeat)};
    spec.argv.insert(spec.argv.end(), gtestArgs.begin(), gtestArgs.end());
    spec.newProcessGroup = false;  // Ctrl-C reaches the tests too
    tide::ChildProcess child(spec);
    const std::optional<int> status = child.waitFor(std::chrono::hours(24));
    if (!status || *status != 0) {
      std::cerr << "fault_suite: " << binary << " failed (exit status " << status.value_or(-1)
                << ")" << std::endl;
      binariesPassed = false;
    }
  }
  const int result = summary(file);
  std::filesystem::remove(file);
  return binariesPassed ? result : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--reset") {
    std::error_code ignored;
    std::filesystem::remove(faultRecordsFile(), ignored);
    return 0;
  }
  if (args.size() == 1 && args[0] == "--summary") {
    // Also next to the records, for whoever reads a ctest run afterwards.
    const std::string file = faultRecordsFile();
    std::ofstream(std::filesystem::path(file).parent_path() / "summary.txt")
        << faultSummaryLine(readFaultTotals(file)) << "\n";
    return summary(file);
  }
  int repeat = 1;
  std::vector<std::string> gtestArgs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--repeat" && i + 1 < args.size()) {
      repeat = std::atoi(args[++i].c_str());
      if (repeat < 1) {
        std::cerr << "fault_suite: --repeat '" << args[i] << "': expected a count of 1 or more"
                  << std::endl;
        return 2;
      }
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::cout << "usage: fault_suite [--repeat N] [GTEST_ARGS...] | --reset | --summary\n";
      return 0;
    } else {
      gtestArgs.push_back(args[i]);
    }
  }
  return runAll(repeat, gtestArgs);
}
