#pragma once

// Reading an event log (event_log.h) back: what `tide history` serves and `tide status APP`
// prints for an application whose AM has gone. The documents it makes have the live API's
// shapes, so the AM's own page draws them.

#include <istream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "am/status/allocation_history.h"
#include "am/status/event_log.h"

namespace tide::am {

// "FILE:LINE: what is wrong" (a line that is not JSON, a record without its fields, a log of a
// newer version than this tide reads).
class EventLogError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReplayedApplication {
  std::string file;
  EventLogApplication application;
  std::vector<ExecutorLifetime> executors;  // in the order they were added
  uint64_t executorsDropped = 0;            // older lifetimes compaction let go
  int executorCores = 0;                    // as the live executors document said (0: unknown)
  // Each stage's last submission, in the order first submitted (its resource profile).
  std::vector<StageSubmission> stages;
  std::shared_ptr<AllocationHistory> history = std::make_shared<AllocationHistory>();
  LiveDocuments last;      // the last snapshot ("" when there was none)
  TimeMs lastEventMs = 0;  // AM uptime of the newest record
  bool ended = false;      // an end record: the AM finished (else it was killed)
  std::string finalStatus;
  std::string diagnostics;
  int64_t endedAtEpochMs = -1;
  bool tornTail = false;  // the last line was cut short and left out

  // The first job's name ("" before any job).
  std::string name() const;
  // SUCCEEDED, FAILED or KILLED from the end record; INCOMPLETE when the AM ended without one.
  std::string state() const { return ended ? finalStatus : "INCOMPLETE"; }
};

// Throws EventLogError naming the file and line.
ReplayedApplication replayEventLog(const std::string& path);
// The same from a stream; `name` stands for the file in errors (and in `file`).
ReplayedApplication replayEventLog(std::istream& in, const std::string& name);

// The live API's documents for an ended application. Status: the last one the AM served, with
// "state" its end (state()), and "finalStatus", "diagnostics", "name", "user",
// "startedAtEpochMs", "endedAtEpochMs", "incomplete", "tornTail" added. Executors: every
// executor the application had (not only those live at the end), each with "removedAtMs" and
// "removedReason" and the state REMOVED (or LIVE: still there at the log's last record).
std::string replayedStatusDocument(const ReplayedApplication& app);
// Each executor also has its resourceProfileId, and its own cores and memoryMb where the log
// has them. Jobs: the last jobs document the AM served, each stage with the resourceProfileId
// its stageSubmitted record gave.
std::string replayedExecutorsDocument(const ReplayedApplication& app);
std::string replayedJobsDocument(const ReplayedApplication& app);

}  // namespace tide::am
