#pragma once

// The AM's recovery journal (issue 12): what an ApplicationMaster attempt decided and learned,
// appended to <am.stagingDir>/<application id>/am-journal so that the next attempt of the same
// application can carry on instead of starting over (YARN's work-preserving AM restart).
//
// Format (version 2), one record per line, UTF-8, each line ending with '\n':
//   tide-am-journal 2                                          the header, the first line
//   {"t":"attempt","n":2,"id":"appattempt_..._000002"}         an AM attempt took over
//   {"t":"job","id":"job-1","job":{...}}                       a job accepted (job file schema)
//   {"t":"executor","id":"e3","container":"container_..."}     an executor started
//   {"t":"executor","id":"e3","container":"...","node":"n1","url":"http://..."}  it registered
//   {"t":"launch","task":17,"job":"job-1","stage":"w","index":3,"attempt":0,"executor":"e3"}
//   {"t":"commit","task":17,"job":"job-1","stage":"w","index":3,"attempt":0,"executor":"e3",
//    "node":"n1","ms":120,"blocks":[[0,512],[1,80]]}           a task's output committed
//   {"t":"stage","job":"job-1","stage":"w"}                    a stage finished
//   {"t":"bounds","min":0,"initial":0,"max":2}                 bounds changed at runtime
//   {"t":"unpersist","stage":"job-1/words"}                    a persisted stage dropped
//   {"t":"commits","job":"job-1","stage":"w","indices":[[0,99999]],"task":100000,
//    "executors":[["e1","n1",50000],["e2","n2",50000]],"ms":[[3,99990],[4,10]]}
//                     many first-attempt commits without blocks of one stage, folded by
//                     compaction (am/recovery/journal_compaction.h): the indices as ranges, how
//                     many of them each executor committed, the durations as (ms, how many),
//                     the highest task id among them. Version 2; version 1 journals are read.
//   {"t":"migrate","stage":"job-1/w","index":3,"executor":"e3","to":"e1","node":"n1"}
//                                 a decommissioning executor's task output a peer took
// Unknown record types of the same version are an error (a reader cannot know what it skips).
//
// Durability: records are written (write(2), O_APPEND) before the AM acts on them, and the file
// is fsync'd at commit points (task commits, jobs, bounds); task commits and the launches after
// them are fsync'd together (group commit, syncTo) before the executors hear of them. A crash can
// tear only the last line: a last line without its '\n', or one that does not parse, is dropped on
// replay (torn tail). Anything else that does not parse, a missing header, or a version above
// kJournalVersion is a JournalError: never a silent fresh start.
//
// Size: two records per task (about 245 bytes for a noop task). Once the file passes
// compactAtBytes (am.journalCompactionSize) and twice what the last compaction left, a thread
// rewrites the records there so far into their fold (journal_compaction.h) beside the journal;
// the next append copies what was appended meanwhile, fsyncs it and renames it over the journal.
// A stage of 10^9 noop tasks thus keeps a journal of a few records per stage, not 245 GB.
//
// Encoding and decoding are pure (strings in, records out); RecoveryJournal only adds the file.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "rest/messages/executor.h"

namespace tide::am {

inline constexpr int kJournalVersion = 2;
inline constexpr const char* kJournalMagic = "tide-am-journal";
inline constexpr const char* kJournalFileName = "am-journal";

class JournalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// kCommits: how many of the folded commits one executor made.
struct CommitShare {
  std::string executorId;
  std::string node;
  int64_t count = 0;
};

struct JournalRecord {
  enum class Kind {
    kAttempt,
    kJob,
    kExecutor,
    kLaunch,
    kCommit,
    kStageDone,
    kBounds,
    kUnpersist,
    kCommits,
    kMigrate
  };
  Kind kind = Kind::kAttempt;
  // kAttempt
  int attemptNumber = 0;
  std::string attemptId;
  // kJob: jobId and the job in the job file's schema; kLaunch, kCommit, kStageDone: jobId
  std::string jobId;
  std::string jobJson;
  // kExecutor, kLaunch, kCommit
  std::string executorId;
  std::string containerId;  // kExecutor
  std::string url;          // kExecutor, once registered: where it serves its blocks
  // kExecutor: the resource profile it was started for (0: the default, whose shape is the
  // configuration's), with its shape, so that an adopted executor keeps it.
  int profileId = 0;
  int profileCores = 0;
  int64_t profileMemoryMb = 0;
  // kLaunch, kCommit (stageId: the job's own stage id; kUnpersist: "<jobId>/<stage>")
  int64_t taskId = 0;
  std::string stageId;
  int64_t index = 0;
  int attempt = 0;
  // kCommit
  std::string node;
  int64_t durationMs = 0;
  std::vector<rest::BlockOutput> blocks;
  // kCommits (taskId: the highest task id of them; attempt 0, no blocks)
  std::vector<std::pair<int64_t, int64_t>> indexRanges;  // [first, last], ascending, disjoint
  std::vector<CommitShare> shares;                       // in the order executors first committed
  std::vector<std::pair<int64_t, int64_t>> durations;    // (ms, how many), ascending ms
  // kMigrate: the output of task `index` of stage `stageId` ("<jobId>/<stage>") moved from
  // `executorId` to `toExecutor` on `node` (graceful decommissioning)
  std::string toExecutor;
  // kBounds
  int minExecutors = 0;
  int initialExecutors = 0;
  int maxExecutors = 0;

