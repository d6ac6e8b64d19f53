#include "tests/faults/tally.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tide::faults {

std::string faultRecordsFile() {
  if (const char* file = std::getenv("TIDE_FAULT_RECORDS"); file != nullptr && *file != '\0') {
    return file;
  }
  return TIDE_FAULT_RECORDS_DEFAULT;
}

void appendFaultRecord(const FaultRecord& record) {
  std::ostringstream line;
  line << "faults=" << record.faults << " jobs=" << record.jobs << " correct=" << record.jobsCorrect
       << " duplicates=" << record.duplicateCommits << " left=" << record.processesLeft
       << " test=" << record.test << "\n";
  const std::string file = faultRecordsFile();
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ignored);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    ADD_FAILURE() << "cannot open the fault records file " << file << ": " << std::strerror(errno);
    return;
  }
  const std::string text = line.str();
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    ADD_FAILURE() << "cannot write to the fault records file " << file << ": "
                  << std::strerror(errno);
  }
  ::close(fd);
}

FaultTotals readFaultTotals(const std::string& file) {
  FaultTotals totals;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    bool any = false;
    while (fields >> field) {
      const size_t eq = field.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = field.substr(0, eq);
      if (key == "test") break;
      const int value = std::atoi(field.c_str() + eq + 1);
      any = true;
      if (key == "faults") totals.faults += value;
      if (key == "jobs") totals.jobs += value;
      if (key == "correct") totals.jobsCorrect += value;
      if (key == "duplicates") totals.duplicateCommits += value;
      if (key == "left") totals.processesLeft += value;
    }
    totals.records += any ? 1 : 0;
  }
  return totals;
}

std::string faultSummaryLine(const FaultTotals& totals) {
  std::ostringstream line;
  line << "fault suite: " << totals.faults << " faults injected, " << totals.jobsCorrect << " of "
       << totals.jobs << " jobs correct, " << totals.duplicateCommits << " duplicate commits, "
       << totals.processesLeft << " processes left";
  return line.str();
}

bool faultTotalsClean(const FaultTotals& totals) {
  return totals.jobsCorrect == totals.jobs && totals.duplicateCommits == 0 &&
         totals.processesLeft == 0;
}

void FaultTally::flush() {
  if (flushed_) return;
  flushed_ = true;
  if (record_.faults == 0 && record_.jobs == 0) return;
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    record_.test = std::string(info->test_suite_name()) + "." + info->name();
  }
  appendFaultRecord(record_);
}

}  // namespace tide::faults
