// Compaction of the AM's recovery journal (am/recovery/journal_compaction.h, issue 16): the
// compacted journal replays into the same state as the original (the same summary, the same
// commits per stage and executor, the same durations, every commit with blocks as it was), in a
// few records per stage; and the file is compacted on a thread while records go on being
// appended, and reopens to the same state.

#include "am/recovery/journal_compaction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "am/scheduler/task_scheduler.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;
using Kind = JournalRecord::Kind;

std::string encodeAll(const std::vector<JournalRecord>& records) {
  std::string text = encodeJournalHeader();
  for (const auto& r : records) text += encodeJournalRecord(r);
  return text;
}

std::string compact(const std::string& text) {
  std::string out;
  compactJournal(text, "j", [&](std::string_view piece) { out.append(piece); });
  return out;
}

// A journal as an AM writes one: two executors taking turns, a map stage whose commits carry
// blocks, a final stage of noop commits without blocks with a spread of durations, a retried
// task, tasks still running, bounds, an unpersist.
std::vector<JournalRecord> busyJournal(int64_t finalTasks) {
  std::vector<JournalRecord> r = {
      JournalRecord::attemptStarted(1, "appattempt_1_0001_000001"),
      JournalRecord::jobAccepted(
          "job-1", R"({"name":"j","stages":[{"id":"map","tasks":4,"command":["true"]},)"
                   R"({"id":"all","depends_on":["map"],"tasks":)" +
                       std::to_string(finalTasks) + R"(,"builtin":"noop"}]})"),
      JournalRecord::executorStarted("e1", "c2"),
      JournalRecord::executorStarted("e2", "c3"),
      JournalRecord::executorStarted("e1", "c2", "n1", "http://h:1"),
      JournalRecord::executorStarted("e2", "c3", "n2", "http://h:2")};
  int64_t task = 0;
  for (int64_t i = 0; i < 4; ++i) {
    const std::string e = i % 2 == 0 ? "e1" : "e2";
    r.push_back(JournalRecord::taskLaunched(++task, "job-1", "map", i, 0, e));
    r.push_back(JournalRecord::taskCommitted(task, "job-1", "map", i, 0, e, e == "e1" ? "n1" : "n2",
                                             40 + i, {{0, 100 + i}}));
  }
  r.push_back(JournalRecord::stageDone("job-1", "map"));
  r.push_back(JournalRecord::boundsChanged(0, 1, 2));
  // Launched two at a time, committed in the order they end (out of index order).
  for (int64_t i = 0; i + 1 < finalTasks - 2; i += 2) {
    r.push_back(JournalRecord::taskLaunched(++task, "job-1", "all", i, 0, "e1"));
    r.push_back(JournalRecord::taskLaunched(++task, "job-1", "all", i + 1, 0, "e2"));
    r.push_back(
        JournalRecord::taskCommitted(task, "job-1", "all", i + 1, 0, "e2", "n2", i % 7, {}));
    if (i == 10) {
      // Lost once, run again: a second attempt's commit stays a record of its own.
      r.push_back(JournalRecord::taskLaunched(++task, "job-1", "all", i, 1, "e2"));
      r.push_back(JournalRecord::taskCommitted(task, "job-1", "all", i, 1, "e2", "n2", 9, {}));
    } else {
      r.push_back(JournalRecord::taskCommitted(task - 1, "job-1", "all", i, 0, "e1", "n1", 3, {}));
    }
  }
  r.push_back(JournalRecord::unpersisted("job-1/map"));
  // Running when the attempt ended.
  r.push_back(JournalRecord::taskLaunched(++task, "job-1", "all", finalTasks - 2, 0, "e1"));
  r.push_back(JournalRecord::taskLaunched(++task, "job-1", "all", finalTasks - 1, 0, "e2"));
  return r;
}