  static JournalRecord attemptStarted(int number, std::string id);
  static JournalRecord jobAccepted(std::string jobId, std::string jobJson);
  static JournalRecord executorStarted(std::string executorId, std::string containerId,
                                       std::string node = "", std::string url = "");
  // An executor started for a resource profile other than the default.
  JournalRecord& withProfile(int id, int cores, int64_t memoryMb) {
    profileId = id;
    profileCores = cores;
    profileMemoryMb = memoryMb;
    return *this;
  }
  static JournalRecord taskLaunched(int64_t taskId, std::string jobId, std::string stageId,
                                    int64_t index, int attempt, std::string executorId);
  static JournalRecord taskCommitted(int64_t taskId, std::string jobId, std::string stageId,
                                     int64_t index, int attempt, std::string executorId,
                                     std::string node, int64_t durationMs,
                                     std::vector<rest::BlockOutput> blocks);
  static JournalRecord stageDone(std::string jobId, std::string stageId);
  static JournalRecord boundsChanged(int min, int initial, int max);
  static JournalRecord unpersisted(std::string stageId);

  // kCommits: how many commits it folds (the sum of its shares).
  int64_t foldedCommits() const;
  static JournalRecord outputMigrated(std::string stageId, int64_t index, std::string fromExecutor,
                                      std::string toExecutor, std::string node);
};

// kCommits: each folded commit as the commit record it stands for, ascending index: the first
// shares[0].count indices are shares[0]'s, and so on; durations are handed out ascending.
// Which index had which duration, or which executor, is not kept: without blocks, nothing
// after the commit depends on it (the stage's duration counts and each executor's count do).
void forEachFoldedCommit(const JournalRecord& commits,
                         const std::function<void(const JournalRecord& commit)>& fn);

// The header line, with its '\n'.
std::string encodeJournalHeader();
// One record as one line, with its '\n'.
std::string encodeJournalRecord(const JournalRecord& record);
// One line (without its '\n') as a record. Throws rest::JsonError (or a subclass).
JournalRecord decodeJournalRecord(std::string_view line);

struct JournalContents {
  int version = kJournalVersion;
  std::vector<JournalRecord> records;  // in the order written
  bool tornTail = false;               // a torn last line was dropped
  size_t validLength = 0;              // bytes up to the end of the last whole line
};

// Parses a whole journal. `source` names it in errors ("/staging/app_1/am-journal"). An empty
// text is an empty journal (the file was created, nothing written yet). Throws JournalError.
JournalContents decodeJournal(std::string_view text, const std::string& source);
// The same, handing each record to `onRecord` in order instead of keeping it (records stays
// empty): a journal holds two records per task, so a huge stage's is never held decoded.
JournalContents decodeJournal(std::string_view text, const std::string& source,
                              const std::function<void(JournalRecord&&)>& onRecord);

// The same, handing each record with its line (without its '\n', a view into `text`).
using JournalLineReader = std::function<void(std::string_view line, JournalRecord&& record)>;
JournalContents decodeJournalLines(std::string_view text, const std::string& source,
                                   const JournalLineReader& onLine);

// What the records add up to, for the next attempt.
struct JournalSummary {
  int lastAttempt = 0;            // the highest attempt number recorded (0: none)
  int64_t highestTaskId = 0;      // task ids continue above it
  int highestExecutorNumber = 0;  // "e<N>": executor numbers continue above it
  int64_t commits = 0;
  int jobs = 0;
  // Tasks launched and not committed, by task id (running when the attempt ended, or lost).
  std::vector<JournalRecord> unfinishedLaunches;
  std::optional<JournalRecord> lastBounds;
};
JournalSummary summarizeJournal(const std::vector<JournalRecord>& records);

// The summary built record by record, as the journal is read.
class JournalSummarizer {
 public:
  void add(const JournalRecord& record);
  JournalSummary summary() const;

 private:
  JournalSummary summary_;
  // A commit ends every launch of its index before it.
  void finishLaunches(const std::string& jobId, const std::string& stageId, int64_t first,
                      int64_t last);

