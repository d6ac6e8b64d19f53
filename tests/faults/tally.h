#pragma once

// The fault suite's one line (issue 11): every test that injects a fault appends a record of
// what it found afterwards to one records file, whichever binary it runs in and however the
// tests are spread over processes (ctest runs each test in a process of its own); the
// `fault_suite` program adds the records up and prints the line:
//
//   fault suite: F faults injected, C of J jobs correct, D duplicate commits, L processes left
//
// The file is $TIDE_FAULT_RECORDS when set (the `fault_suite` runner sets it), else
// <build>/faults/records.txt (ctest: reset before the suite's tests, summed after them).

#include <string>

namespace tide::faults {

// What a test found, and (summed) what the suite found.
struct FaultCounts {
  int faults = 0;            // faults injected
  int jobs = 0;              // jobs (or applications) whose outcome the test checked
  int jobsCorrect = 0;       // of those, with the right result (or stopped, when stopping is right)
  int duplicateCommits = 0;  // outputs committed more than once, half-written or unexpected
  int processesLeft = 0;     // processes of the run found in /proc after the fault
};

struct FaultRecord : FaultCounts {
  std::string test;  // the test's full name
};

struct FaultTotals : FaultCounts {
  int records = 0;
};

// Where the records go.
std::string faultRecordsFile();

// Appends one line to the records file (one write() to a file opened O_APPEND, so records of
// tests running at the same time do not mix).
void appendFaultRecord(const FaultRecord& record);

// The sums over a records file (0 when it does not exist).
FaultTotals readFaultTotals(const std::string& file);

// "fault suite: F faults injected, C of J jobs correct, D duplicate commits, L processes left"
std::string faultSummaryLine(const FaultTotals& totals);

// Whether the totals are what the suite demands: every job correct, no duplicate commit, no
// process left.
bool faultTotalsClean(const FaultTotals& totals);

// A test's record, written once at the end of the test (when it injected a fault or checked a
// job). The gtest fixtures own one.
class FaultTally {
 public:
  void injected(int n = 1) { record_.faults += n; }
  void jobChecked(bool correct) {
    ++record_.jobs;
    record_.jobsCorrect += correct ? 1 : 0;
  }
  void duplicates(int n) { record_.duplicateCommits += n; }
  void left(int n) { record_.processesLeft += n; }
  // Appends the record (with the current test's name) unless nothing was noted; idempotent.
  void flush();

 private:
  FaultRecord record_;
  bool flushed_ = false;
};

}  // namespace tide::faults
