// The on-disk container records of tide-nm (container_records.h): the versioned format, clear
// errors for records it cannot use, the exit file, and the pure recovery decision.

#include "deploy/nm/container_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "deploy/nm/container_exit_file.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace tide::nm {
namespace {

using ::testing::HasSubstr;

ContainerRecord sampleRecord() {
  ContainerRecord record;
  record.containerId = "container_1_0001_01_000002";
  record.applicationId = "application_1_0001";
  record.token = "abc123";
  record.resource = {512, 2};
  record.workDir = "/work/application_1_0001/container_1_0001_01_000002";
  record.pid = 4242;
  record.startTimeTicks = 987654321;
  record.bootId = "boot-1";
  return record;
}

std::string errorOf(std::string_view text, const std::string& source = "f.json") {
  try {
    parseContainerRecord(text, source);
  } catch (const ContainerRecordError& e) {
    return e.what();
  }
  return "";
}

ProcessInfo processInfo(pid_t pid, uint64_t startTicks, char state = 'S') {
  ProcessInfo info;
  info.pid = pid;
  info.startTimeTicks = startTicks;
  info.state = state;
  return info;
}

TEST(ContainerRecordFormatTest, ARecordReadsBackAsWritten) {
  ContainerRecord record = sampleRecord();
  record.cgroupPath = "/sys/fs/cgroup/tide-nm-8042/c2";
  const ContainerRecord read = parseContainerRecord(formatContainerRecord(record), "r");
  EXPECT_EQ(read.version, kContainerRecordVersion);
  EXPECT_EQ(read.containerId, record.containerId);
  EXPECT_EQ(read.applicationId, record.applicationId);
  EXPECT_EQ(read.token, record.token);
  EXPECT_EQ(read.resource.memoryMb, 512);
  EXPECT_EQ(read.resource.vCores, 2);
  EXPECT_EQ(read.workDir, record.workDir);
  EXPECT_EQ(read.cgroupPath, record.cgroupPath);
  EXPECT_EQ(read.pid, 4242);
  EXPECT_EQ(read.startTimeTicks, 987654321u);
  EXPECT_EQ(read.bootId, "boot-1");
  EXPECT_FALSE(read.completion.has_value());

  record.completion = ContainerRecord::Completion{143, "stopped on request"};
  const ContainerRecord completed = parseContainerRecord(formatContainerRecord(record), "r");
  ASSERT_TRUE(completed.completion.has_value());
  EXPECT_EQ(completed.completion->exitStatus, 143);
  EXPECT_EQ(completed.completion->diagnostics, "stopped on request");
}

TEST(ContainerRecordFormatTest, TheFormatIsVersionOneJson) {
  const std::string text = formatContainerRecord(sampleRecord());
  EXPECT_EQ(text.rfind("{\"version\":1,", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(ContainerRecordFormatTest, ARecordOfANewerVersionIsAClearError) {
  std::string text = formatContainerRecord(sampleRecord());
  text.replace(text.find("\"version\":1"), 11, "\"version\":2");
  const std::string error = errorOf(text, "/w/.containers/c.json");
  EXPECT_THAT(error, HasSubstr("/w/.containers/c.json"));
  EXPECT_THAT(error, HasSubstr("format version 2 was written by a newer tide-nm"));
  EXPECT_THAT(error, HasSubstr("reads version 1"));
}

TEST(ContainerRecordFormatTest, AnUnreadableRecordIsAClearErrorNamingWhatIsWrong) {
  EXPECT_THAT(errorOf("not json", "a.json"),
              HasSubstr("container record a.json cannot be read: malformed JSON"));
  EXPECT_THAT(errorOf(R"({"version":1})"), HasSubstr("'containerId'"));
  EXPECT_THAT(errorOf(R"({"containerId":"c"})"), HasSubstr("'version'"));
  EXPECT_THAT(errorOf(R"({"version":0})"), HasSubstr("format version 0"));

  std::string noToken = formatContainerRecord(sampleRecord());
  noToken.erase(noToken.find("\"token\""), std::string("\"token\":\"abc123\",").size());
  EXPECT_THAT(errorOf(noToken), HasSubstr("'token'"));

  std::string badPid = formatContainerRecord(sampleRecord());
  badPid.replace(badPid.find("\"pid\":4242"), 10, "\"pid\":1");
  EXPECT_THAT(errorOf(badPid), HasSubstr("'pid'"));

  // Torn in the middle (what fsync and rename prevent, but a hand-edited file may be).
  const std::string whole = formatContainerRecord(sampleRecord());
  EXPECT_THAT(errorOf(whole.substr(0, whole.size() / 2)), HasSubstr("cannot be read"));
}

TEST(ContainerExitFileTest, ExitsAndSignalsReadBack) {
  EXPECT_EQ(formatExitFile(W_EXITCODE(5, 0)), "1 exited 5\n");
  EXPECT_EQ(formatExitFile(W_EXITCODE(0, 9)), "1 signaled 9\n");
  for (int status : {W_EXITCODE(0, 0), W_EXITCODE(5, 0), W_EXITCODE(255, 0), W_EXITCODE(0, 15)}) {
    const auto read = parseExitFile(formatExitFile(status));
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(*read, status);
  }
  EXPECT_FALSE(parseExitFile("").has_value());
  EXPECT_FALSE(parseExitFile("1 exited").has_value());
  EXPECT_FALSE(parseExitFile("2 exited 3\n").has_value());
  EXPECT_FALSE(parseExitFile("1 exited 300\n").has_value());
  EXPECT_FALSE(parseExitFile("1 exited 3 more\n").has_value());
}

TEST(RecoveryDecisionTest, TheSameProcessIsAdopted) {
  const ContainerRecord record = sampleRecord();
  const RecoveryDecision decision = decideRecovery(record, "boot-1", processInfo(4242, 987654321));
  EXPECT_EQ(decision.action, RecoveryAction::kAdopt);
  EXPECT_THAT(decision.why, HasSubstr("still runs"));
}

TEST(RecoveryDecisionTest, ARecycledPidIsNeverAdopted) {
  const RecoveryDecision decision =
      decideRecovery(sampleRecord(), "boot-1", processInfo(4242, 987654321 + 500));
  EXPECT_EQ(decision.action, RecoveryAction::kEndedWhileNmDown);
  EXPECT_THAT(decision.why, HasSubstr("now belongs to another process"));
  EXPECT_FALSE(isRecordedProcess(sampleRecord(), "boot-1", processInfo(4242, 987654321 + 500)));
}

TEST(RecoveryDecisionTest, AGoneZombieOrOtherBootProcessEndedWhileTheManagerWasDown) {
  EXPECT_EQ(decideRecovery(sampleRecord(), "boot-1", std::nullopt).action,
            RecoveryAction::kEndedWhileNmDown);
  EXPECT_EQ(decideRecovery(sampleRecord(), "boot-1", processInfo(4242, 987654321, 'Z')).action,
            RecoveryAction::kEndedWhileNmDown);
  const RecoveryDecision rebooted =
      decideRecovery(sampleRecord(), "boot-2", processInfo(4242, 987654321));
  EXPECT_EQ(rebooted.action, RecoveryAction::kEndedWhileNmDown);
  EXPECT_THAT(rebooted.why, HasSubstr("machine restarted"));
  ContainerRecord noStart = sampleRecord();
  noStart.startTimeTicks = 0;  // unknown start time: never trusted
  EXPECT_NE(decideRecovery(noStart, "boot-1", processInfo(4242, 0)).action, RecoveryAction::kAdopt);
}

TEST(RecoveryDecisionTest, ACompletedRecordIsReportedAsItCompleted) {
  ContainerRecord record = sampleRecord();
  record.completion = ContainerRecord::Completion{0, "exited with code 0"};
  EXPECT_EQ(decideRecovery(record, "boot-1", processInfo(4242, 987654321)).action,
            RecoveryAction::kReportCompleted);
}

class ContainerRecordsTest : public ::testing::Test {
 protected:
  std::string directory() const { return (dir_.path() / ".containers").string(); }
  testing_support::TempDir dir_;
};

TEST_F(ContainerRecordsTest, RecordsAreWrittenReadAndErasedWithTheirExitFile) {
  ContainerRecords records(directory());
  records.ensureDirectory();
  EXPECT_EQ(std::filesystem::status(directory()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  ASSERT_EQ(records.write(sampleRecord()), "");
  std::ofstream(records.exitFile(sampleRecord().containerId)) << "1 exited 3\n";
  const ContainerRecords::Contents contents = records.load();
  ASSERT_EQ(contents.records.size(), 1u);
  EXPECT_EQ(contents.records[0].containerId, sampleRecord().containerId);
  EXPECT_EQ(records.readExitStatus(sampleRecord().containerId), W_EXITCODE(3, 0));
  EXPECT_FALSE(
      std::filesystem::exists(directory() + "/" + sampleRecord().containerId + ".json.tmp"));

  records.erase(sampleRecord().containerId);
  EXPECT_TRUE(records.load().records.empty());
  EXPECT_FALSE(records.readExitStatus(sampleRecord().containerId).has_value());
}

TEST_F(ContainerRecordsTest, LoadNamesTheFileOfANewerOrUnreadableRecord) {
  ContainerRecords records(directory());
  records.ensureDirectory();
  ASSERT_EQ(records.write(sampleRecord()), "");
  const std::string future = directory() + "/container_future.json";
  std::ofstream(future) << R"({"version":7,"containerId":"container_future"})";
  try {
    records.load();
    ADD_FAILURE() << "a record of version 7 was accepted";
  } catch (const ContainerRecordError& e) {
    EXPECT_THAT(e.what(), HasSubstr(future));
    EXPECT_THAT(e.what(), HasSubstr("format version 7 was written by a newer tide-nm"));
  }
  std::ofstream(future, std::ios::trunc) << "{\"version\":1,";
  EXPECT_THROW(records.load(), ContainerRecordError);
}

TEST_F(ContainerRecordsTest, ARecordMustNameTheContainerOfItsFile) {
  ContainerRecords records(directory());
  records.ensureDirectory();
  std::ofstream(directory() + "/container_other.json") << formatContainerRecord(sampleRecord());
  try {
    records.load();
    ADD_FAILURE() << "a record under another container's name was accepted";
  } catch (const ContainerRecordError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not the one of its file name"));
  }
}

TEST_F(ContainerRecordsTest, AnUnfinishedWriteIsIgnoredAndLegacyRecordsAreListedApart) {
  ContainerRecords records(directory());
  records.ensureDirectory();
  std::ofstream(directory() + "/container_x.json.tmp") << "{\"version\":1,\"cont";
  std::ofstream(directory() + "/container_old.pgid") << "4242 boot-1 77\n";
  const ContainerRecords::Contents contents = records.load();
  EXPECT_TRUE(contents.records.empty());
  ASSERT_EQ(contents.legacy.size(), 1u);
  EXPECT_EQ(contents.legacy[0].pid, 4242);
  EXPECT_EQ(contents.legacy[0].bootId, "boot-1");
  EXPECT_EQ(contents.legacy[0].startTimeTicks, 77u);
  EXPECT_FALSE(std::filesystem::exists(directory() + "/container_x.json.tmp"));
}

}  // namespace
}  // namespace tide::nm