  std::map<int64_t, JournalRecord> unfinished_;  // launches not committed yet, by task id
  // The same launches by (job, stage, index): a commit finds its own without a scan.
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<int64_t>> unfinishedAt_;
};

// What a compaction did, for the AM's log and the tests.
struct JournalCompaction {
  bool ok = false;
  std::string error;          // when not ok: why (the journal is as it was, and still written)
  uint64_t bytesBefore = 0;   // the file's size when the compaction started
  uint64_t bytesAfter = 0;    // its size once renamed (records appended meanwhile included)
  size_t recordsBefore = 0;   // records rewritten
  size_t recordsAfter = 0;    // what they became
  int64_t commitsFolded = 0;  // commit records folded into kCommits records
  int64_t foldMs = 0;         // the thread's time reading and rewriting
  int64_t syncMs = 0;         // and fsyncing what it wrote
};

inline constexpr uint64_t kDefaultJournalCompactionBytes = 64ull << 20;

// The journal file: replays what is there, then appends. Not thread-safe (the AM calls it
// under its mutex), except syncTo; compaction runs on a thread of its own.
class RecoveryJournal {
 public:
  // Opens (creating it and its directory, mode 0700, when missing) `directory`/am-journal.
  // Throws JournalError when it cannot, or when what is there does not decode.
  // `compactAtBytes`: the size past which the file is compacted (0: never); `onCompacted` is
  // called (from append, so under the caller's lock) when a compaction has ended.
  explicit RecoveryJournal(const std::string& directory,
                           uint64_t compactAtBytes = kDefaultJournalCompactionBytes,
                           std::function<void(const JournalCompaction&)> onCompacted = nullptr);
  ~RecoveryJournal();
  RecoveryJournal(const RecoveryJournal&) = delete;
  RecoveryJournal& operator=(const RecoveryJournal&) = delete;

  // What the file held when opened (a torn tail is cut off the file before appending), read
  // again and decoded into memory: for small journals and tests.
  JournalContents replayed() const;
  // The same records one at a time, in order, read again from the file (mapped, not copied):
  // replaying a journal of 10^8 tasks holds one record at a time. Only until doneReplaying().
  void forEachReplayed(const std::function<void(const JournalRecord&)>& fn) const;
  // The next attempt has read what it needs: from now on the file may be compacted (which
  // rewrites what replayed() reads). Before it, the file is never compacted.
  void doneReplaying();
  // Of what the file held when opened: the summary, how many records, whether a torn tail was
  // dropped.
  const JournalSummary& replayedSummary() const { return summary_; }
  size_t replayedRecords() const { return replayedRecords_; }
  bool replayedTornTail() const { return tornTail_; }
  const std::string& path() const { return path_; }

  // Appends a record now (one write). Throws JournalError on an I/O error. Starts a compaction
  // when one is due, and completes one that has finished.
  void append(const JournalRecord& record);
  // fsync: everything appended so far survives a crash of the machine too.
  void sync();
  // Bytes appended so far (a position to pass to syncTo; compaction does not move it).
  uint64_t position() const { return appended_.load(); }
  // Group commit: returns once everything appended up to `position` is fsync'd. Safe to call
  // without the AM's mutex, from many threads at once: one fdatasync covers every record
  // appended before it started, so callers waiting together share it.
  void syncTo(uint64_t position);
  // The file's size now.
  uint64_t fileBytes() const { return fileBytes_; }
  // Compactions completed so far.
  int compactions() const { return compactions_; }
  // Waits for a compaction under way to end and completes it (tests; the AM never waits).
  void finishCompactionForTest();
  // Deletes the journal and its directory (the application ended for good).
  void remove();

 private:
  void writeAll(const std::string& bytes);
  void startCompaction();
  void completeCompaction();  // the thread has ended: swap the file in, or keep the old one
  void abandonCompaction();
  std::string compactingPath() const;

  std::string directory_;
  std::string path_;
  int fd_ = -1;
  // Decodes the first `length` bytes of the file, mapped read-only.
  JournalContents decodeFile(size_t length,
                             const std::function<void(JournalRecord&&)>& onRecord) const;

  size_t replayedLength_ = 0;  // bytes of whole records when opened
  size_t replayedRecords_ = 0;
  bool tornTail_ = false;
  JournalSummary summary_;
  std::atomic<uint64_t> appended_{0};  // bytes written (append: under the AM's mutex)
  std::atomic<uint64_t> durable_{0};   // bytes known fsync'd
  std::mutex syncMutex_;               // one fdatasync at a time; guards fd_ against remove()

  // Compaction. Fields below are the caller's (under its lock), except those the thread sets
  // before it raises compactionEnded_.
  uint64_t compactAtBytes_ = 0;
  std::function<void(const JournalCompaction&)> onCompacted_;
  bool replaying_ = true;
  uint64_t fileBytes_ = 0;       // the file's size
  uint64_t compactedBytes_ = 0;  // its size after the last compaction
  int compactions_ = 0;
  std::thread compactor_;
  std::atomic<bool> compactionEnded_{false};
  std::atomic<bool> cancelCompaction_{false};
  uint64_t compactingUpTo_ = 0;   // the bytes the thread rewrites: [0, compactingUpTo_)
  JournalCompaction compaction_;  // the thread's result (read after compactionEnded_)
};

}  // namespace tide::am
