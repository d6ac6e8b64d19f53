#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/allocation_policy.h"
#include "allocation/executor_monitor.h"
#include "allocation/policy_base.h"
#include "common/clock.h"

namespace tide::allocation {

// `dynamicAllocation.policy=adaptive`: sizes the executor set from what the AM observes instead
// of ramping on backlog timers.
//
// - Work: each stage's tasks are estimated at the mean duration of its finished tasks (before
//   any finishes, the larger of the recent task duration, or 500 ms before any task ever ended,
//   and the age of its oldest running task). The work is the pending tasks' estimate plus what
//   the running tasks have left.
// - Up: the target is at once the executors that finish that work within
//   `dynamicAllocation.adaptive.targetBacklogDuration` (Dask's target_duration), plus, while
//   stages arrive faster than that target (a stream), the executors their arrival rate keeps
//   busy; never above the tasks' parallelism nor maxExecutors. Nothing is added when the live
//   executors finish the work before a new one could start (start latency: request to
//   registration, measured).
// - Down: the target falls as the work drains (cancelling requests not yet granted). An idle
//   executor without cached or shuffle data is released at once when no task is pending, unless
//   the next stage is expected (from the recent interval between stages) before a replacement
//   could start (twice the start latency): then it is kept, up to the number of executors that
//   were busy within the last target duration. Spark's idle deadlines (executorIdleTimeout,
//   cachedExecutorIdleTimeout, shuffle tracking) still bound how long any executor is kept.
class AdaptiveAllocationPolicy final : public PolicyBase {
 public:
  // Before any task has ended, a task is assumed to take this long (Dask's
  // distributed.scheduler.unknown-task-duration).
  static constexpr DurationMs kUnknownTaskMs = 500;
  // Before any executor has registered, starting one is assumed to take this long.
  static constexpr DurationMs kUnknownStartLatencyMs = 1000;

  AdaptiveAllocationPolicy(const AllocationConfig& config, const Clock& clock);

  const char* name() const override { return "adaptive"; }
  int initialTarget() const override { return initialTarget_; }

  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus = 0,
                        int profileId = kDefaultProfileId) override;
  void onStageCompleted(const std::string& stageId) override;
  void onTaskStart(const std::string& stageId, const ExecutorId& executor,
                   bool speculative = false) override;
  void onTaskEnd(const std::string& stageId, const ExecutorId& executor, TaskEnd how,
                 bool speculative = false) override;
  void onSpeculativeTaskSubmitted(const std::string& stageId) override;
  // Also measures the start latency: a registration ends the oldest outstanding request.
  void onExecutorAdded(const ExecutorId& id, int profileId = kDefaultProfileId) override;
  AllocationSnapshot snapshot() const override;

  // What the policy estimates now (for tests and the status page).
  struct Estimate {
    double workMs = 0;  // pending tasks' estimated work plus running tasks' remainder
    double executorWorkMs =
        0;  // the same in executor time: each stage's work / its tasks per executor
    double arrivalSlots = 0;  // slots a stream of stages keeps busy (0 when not a stream)
    int64_t tasks = 0;        // pending (with speculative) and running tasks
    int byWork = 0;           // executors finishing the work within the target, plus the stream
    int byParallelism = 0;    // executors the tasks can use at all
    int desired = 0;          // the smaller of the two, within [min, max]
  };
  Estimate estimate() const;
  // Request to registration, smoothed; kUnknownStartLatencyMs before the first registration.
  DurationMs startLatencyMs() const;
  // The expected duration of a task of the stage at the moment.
  double expectedTaskMs(const std::string& stageId) const;

 private:
  // What a known stage's tasks took (the counts are in tasks_); kept from its first task start
  // until the stage is forgotten.
  struct StageHistory {
    int64_t finished = 0;
    int64_t finishedMs = 0;
    // Start times of running attempts by executor (oldest first).
    std::unordered_map<ExecutorId, std::deque<TimeMs>> starts;
  };

  const StageHistory& historyOf(const std::string& stageId) const;
  double stageTaskMs(const StageHistory& stage, TimeMs now) const;
  double priorTaskMs() const;
  // Remembers the busy executors of the last target duration.
  void beforeStep(TimeMs now) override;
  void step(TimeMs now, TickResult& result) override;
  std::string needText(const Estimate& e) const;
  void raiseTarget(const Estimate& e, TickResult& result);
  void lowerTarget(const Estimate& e, int floor, TickResult& result);
  // Releases idle executors above `needed` (and min) that no expected work will want soon.
  void removeIdle(TimeMs now, int needed, TickResult& result);
  // The stage is done: what its tasks took is learned from, then its history goes.
  void forgetStage(const std::string& stageId);
  void trackRequests(TimeMs now);

  const int initialTarget_;
  std::unordered_map<std::string, StageHistory> history_;

  // Learned from what happened.
  double recentTaskMs_ = -1;  // mean task of the last finished stage (or the first task); -1: none
  double startLatencyMs_ = -1;         // smoothed request-to-registration time; -1: none yet
  std::deque<TimeMs> requestedAt_;     // outstanding requests, oldest first
  TimeMs lastStageAt_ = -1;            // when the latest stage was submitted
  std::deque<double> stageIntervals_;  // the last intervals between stage submissions
  std::deque<double> stageWorks_;      // the last finished stages' work (their tasks' time)
  double stageIntervalMs_ = -1;        // their medians; -1: none yet
  double stageWorkMs_ = -1;
  std::deque<std::pair<TimeMs, int>> busyHistory_;  // (tick time, busy executors)
};

}  // namespace tide::allocation