// What a replay sees: every commit as (job, stage, index) -> (executor, node, attempt), the
// durations per stage, and the rest of the records in order.
struct Replayed {
  std::map<std::tuple<std::string, std::string, int64_t>, std::tuple<std::string, std::string, int>>
      commits;
  std::map<std::string, std::multiset<int64_t>> durations;
  std::map<std::string, std::map<std::string, int64_t>> commitsByExecutor;
  std::map<int64_t, std::vector<rest::BlockOutput>> blocks;  // by index of the map stage
  std::vector<std::string> others;                           // the other records, encoded
  std::map<std::string, JournalRecord> executors;            // id -> what its records say
};

Replayed replay(const std::string& text) {
  Replayed seen;
  auto commit = [&](const JournalRecord& c) {
    seen.commits[{c.jobId, c.stageId, c.index}] = {c.executorId, c.node, c.attempt};
    seen.durations[c.stageId].insert(c.durationMs);
    ++seen.commitsByExecutor[c.stageId][c.executorId];
    if (!c.blocks.empty()) seen.blocks[c.index] = c.blocks;
  };
  decodeJournal(text, "j", [&](JournalRecord&& r) {
    if (r.kind == Kind::kCommit) {
      commit(r);
    } else if (r.kind == Kind::kCommits) {
      forEachFoldedCommit(r, commit);
    } else if (r.kind == Kind::kExecutor) {
      auto [known, added] = seen.executors.emplace(r.executorId, r);
      if (!added) {
        known->second.containerId = r.containerId;
        if (!r.node.empty()) known->second.node = r.node;
        if (!r.url.empty()) known->second.url = r.url;
      }
    } else if (r.kind != Kind::kLaunch) {
      seen.others.push_back(encodeJournalRecord(r));
    }
  });
  return seen;
}

void expectSameSummary(const JournalSummary& a, const JournalSummary& b) {
  EXPECT_EQ(a.lastAttempt, b.lastAttempt);
  EXPECT_EQ(a.highestTaskId, b.highestTaskId);
  EXPECT_EQ(a.highestExecutorNumber, b.highestExecutorNumber);
  EXPECT_EQ(a.commits, b.commits);
  EXPECT_EQ(a.jobs, b.jobs);
  ASSERT_EQ(a.unfinishedLaunches.size(), b.unfinishedLaunches.size());
  for (size_t i = 0; i < a.unfinishedLaunches.size(); ++i) {
    EXPECT_EQ(encodeJournalRecord(a.unfinishedLaunches[i]),
              encodeJournalRecord(b.unfinishedLaunches[i]));
  }
  ASSERT_EQ(a.lastBounds.has_value(), b.lastBounds.has_value());
}

JournalSummary summaryOf(const std::string& text) {
  JournalSummarizer summarizer;
  decodeJournal(text, "j", [&](JournalRecord&& r) { summarizer.add(r); });
  return summarizer.summary();
}

TEST(JournalCompactionTest, TheCompactedJournalReplaysToTheSameStateInAFewRecords) {
  const std::string original = encodeAll(busyJournal(1000));
  const std::string compacted = compact(original);
  expectSameSummary(summaryOf(compacted), summaryOf(original));
  const Replayed before = replay(original);
  const Replayed after = replay(compacted);
  EXPECT_EQ(after.commits.size(), before.commits.size());
  for (const auto& [task, who] : before.commits) {
    ASSERT_EQ(after.commits.count(task), 1u) << std::get<1>(task) << " " << std::get<2>(task);
    if (std::get<1>(task) == "map" || std::get<2>(who) != 0) {
      EXPECT_EQ(after.commits.at(task), who) << "a commit with blocks or of a later attempt";
    }
  }
  EXPECT_EQ(after.durations, before.durations) << "speculation's median needs every duration";
  EXPECT_EQ(after.commitsByExecutor, before.commitsByExecutor);
  ASSERT_EQ(after.blocks.size(), 4u);
  for (const auto& [index, blocks] : before.blocks) {
    ASSERT_EQ(after.blocks.at(index).size(), blocks.size());
    EXPECT_EQ(after.blocks.at(index)[0].size, blocks[0].size);
  }
  EXPECT_EQ(after.others, before.others) << "attempts, jobs, stages, bounds, unpersists, in order";
  ASSERT_EQ(after.executors.size(), before.executors.size());
  for (const auto& [id, merged] : before.executors) {
    EXPECT_EQ(encodeJournalRecord(after.executors.at(id)), encodeJournalRecord(merged));
  }
  // 1000 final-stage tasks (2 records each) and 4 map tasks: the map's 4 commits, the retried
  // one's, the two running launches, one fold, and the rest.
  const size_t records = decodeJournal(compacted, "j").records.size();
  EXPECT_LE(records, 20u) << compacted;
  EXPECT_LT(compacted.size() * 20, original.size());
}

