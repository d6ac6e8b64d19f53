#pragma once

// The AM's event log (Spark's spark.eventLog.dir): what its status API showed, kept on disk in
// history.dir so that `tide history` and `tide status APP` can show the application after the
// AM has gone. One JSON object per line, each with a "type":
//   header       {"format": "tide-event-log", "version": 1, "tide": "0.1.0"}; first line, and
//                again at each later attempt's start (it appends to the same file)
//   application  id, attempt, user, startedAtEpochMs
//   executorAdded / executorRemoved   an executor's lifetime: host, container, node, pid,
//                its resource profile (resourceProfileId, cores, memoryMb; as Spark's
//                SparkListenerExecutorAdded carries its ExecutorInfo's resourceProfileId),
//                atMs (AM uptime); reason it went
//   stageSubmitted  a stage (or its re-run) submitted: stageId "<jobId>/<id>", numTasks, cpus,
//                its resource profile (resourceProfileId, executorCores, executorMemoryMb; as
//                Spark's SparkListenerStageSubmitted carries its StageInfo's resourceProfileId),
//                atMs
//   point        one point of the allocation history (the page's chart), as the API writes it
//   snapshot     the documents the live API served at atMs (status, executors, jobs with their
//                stages and bounded failure samples, the decision log): written when they
//                changed, at most once per flush; the last one is what history shows
//   end          finalStatus, diagnostics, endedAtEpochMs
// Lines are written whole with one write(2) per flush (every second; snapshots at most every
// 5 s, and at the end), so a killed AM leaves a log that reads up to its last flush; a torn
// last line is ignored by the reader.
//
// Bounded: when the file passes compactAtBytes it is rewritten (aside, then renamed) as what a
// reader would make of it: header, application, the executors' lifetimes (at most
// kMaxExecutors, the newest), the points the AM still holds (AllocationHistory is bounded),
// the last snapshot. So the file stays below compactAtBytes plus one compacted copy.

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "am/status/allocation_history.h"
#include "common/clock.h"

namespace tide::rest {
template <typename T>
class JsonFields;
}  // namespace tide::rest

namespace tide::am {

constexpr int kEventLogVersion = 1;
inline constexpr char kEventLogFormat[] = "tide-event-log";

// <dir>/<application id>.jsonl
std::string eventLogPath(const std::string& dir, const std::string& applicationId);

struct EventLogApplication {
  std::string applicationId;
  std::string attemptId;
  std::string user;
  int64_t startedAtEpochMs = 0;
};

struct ExecutorLifetime {
  std::string id;
  std::string host;
  std::string container;
  std::string node;
  int64_t pid = 0;
  TimeMs addedAtMs = -1;    // AM uptime
  TimeMs removedAtMs = -1;  // -1 while it runs
  std::string removedReason;
  // The resource profile it was started for (0: the default one), and its shape (0: not
  // recorded, as in logs of tides before profiles).
  int resourceProfileId = 0;
  int cores = 0;
  int64_t memoryMb = 0;
};

// A stage submitted to the scheduler, with the resource profile its tasks run on.
struct StageSubmission {
  std::string stageId;  // "<jobId>/<id>"
  int64_t numTasks = 0;
  int cpus = 1;
  int resourceProfileId = 0;
  int executorCores = 0;
  int64_t executorMemoryMb = 0;
  TimeMs atMs = -1;  // AM uptime
};

// The members after "type" of the application and executorAdded records: one table drives
// the writer here and the reader in event_log_replay.cc.
const rest::JsonFields<EventLogApplication>& eventLogApplicationFields();
const rest::JsonFields<ExecutorLifetime>& executorAddedFields();
const rest::JsonFields<StageSubmission>& stageSubmittedFields();

// What the live API serves, as it serves it (GET /api/v1/status, /executors, /jobs,
// /allocation/decisions).
struct LiveDocuments {
  std::string status;
  std::string executors;
  std::string jobs;
  std::string decisions;
};

class EventLog {
 public:
  static constexpr uint64_t kCompactAtBytes = uint64_t{32} << 20;
  static constexpr size_t kMaxExecutors = 10000;
  static constexpr size_t kMaxStages = 10000;  // the newest stages' submissions, compacted
  // Snapshots (the large records) at most this often; points and executor events every flush.
  static constexpr DurationMs kSnapshotEveryMs = 5000;

  // Creates `path` (mode 0600: it holds task output tails) or appends to it, and writes the
  // header and the application. Throws std::runtime_error naming the file.
  EventLog(std::string path, const EventLogApplication& application,
           uint64_t compactAtBytes = kCompactAtBytes,
           DurationMs snapshotEveryMs = kSnapshotEveryMs);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Queued (cheap, under the AM's lock), written by the next flush.
  void executorAdded(ExecutorLifetime executor);
  void executorRemoved(const std::string& id, TimeMs atMs, const std::string& reason);
  void stageSubmitted(StageSubmission stage);

  // Writes what was queued, the history's points after those written, and the documents when
  // they changed (stamped `nowMs`, AM uptime) and the last snapshot is snapshotEveryMs old (or
  // `last`: the AM's end), then compacts when over size. False once a write failed (error()
  // says why; the log writes nothing more).
  bool flush(const AllocationHistory& history, const LiveDocuments& documents, TimeMs nowMs,
             bool last = false);
  bool end(TimeMs atMs, int64_t endedAtEpochMs, const std::string& finalStatus,
           const std::string& diagnostics);

  const std::string& path() const { return path_; }
  std::string error() const;
  int compactions() const;

 private:
  bool writeLocked(const std::string& text);
  void compactLocked(const AllocationHistory& history);
  void rememberLocked(const ExecutorLifetime& executor);

  const std::string path_;
  const uint64_t compactAtBytes_;
  const DurationMs snapshotEveryMs_;
  TimeMs lastSnapshotMs_ = -1;
  mutable std::mutex mu_;
  int fd_ = -1;
  uint64_t bytes_ = 0;
  std::string error_;
  int compactions_ = 0;
  std::string headerLines_;  // header and application, for compaction
  std::vector<ExecutorLifetime> queued_;
  std::vector<std::pair<std::string, std::pair<TimeMs, std::string>>> queuedRemovals_;
  // What a reader knows of the executors, for compaction: by id, and ids in order added.
  std::map<std::string, ExecutorLifetime> executors_;
  std::deque<std::string> executorOrder_;
  uint64_t executorsDropped_ = 0;
  std::vector<StageSubmission> queuedStages_;
  // The last submission of each stage, for compaction: by id, and ids in order first submitted.
  std::map<std::string, StageSubmission> stages_;
  std::deque<std::string> stageOrder_;
  TimeMs lastPointMs_ = -1;
  LiveDocuments lastDocuments_;
  std::string lastSnapshotLine_;
  std::string endLine_;
};

}  // namespace tide::am
