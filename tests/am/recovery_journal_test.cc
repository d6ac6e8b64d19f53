// The AM's recovery journal (am/recovery/recovery_journal.h): encode and replay are pure and
// tested on strings; the file part on a temporary directory. And the scheduler's side of a
// replay: committed tasks are not offered again, attempt numbers and task ids continue.

#include "am/recovery/recovery_journal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "am/scheduler/task_scheduler.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;
using Kind = JournalRecord::Kind;

std::vector<JournalRecord> sampleRecords() {
  return {
      JournalRecord::attemptStarted(1, "appattempt_1_0001_000001"),
      JournalRecord::jobAccepted(
          "job-1", R"({"name":"j","stages":[{"id":"map","tasks":3,"command":["true"]}]})"),
      JournalRecord::executorStarted("e1", "container_1_0001_01_000002"),
      JournalRecord::executorStarted("e1", "container_1_0001_01_000002", "n1", "http://h:1"),
      JournalRecord::taskLaunched(1, "job-1", "map", 0, 0, "e1"),
      JournalRecord::taskLaunched(2, "job-1", "map", 1, 0, "e1"),
      JournalRecord::taskCommitted(1, "job-1", "map", 0, 0, "e1", "n1", 120, {{0, 512}, {1, 80}}),
      JournalRecord::stageDone("job-1", "map"),
      JournalRecord::boundsChanged(0, 1, 2),
      JournalRecord::unpersisted("job-1/map"),
      JournalRecord::outputMigrated("job-1/map", 0, "e1", "e2", "n2")};
}

std::string encodeAll(const std::vector<JournalRecord>& records) {
  std::string text = encodeJournalHeader();
  for (const auto& r : records) text += encodeJournalRecord(r);
  return text;
}

TEST(RecoveryJournalTest, EveryRecordSurvivesEncodingAndDecoding) {
  const std::vector<JournalRecord> records = sampleRecords();
  const JournalContents decoded = decodeJournal(encodeAll(records), "j");
  EXPECT_EQ(decoded.version, kJournalVersion);
  EXPECT_FALSE(decoded.tornTail);
  ASSERT_EQ(decoded.records.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    // Encoding the decoded record gives the same line: nothing was lost on the way.
    EXPECT_EQ(encodeJournalRecord(decoded.records[i]), encodeJournalRecord(records[i])) << i;
  }
  const JournalRecord& commit = decoded.records[6];
  EXPECT_EQ(commit.kind, Kind::kCommit);
  EXPECT_EQ(commit.node, "n1");
  EXPECT_EQ(commit.durationMs, 120);
  ASSERT_EQ(commit.blocks.size(), 2u);
  EXPECT_EQ(commit.blocks[0].size, 512);
  EXPECT_EQ(decoded.records[3].url, "http://h:1");
  const JournalRecord& migrated = decoded.records[10];
  EXPECT_EQ(migrated.kind, Kind::kMigrate);
  EXPECT_EQ(migrated.stageId, "job-1/map");
  EXPECT_EQ(migrated.executorId, "e1");
  EXPECT_EQ(migrated.toExecutor, "e2");
  EXPECT_EQ(migrated.node, "n2");
  EXPECT_EQ(encodeJournalHeader(), "tide-am-journal 2\n");
}

TEST(RecoveryJournalTest, ATornLastLineIsDroppedAndTheRestKept) {
  const std::string whole = encodeAll(sampleRecords());
  // Cut inside the last record: no '\n', half a JSON object.
  const std::string torn = whole.substr(0, whole.size() - 7);
  const JournalContents decoded = decodeJournal(torn, "j");
  EXPECT_TRUE(decoded.tornTail);
  EXPECT_EQ(decoded.records.size(), sampleRecords().size() - 1);
  EXPECT_EQ(torn.substr(0, decoded.validLength).back(), '\n');
  // A torn header: nothing was recorded.
  const JournalContents header = decodeJournal("tide-am-jo", "j");
  EXPECT_TRUE(header.tornTail);
  EXPECT_TRUE(header.records.empty());
  EXPECT_TRUE(decodeJournal("", "j").records.empty());
}

TEST(RecoveryJournalTest, AFutureVersionIsAClearErrorNotAFreshStart) {
  try {
    decodeJournal("tide-am-journal 3\n{\"t\":\"attempt\",\"n\":1,\"id\":\"a\"}\n", "/s/am-journal");
    FAIL() << "a version 3 journal was read";
  } catch (const JournalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/s/am-journal:1: journal version 3"));
    EXPECT_THAT(e.what(), HasSubstr("reads version 2"));
  }
}

