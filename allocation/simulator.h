#pragma once

// `tide simulate`: replays a workload trace against the real ExecutorAllocationManager on a
// virtual clock, with a modelled resource manager and modelled executors, and reports how the
// executor set followed the work.
//
// Within one instant, in this order: trace events (file order), task completions, executor
// grants, the speculation check (at multiples of speculation.interval, with speculation on),
// task placement, the allocation tick (at multiples of dynamicAllocation.interval), the
// release of the executors the tick chose to remove, then the resource manager reconciling its
// requests with the target. The same inputs always give the same output.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/speculation.h"
#include "allocation/workload_trace.h"
#include "common/clock.h"

namespace tide::allocation {

// The run cannot finish: work that can never run, or a run that does not settle.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SimulationOptions {
  // How long the modelled resource manager takes to grant a requested executor. A request is
  // never granted in the instant it is made: with 0 it is granted at the next instant processed.
  DurationMs grantDelay = 0;
  // Stop at this time (inclusive) instead of when the work is done and the executor set settled.
  std::optional<TimeMs> until;
  // A run without --until that has not settled after this many ticks is an error, not a hang.
  int64_t maxTicks = 20'000'000;
  // The speculation* keys: slow tasks get a copy by the AM's rule (Spark's
  // TaskSetManager.checkSpeculatableTasks), which runs on another executor; the first attempt
  // to finish is the task's and the other is killed.
  allocation::SpeculationSettings speculation;
};

// The counts an output line shows; a line is printed when they change (among other things).
struct SimulationCounts {
  int target = 0;
  int live = 0;              // executors granted and not yet released
  int pending = 0;           // executor requests the resource manager has not granted yet
  int busy = 0;              // live executors running at least one task
  int64_t tasksPending = 0;  // with the speculative copies waiting for a slot
  int64_t tasksRunning = 0;  // attempts: an original and its copy are two
  bool operator==(const SimulationCounts& o) const {
    return target == o.target && live == o.live && pending == o.pending && busy == o.busy &&
           tasksPending == o.tasksPending && tasksRunning == o.tasksRunning;
  }
};

// Something speculation did to one task, at the instant it happened.
struct SpeculationEvent {
  enum class Kind {
    kSubmitted,    // the task ran too long: a copy waits for a slot (Spark's
                   // speculativeTaskSubmitted)
    kLaunched,     // the copy started, on `executor`
    kCopyWon,      // the copy (on `executor`) finished first; the original was killed
    kOriginalWon,  // the original (on `executor`) finished first; the running copy was killed
    kDropped,      // the task succeeded before the copy launched: the copy is not needed
  };
  TimeMs t = 0;
  Kind kind = Kind::kSubmitted;
  std::string stage;
  int64_t task = 0;      // the task's index in its stage
  std::string executor;  // empty for kSubmitted and kDropped
};
const char* speculationEventName(SpeculationEvent::Kind kind);

// One output line: the state after a tick instant where something changed.
struct SimulationLine : SimulationCounts {
  TimeMs t = 0;
  std::vector<std::string> added;             // granted since the previous line
  std::vector<std::string> removed;           // released or lost since the previous line
  std::vector<SpeculationEvent> speculation;  // since the previous line, in time order
  std::string why;                            // the tick's decisions, joined with "; "
};

// How often each speculation event happened in the run.
struct SpeculationCounts {
  int64_t submitted = 0;
  int64_t launched = 0;
  int64_t copiesWon = 0;
  int64_t originalsWon = 0;
  int64_t dropped = 0;
};

// When a stage of the trace was submitted and when its last task ended (-1: never).
struct StageTiming {
  std::string stage;
  TimeMs submittedAt = 0;
  TimeMs finishedAt = -1;
};

struct SimulationSummary {
  TimeMs makespanMs = 0;       // when the last task ended
  int64_t executorMs = 0;      // sum of executor lifetimes (grant to release or end of run)
  int64_t busyExecutorMs = 0;  // sum of the time each executor ran at least one task
  int peakLive = 0;
  int64_t tasks = 0;                             // tasks completed
  std::optional<SpeculationCounts> speculation;  // printed with speculation on
  TimeMs endMs = 0;                 // when the run ended (not printed: --until, or when it settled)
  std::vector<StageTiming> stages;  // in submission order (not printed; `tide tune` reads it)
};

struct SimulationObserver {
  std::function<void(const SimulationLine&)> onLine;
  // Things a person should know that do not stop the run (a rejected set_bounds, say).
  std::function<void(const std::string&)> onDiagnostic;
};

// Runs the trace to the end. Throws SimulationError when the run cannot finish.
// A trace whose stage asks more cores per task than executor.cores could never finish (the AM's
// scheduler refuses such a job): TraceError naming the line. simulate() checks it first.
void checkTraceFits(const AllocationConfig& config, const Trace& trace);

SimulationSummary simulate(const AllocationConfig& config, const Trace& trace,
                           const SimulationOptions& options, const SimulationObserver& observer);

// The output format: one compact JSON object per line, keys in a fixed order.
std::string toJsonLine(const SimulationLine& line);
std::string toJsonLine(const SimulationSummary& summary);

// simulate() writing JSON Lines (the lines, then the summary) to `out` and diagnostics to
// `diagnostics`, one per line.
SimulationSummary simulateToStream(const AllocationConfig& config, const Trace& trace,
                                   const SimulationOptions& options, std::ostream& out,
                                   std::ostream& diagnostics);

}  // namespace tide::allocation