TEST(JournalCompactionTest, CompactingTwiceWithRecordsBetweenFoldsIntoTheSameFold) {
  std::vector<JournalRecord> all = busyJournal(600);
  const size_t cut = all.size() / 2;
  const std::vector<JournalRecord> head(all.begin(), all.begin() + cut);
  std::string tail;
  for (size_t i = cut; i < all.size(); ++i) tail += encodeJournalRecord(all[i]);
  const std::string once = compact(encodeAll(all));
  const std::string twice = compact(compact(encodeAll(head)) + tail);
  expectSameSummary(summaryOf(twice), summaryOf(encodeAll(all)));
  EXPECT_EQ(replay(twice).commitsByExecutor, replay(once).commitsByExecutor);
  EXPECT_EQ(replay(twice).durations, replay(once).durations);
  EXPECT_EQ(twice, once) << "a compacted journal compacts as the whole would";
}

TEST(JournalCompactionTest, AFoldThatDoesNotAddUpIsACorruptRecord) {
  const std::string bad = encodeJournalHeader() +
                          R"({"t":"commits","job":"job-1","stage":"s","indices":[[0,9]],)"
                          R"("task":10,"executors":[["e1","n1",9]],"ms":[[1,10]]})" +
                          "\n" + encodeJournalRecord(JournalRecord::attemptStarted(2, "a"));
  try {
    decodeJournal(bad, "/s/am-journal");
    FAIL() << "a fold of 10 indices but 9 executor counts was read";
  } catch (const JournalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/s/am-journal:2: corrupt record"));
    EXPECT_THAT(e.what(), HasSubstr("10 indices but 9 executor counts"));
  }
  const std::string overlapping =
      encodeJournalHeader() +
      R"({"t":"commits","job":"job-1","stage":"s","indices":[[0,4],[3,9]],)"
      R"("task":10,"executors":[["e1","n1",12]],"ms":[[1,12]]})" +
      "\n" + encodeJournalRecord(JournalRecord::attemptStarted(2, "a"));
  EXPECT_THROW(decodeJournal(overlapping, "j"), JournalError);
}

// The scheduler replays a fold as it replays the commits it stands for.
TEST(JournalCompactionTest, AReplayedFoldCompletesItsStageAsItsCommitsWould) {
  std::vector<JournalRecord> records = {JournalRecord::jobAccepted(
      "job-1", R"({"name":"j","stages":[{"id":"s","tasks":5000,"builtin":"noop"}]})")};
  for (int64_t i = 0; i < 5000; ++i) {
    records.push_back(JournalRecord::taskLaunched(i + 1, "job-1", "s", i, 0, "e1"));
    if (i != 4321) {
      records.push_back(JournalRecord::taskCommitted(i + 1, "job-1", "s", i, 0, "e1", "n1", 2, {}));
    }
  }
  const std::string compacted = compact(encodeAll(records));
  ManualClock clock{1000};
  TaskScheduler scheduler(SchedulerConfig{}, clock, 1);
  decodeJournal(compacted, "j", [&](JournalRecord&& r) {
    if (r.kind == Kind::kJob) scheduler.submitJob(parseJob(r.jobJson));
    if (r.kind == Kind::kCommits) {
      forEachFoldedCommit(r, [&](const JournalRecord& c) {
        EXPECT_EQ(scheduler.restoreCommitted(c.jobId, c.stageId, c.index, 0, c.executorId, c.node,
                                             c.durationMs, {}),
                  "");
      });
    }
  });
  EXPECT_FALSE(scheduler.allJobsDone());
  const auto launches = scheduler.resourceOffers({WorkerOffer{"e2", "n2", 8}});
  ASSERT_EQ(launches.size(), 1u) << "only the task that never committed runs again";
  EXPECT_EQ(launches[0].index, 4321);
}