// Launches and commits (nearly every record) are read without a JSON document when written as
// the AM writes them; whatever else they hold is read by the JSON reader, with the same result.
TEST(RecoveryJournalTest, TaskRecordsReadTheSameWhateverTheirStrings) {
  for (const std::string& id :
       {std::string("plain"), std::string("quo\"te"), std::string("back\\slash"),
        std::string("\xc3\xa9t\xc3\xa9"), std::string("")}) {
    SCOPED_TRACE(id);
    const std::vector<JournalRecord> records = {
        JournalRecord::taskLaunched(123456789012, "job-" + id, id, 42, 3, "e" + id),
        JournalRecord::taskCommitted(7, "job-1", id, 0, 0, "e1", id, 9, {}),
        JournalRecord::taskCommitted(8, "job-1", id, 1, 2, "e1", "n1", 0, {{0, 5}, {3, 1}})};
    for (const JournalRecord& r : records) {
      std::string line = encodeJournalRecord(r);
      line.pop_back();
      EXPECT_EQ(encodeJournalRecord(decodeJournalRecord(line)), line + "\n");
    }
  }
  const std::string launch =
      R"({"t":"launch","task":1,"job":"j","stage":"s","index":2,"attempt":0,"executor":"e1"})";
  EXPECT_EQ(decodeJournalRecord(launch).index, 2);
  // What is not JSON stays refused, read either way.
  for (const std::string& bad :
       {launch + "x",
        std::string(R"({"t":"launch","task":01,"job":"j","stage":"s","index":2,)"
                    R"("attempt":0,"executor":"e1"})"),
        launch.substr(0, launch.size() - 1) + R"(,"task":2})",
        std::string(R"({"t":"launch","task":1,"job":"j)") + '\x01' +
            R"(","stage":"s","index":2,"attempt":0,"executor":"e1"})"}) {
    EXPECT_THROW(decodeJournalRecord(bad), std::exception) << bad;
  }
}

TEST(RecoveryJournalTest, AVersion1JournalOfAnOlderTideIsRead) {
  std::string text = encodeAll(sampleRecords());
  text.replace(0, text.find('\n'), "tide-am-journal 1");
  const JournalContents decoded = decodeJournal(text, "j");
  EXPECT_EQ(decoded.version, 1);
  EXPECT_EQ(decoded.records.size(), sampleRecords().size());
}

TEST(RecoveryJournalTest, CorruptionBeforeTheLastLineOrAMissingHeaderIsAnError) {
  std::string text = encodeAll(sampleRecords());
  text.insert(encodeJournalHeader().size(), "{\"t\":\"launch\"}\n");  // fields missing
  EXPECT_THROW(decodeJournal(text, "j"), JournalError);
  try {
    decodeJournal("{\"t\":\"attempt\"}\n", "j");
    FAIL();
  } catch (const JournalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a tide AM journal"));
  }
  EXPECT_THROW(decodeJournal(encodeJournalHeader() + "{\"t\":\"nope\"}\n{\"t\":\"nope\"}\n", "j"),
               JournalError);
}

TEST(RecoveryJournalTest, TheSummarySaysWhatTheNextAttemptContinuesFrom) {
  const JournalSummary summary = summarizeJournal(sampleRecords());
  EXPECT_EQ(summary.lastAttempt, 1);
  EXPECT_EQ(summary.highestTaskId, 2);
  EXPECT_EQ(summary.highestExecutorNumber, 1);
  EXPECT_EQ(summary.commits, 1);
  EXPECT_EQ(summary.jobs, 1);
  ASSERT_EQ(summary.unfinishedLaunches.size(), 1u);  // task 2 was running
  EXPECT_EQ(summary.unfinishedLaunches[0].taskId, 2);
  ASSERT_TRUE(summary.lastBounds);
  EXPECT_EQ(summary.lastBounds->maxExecutors, 2);
}

