#pragma once

// A workload trace for `tide simulate`: JSON Lines, one scheduler or cluster event per line,
// times in milliseconds on the simulator's virtual clock.
//
//   {"t": 0, "type": "stage", "stage": "s1", "tasks": 100, "task_ms": 2000, "job": "j1"}
//   {"t": 0, "type": "stage", "stage": "s2", "tasks": [2000, 1500], "cache": true}
//   {"t": 0, "type": "stage", "stage": "s3", "tasks": 8, "task_ms": 1000, "cpus": 4}
//   {"t": 0, "type": "stage", "stage": "s4", "tasks": 8, "task_ms": 1000,
//    "stragglers": [{"task": 3, "ms": 20000}]}
//   {"t": 9000, "type": "uncache", "stage": "s2"}
//   {"t": 9000, "type": "job_end", "job": "j1"}
//   {"t": 9500, "type": "set_bounds", "min": 0, "max": 10}
//   {"t": 9900, "type": "executor_lost"}

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/clock.h"

namespace tide::allocation {

// A trace that cannot be replayed; what() reads "FILE:LINE: field 'F': reason".
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceEvent {
  enum class Type { kStage, kUncache, kJobEnd, kSetBounds, kExecutorLost };

  Type type = Type::kStage;
  TimeMs t = 0;
  int line = 0;  // where it came from, for messages while it runs

  // kStage: the stage id; kUncache: the cached stage whose blocks go.
  std::string stage;
  // kStage: the job the stage belongs to (empty: none); kJobEnd: the job that ended.
  std::string job;

  // kStage. A stage whose tasks all take the same time keeps one duration, not one per task,
  // so that a million-task stage costs nothing up front.
  int64_t taskCount = 0;
  DurationMs uniformTaskMs = 0;           // used when taskDurations is empty
  std::vector<DurationMs> taskDurations;  // one per task, when the trace lists them
  bool cache = false;                     // its tasks leave cached blocks on their executor
  bool shuffle = false;                   // its tasks leave shuffle output (held until job_end)
  int cpus = 0;                           // cores each task takes; 0: task.cpus
  // Cores of the executors its tasks run on (a stage-level executor shape, a resource profile
  // of its own); 0: executor.cores, the default profile.
  int executorCores = 0;
  // Stragglers: task index -> how long its first attempt takes. The slowness is the attempt's
  // (a slow node, a bad disk), not the work's: every later attempt of the task (a speculative
  // copy, a retry) takes the task's own duration.
  std::map<int64_t, DurationMs> stragglers;

  // kSetBounds: the fields given; the others keep their current value.
  std::optional<int> minExecutors;
  std::optional<int> initialExecutors;
  std::optional<int> maxExecutors;

  DurationMs taskDuration(int64_t index) const {
    return taskDurations.empty() ? uniformTaskMs : taskDurations[static_cast<size_t>(index)];
  }
  DurationMs firstAttemptDuration(int64_t index) const {
    auto straggler = stragglers.find(index);
    return straggler == stragglers.end() ? taskDuration(index) : straggler->second;
  }
};

struct Trace {
  std::string source;  // the file name used in messages
  std::vector<TraceEvent> events;
};

// Parses a whole trace before anything runs, so a bad line fails the run before any output.
// Checks each line on its own (fields and their types) and against the lines before it
// (non-decreasing `t`, unique stage ids, known stages and jobs). Throws TraceError.
Trace parseTrace(std::istream& in, const std::string& source);
Trace loadTrace(const std::string& path);

}  // namespace tide::allocation