TEST(JournalCompactionTest, TheFileIsCompactedWhileRecordsGoOnBeingAppendedAndReopensTheSame) {
  testing_support::TempDir dir;
  const std::string staging = (dir.path() / "app_1").string();
  const int64_t tasks = 20000;  // about 4 MB of records uncompacted
  std::vector<JournalCompaction> done;
  std::string expected;
  {
    RecoveryJournal journal(staging, 1 << 20,
                            [&](const JournalCompaction& c) { done.push_back(c); });
    journal.append(JournalRecord::attemptStarted(1, "appattempt_1_0001_000001"));
    journal.append(JournalRecord::jobAccepted(
        "job-1", R"({"name":"j","stages":[{"id":"s","tasks":20000,"builtin":"noop"}]})"));
    // Not while the previous attempt's records may still be read.
    for (int64_t i = 0; i < 12000; ++i) {
      journal.append(JournalRecord::taskLaunched(i + 1, "job-1", "s", i, 0, "e1"));
    }
    EXPECT_EQ(journal.compactions(), 0);
    EXPECT_GT(journal.fileBytes(), 1u << 20);
    journal.doneReplaying();
    for (int64_t i = 0; i < tasks; ++i) {
      if (i >= 12000) journal.append(JournalRecord::taskLaunched(i + 1, "job-1", "s", i, 0, "e1"));
      if (i + 1 < tasks) {
        journal.append(JournalRecord::taskCommitted(i + 1, "job-1", "s", i, 0, "e1", "n1", 3, {}));
      }
    }
    journal.finishCompactionForTest();
    EXPECT_GE(journal.compactions(), 1);
    // The appends above outpace the thread; once they stop, the next one compacts what is left.
    journal.append(JournalRecord::boundsChanged(0, 1, 2));
    journal.finishCompactionForTest();
    ASSERT_FALSE(done.empty());
    EXPECT_TRUE(done.front().ok) << done.front().error;
    EXPECT_GT(done.front().commitsFolded, 0);
    EXPECT_LT(journal.fileBytes(), uint64_t{1} << 20) << "well under what was appended";
    EXPECT_FALSE(std::filesystem::exists(staging + "/am-journal.compacting"));
    journal.sync();
    expected = testing_support::readFile(staging + "/am-journal");
  }
  RecoveryJournal again(staging);
  const JournalSummary& summary = again.replayedSummary();
  EXPECT_EQ(summary.commits, tasks - 1);
  EXPECT_EQ(summary.highestTaskId, tasks);
  ASSERT_EQ(summary.unfinishedLaunches.size(), 1u);
  EXPECT_EQ(summary.unfinishedLaunches[0].index, tasks - 1);
  EXPECT_EQ(summary.lastAttempt, 1);
}

TEST(JournalCompactionTest, ACompactionLeftHalfWayByACrashIsIgnoredOnReopen) {
  testing_support::TempDir dir;
  const std::string staging = (dir.path() / "app_1").string();
  {
    RecoveryJournal journal(staging);
    journal.append(JournalRecord::attemptStarted(1, "appattempt_1_0001_000001"));
    journal.sync();
  }
  dir.writeFile("app_1/am-journal.compacting", "tide-am-journal 2\n{\"t\":\"comm");
  RecoveryJournal again(staging);
  EXPECT_EQ(again.replayedSummary().lastAttempt, 1);
  EXPECT_FALSE(std::filesystem::exists(staging + "/am-journal.compacting"));
}

}  // namespace
}  // namespace tide::am