TEST(RecoveryJournalTest, TheFileIsReplayedThenAppendedAfterATornTailIsCut) {
  testing_support::TempDir dir;
  const std::string staging = (dir.path() / "app_1").string();
  {
    RecoveryJournal journal(staging);
    EXPECT_TRUE(journal.replayed().records.empty());
    for (const auto& r : sampleRecords()) journal.append(r);
    journal.sync();
  }
  // A crash in the middle of a write.
  {
    std::ofstream out(staging + "/am-journal", std::ios::app);
    out << "{\"t\":\"commit\",\"task\":2,";
  }
  {
    RecoveryJournal journal(staging);
    EXPECT_TRUE(journal.replayed().tornTail);
    EXPECT_EQ(journal.replayed().records.size(), sampleRecords().size());
    journal.append(JournalRecord::attemptStarted(2, "appattempt_1_0001_000002"));
    journal.sync();
  }
  RecoveryJournal again(staging);
  EXPECT_FALSE(again.replayed().tornTail);
  ASSERT_EQ(again.replayed().records.size(), sampleRecords().size() + 1);
  EXPECT_EQ(again.replayed().records.back().attemptNumber, 2);
  EXPECT_EQ(std::filesystem::status(staging).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  again.remove();
  EXPECT_FALSE(std::filesystem::exists(staging));
}

TEST(RecoveryJournalTest, AFutureVersionFileIsRefusedAndLeftAlone) {
  testing_support::TempDir dir;
  const std::string path = dir.writeFile("app/am-journal", "tide-am-journal 9\n");
  EXPECT_THROW(RecoveryJournal((dir.path() / "app").string()), JournalError);
  EXPECT_EQ(testing_support::readFile(path), "tide-am-journal 9\n");
}

// The scheduler's side: a replay of one commit and one running task.
TEST(SchedulerRecoveryTest, CommittedTasksAreNotOfferedAgainAndNumbersContinue) {
  ManualClock clock{1000};
  TaskScheduler scheduler(SchedulerConfig{}, clock, 1);
  const Job job =
      parseJob(R"({"name":"j","stages":[{"id":"map","tasks":4,"command":["x","{attempt}"]},)"
               R"({"id":"red","depends_on":["map"],"tasks":1,"command":["y"]}]})");
  // The job comes back from its journal form.
  EXPECT_EQ(scheduler.submitJob(parseJob(jobToJson(job))), "job-1");
  EXPECT_EQ(scheduler.restoreLaunchedAttempt("job-1", "map", 0, 0), "");
  EXPECT_EQ(scheduler.restoreCommitted("job-1", "map", 0, 0, "e1", "n1", 10, {{0, 5}}), "");
  EXPECT_EQ(scheduler.restoreLaunchedAttempt("job-1", "map", 2, 1), "");
  EXPECT_EQ(scheduler.restoreRunning(7, "job-1", "map", 1, 0, "e1", "n1"), "");
  scheduler.continueTaskIdsAfter(9);
  EXPECT_THAT(scheduler.restoreCommitted("job-1", "nope", 0, 0, "e1", "", 0, {}),
              HasSubstr("no stage 'nope'"));
  EXPECT_EQ(scheduler.runningTaskCount(), 1);
  EXPECT_EQ(scheduler.pendingTaskCount(), 2);  // map[2] and map[3]

  const auto launches = scheduler.resourceOffers({WorkerOffer{"e2", "n2", 4}});
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].index, 2);
  EXPECT_EQ(launches[0].attempt, 2);  // attempt 1 ran before the restart
  EXPECT_EQ(launches[0].argv[1], "2");
  EXPECT_EQ(launches[0].taskId, 10);  // above every earlier id
  EXPECT_EQ(launches[1].index, 3);
  EXPECT_EQ(launches[1].attempt, 0);

  // The resumed task ends where it runs; then the rest; the reduce reads map[0] from e1.
  rest::TaskStatusUpdate done;
  done.state = rest::TaskState::kFinished;
  done.taskId = 7;
  std::optional<CommittedTask> committed;
  EXPECT_TRUE(scheduler.statusUpdate(done, "e1", &committed));
  ASSERT_TRUE(committed);
  EXPECT_EQ(committed->index, 1);
  EXPECT_FALSE(committed->stageCompleted);
  for (const auto& launch : launches) {
    done.taskId = launch.taskId;
    committed.reset();
    EXPECT_TRUE(scheduler.statusUpdate(done, "e2", &committed));
  }
  ASSERT_TRUE(committed);
  EXPECT_TRUE(committed->stageCompleted);
  const auto reduce = scheduler.resourceOffers({WorkerOffer{"e1", "n1", 1}});  // its data
  ASSERT_EQ(reduce.size(), 1u);
  ASSERT_EQ(reduce[0].inputs.size(), 1u);  // only map[0] wrote a block
  EXPECT_EQ(reduce[0].inputs[0].executorId, "e1");
}

// Graceful decommissioning before the restart: an output committed on e1 and then migrated to e2
// is looked for on e2, which still holds it when it registers again; nothing runs again.
TEST(SchedulerRecoveryTest, AMigratedOutputIsKeptWhereItWasMigratedTo) {
  ManualClock clock{1000};
  TaskScheduler scheduler(SchedulerConfig{}, clock, 1);
  scheduler.submitJob(parseJob(R"({"name":"j","stages":[{"id":"map","tasks":1,"command":["x"]},)"
                               R"({"id":"red","depends_on":["map"],"tasks":1,"command":["y"]}]})"));
  EXPECT_EQ(scheduler.restoreCommitted("job-1", "map", 0, 0, "e1", "n1", 10, {{0, 5}}), "");
  EXPECT_TRUE(scheduler.outputMigrated("job-1/map", 0, "e1", "e2", "n2"));
  EXPECT_EQ(scheduler.keepOnlyHeldOutputs("e2", {"job-1/map/0/part-0"}, "e2 came back"), 0);
  const auto reduce = scheduler.resourceOffers({WorkerOffer{"e2", "n2", 1}});
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(reduce[0].stageId, "red") << "the map output was not made again";
  ASSERT_EQ(reduce[0].inputs.size(), 1u);
  EXPECT_EQ(reduce[0].inputs[0].executorId, "e2");
}

TEST(SchedulerRecoveryTest, AStageWhollyCommittedCompletesAndTheJobEndsOnReplay) {
  ManualClock clock{1000};
  TaskScheduler scheduler(SchedulerConfig{}, clock, 1);
  scheduler.submitJob(parseJob(R"({"name":"j","stages":[{"id":"s","tasks":2,"builtin":"noop"}]})"));
  EXPECT_EQ(scheduler.restoreCommitted("job-1", "s", 0, 0, "e1", "", 1, {}), "");
  EXPECT_FALSE(scheduler.allJobsDone());
  EXPECT_EQ(scheduler.restoreCommitted("job-1", "s", 1, 0, "e1", "", 1, {}), "");
  EXPECT_TRUE(scheduler.allJobsDone());
  EXPECT_TRUE(scheduler.resourceOffers({WorkerOffer{"e1", "n1", 2}}).empty());
}

// A journal of a huge stage is replayed one record at a time, from the file: the summary is
// built as it is read, and the records come back in order without being held.
TEST(RecoveryJournalTest, AJournalOfManyCommitsIsReplayedRecordByRecord) {
  testing_support::TempDir dir;
  const std::string staging = (dir.path() / "app_1").string();
  const int64_t tasks = 200000;
  {
    RecoveryJournal journal(staging);
    journal.append(JournalRecord::attemptStarted(1, "appattempt_1_0001_000001"));
    for (int64_t i = 0; i < tasks; ++i) {
      journal.append(JournalRecord::taskLaunched(i + 1, "job-1", "s", i, 0, "e1"));
      if (i + 1 < tasks) {
        journal.append(JournalRecord::taskCommitted(i + 1, "job-1", "s", i, 0, "e1", "n1", 3, {}));
      }
    }
    journal.sync();
  }
  RecoveryJournal journal(staging);
  EXPECT_EQ(journal.replayedRecords(), static_cast<size_t>(2 * tasks));
  const JournalSummary& summary = journal.replayedSummary();
  EXPECT_EQ(summary.commits, tasks - 1);
  EXPECT_EQ(summary.highestTaskId, tasks);
  ASSERT_EQ(summary.unfinishedLaunches.size(), 1u) << "the last launch was never committed";
  EXPECT_EQ(summary.unfinishedLaunches[0].index, tasks - 1);
  int64_t commits = 0;
  int64_t nextIndex = 0;
  journal.forEachReplayed([&](const JournalRecord& r) {
    if (r.kind != JournalRecord::Kind::kCommit) return;
    EXPECT_EQ(r.index, nextIndex++);
    ++commits;
  });
  EXPECT_EQ(commits, tasks - 1);
  // Appending after the replay does not change what was replayed.
  journal.append(JournalRecord::attemptStarted(2, "appattempt_1_0001_000002"));
  EXPECT_EQ(journal.replayed().records.size(), static_cast<size_t>(2 * tasks));
}

// An executor started for a resource profile of its own keeps it across a restart: its record
// carries the profile and its shape; a default executor's record says nothing of it.
TEST(RecoveryJournalTest, AnExecutorsResourceProfileSurvivesEncodingAndDecoding) {
  JournalRecord wide = JournalRecord::executorStarted("e2", "container_1_0001_01_000003");
  wide.withProfile(1, 8, 4096);
  const JournalContents decoded = decodeJournal(
      encodeAll({wide, JournalRecord::executorStarted("e1", "container_1_0001_01_000002")}), "j");
  ASSERT_EQ(decoded.records.size(), 2u);
  EXPECT_EQ(decoded.records[0].profileId, 1);
  EXPECT_EQ(decoded.records[0].profileCores, 8);
  EXPECT_EQ(decoded.records[0].profileMemoryMb, 4096);
  EXPECT_EQ(decoded.records[1].profileId, 0);
  EXPECT_THAT(encodeJournalRecord(decoded.records[1]), ::testing::Not(HasSubstr("profile")));
}

}  // namespace
}  // namespace tide::am
