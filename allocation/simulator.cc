#include "allocation/simulator.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <utility>

#include "allocation/allocation_policy.h"
#include "common/enum_names.h"
#include "rest/json.h"

namespace tide::allocation {
namespace {

// A stage of the trace as the modelled scheduler sees it. Tasks are not objects: fresh tasks
// are an index into the stage's durations and only failed tasks are queued one by one.
struct SimStage {
  const TraceEvent* event = nullptr;
  int profileId = kDefaultProfileId;  // its executors' shape (the trace's executor_cores)
  int64_t nextFresh = 0;              // the next task never started
  std::deque<int64_t> retries;        // indices of failed tasks, run before the fresh ones
  int64_t unfinished = 0;             // tasks not yet succeeded
  bool uncached = false;              // its cached blocks were dropped: report no new ones
  bool shuffleReleased = false;       // its job ended: report no new shuffle output
  // For speculation: the running attempts (task keys) of each task that has one, the tasks
  // marked for a copy not launched yet, and the durations of the successful attempts.
  std::map<int64_t, std::vector<uint64_t>> runningByIndex;
  std::set<int64_t> speculatable;
  DurationCounts successful;

  int64_t pendingCount() const {
    return static_cast<int64_t>(retries.size()) + event->taskCount - nextFresh;
  }
  bool hasWaitingWork() const { return pendingCount() > 0 || !speculatable.empty(); }
};

struct SimExecutor {
  ExecutorId id;
  int profileId = kDefaultProfileId;  // runs only tasks of stages of this profile
  TimeMs grantedAt = 0;
  bool live = true;
  int freeSlots = 0;                 // free cores (a task takes its stage's cpus)
  std::vector<uint64_t> running;     // task keys, in start order
  TimeMs busySince = -1;             // -1 while no task runs
  std::set<size_t> reportedCache;    // stages whose blocks it was reported to hold
  std::set<size_t> reportedShuffle;  // stages whose shuffle output it was reported to hold
  bool decommissioning = false;      // chosen with decommission.enabled: no new tasks
};

struct RunningTask {
  size_t stage = 0;
  size_t executor = 0;
  DurationMs duration = 0;
  int cpus = 1;
  int64_t index = 0;         // the task's index in its stage
  bool speculative = false;  // a copy launched by speculation
  TimeMs startedAt = 0;
};

struct ExecutorRequest {
  TimeMs requestedAt = 0;
  TimeMs dueAt = 0;
  int profileId = kDefaultProfileId;
};

bool isNonAction(Decision::Action action) {
  return action == Decision::Action::kNotAdding || action == Decision::Action::kKeep;
}

class Simulation {
 public:
  Simulation(const AllocationConfig& config, const Trace& trace, const SimulationOptions& options,
             const SimulationObserver& observer)
      : config_(config),
        trace_(trace),
        options_(options),
        observer_(observer),
        engine_(makeAllocationPolicy(config, clock_)),
        profiles_(ResourceProfile{kDefaultProfileId, config.executorCores, 0}) {}

  SimulationSummary run();

 private:
  // The steps of one instant, in order.
  void applyTraceEvents();
  void completeTasks();
  void grantExecutors();
  // The AM's TaskScheduler.checkSpeculatableTasks: at multiples of speculation.interval, the
  // tasks of each stage running longer than the rule allows get a copy, counted as pending.
  void checkSpeculatableTasks();
  void placeTasks();
  void releaseExecutors(const std::vector<ExecutorId>& ids);
  // Decommissioning (decommission.enabled): the executors chosen take no more tasks, and at the
  // next tick hand the data they hold to a peer and leave. The migration's own time is not
  // modelled, nor re-running outputs left without a peer.
  void decommissionExecutors(const std::vector<ExecutorId>& ids);
  void finishDecommissions();
  void reconcileRequests();

  void applyTraceEvent(const TraceEvent& event);
  void submitStage(const TraceEvent& event);
  void endJob(const TraceEvent& event);
  void setBounds(const TraceEvent& event);
  void loseNewestExecutor(const TraceEvent& event);

  // Starts the first pending task (FIFO by stage) whose cpus fit the executor's free cores, or
  // when a stage has nothing else to run, a speculative copy of one of its tasks not running on
  // this executor (as in Spark); false when none fits.
  bool startTask(size_t executorIndex);
  void launchAttempt(size_t stageIndex, int64_t index, size_t executorIndex, bool speculative,
                     bool firstAttempt);
  // Takes a running attempt off its executor and its task (it ended, failed or was killed).
  void detachAttempt(uint64_t key, const RunningTask& task);
  // The task succeeded before its marked copy launched: the copy is not needed (Spark's
  // listener drops a pending speculative task when any attempt of it succeeds).
  void dropPendingCopy(size_t stageIndex, int64_t index);
  // Executors set aside because nothing fitted their free cores may fit new work.
  void offerFreeExecutorsAgain();
  void recordSpeculation(SpeculationEvent::Kind kind, const SimStage& stage, int64_t index,
                         const std::string& executor);
  bool speculationOn() const { return options_.speculation.enabled; }
  int cpusOf(const TraceEvent& event) const {
    return event.cpus > 0 ? event.cpus : config_.taskCpus;
  }
  void finishTask(uint64_t key, const RunningTask& task);
  void failRunningTasks(size_t executorIndex);
  void releaseExecutor(size_t executorIndex, ExecutorExit exit = ExecutorExit::kOther);
  void onRunningChanged(SimExecutor& executor, int before);

  TimeMs nextInstant();
  void reportTick(const TickResult& result);
  bool settled(const TickResult& result) const;
  void checkStalled() const;
  SimulationSummary finish(TimeMs end);
  void diagnose(const TraceEvent& event, const std::string& message) const;

  const AllocationConfig& config_;
  const Trace& trace_;
  const SimulationOptions& options_;
  const SimulationObserver& observer_;
  ManualClock clock_;
  std::unique_ptr<AllocationPolicy> engine_;
  ResourceProfiles profiles_;  // one per executor_cores of the trace's stages
  TimeMs now_ = 0;

  size_t nextEvent_ = 0;
  TimeMs nextTick_ = 0;

  std::vector<SimStage> stages_;  // in submission order: placement is FIFO by stage
  std::map<std::string, size_t> stageIndex_;
  std::map<std::string, std::vector<size_t>> jobShuffleStages_;
  std::set<size_t> stagesWithPending_;  // with pending tasks or marked speculative copies
  std::set<size_t> activeStages_;       // submitted with tasks not yet succeeded
  int64_t pendingTasks_ = 0;            // with the speculative copies not launched yet

  std::unordered_map<uint64_t, RunningTask> runningTasks_;  // looked up only, never iterated
  // (end time, task key): keys grow with start order, so ties end in start order. Entries of
  // tasks that failed with a lost executor stay behind and are skipped.
  std::priority_queue<std::pair<TimeMs, uint64_t>, std::vector<std::pair<TimeMs, uint64_t>>,
                      std::greater<>>
      completions_;
  uint64_t nextTaskKey_ = 0;

  std::vector<SimExecutor> executors_;  // in grant order; index i is "e<i+1>"
  std::unordered_map<ExecutorId, size_t> executorIndex_;
  std::set<size_t> liveExecutors_;
  std::vector<size_t> decommissioning_;  // chosen at the last tick, leaving at the next
  std::set<size_t> executorsWithFreeSlots_;
  int busyExecutors_ = 0;
  std::deque<ExecutorRequest> requests_;  // oldest first; cancelled from the back

  // Accounting for the summary.
  int64_t completedTasks_ = 0;
  TimeMs lastTaskEnd_ = 0;
  int64_t executorMs_ = 0;
  int64_t busyExecutorMs_ = 0;
  int peakLive_ = 0;
  std::vector<StageTiming> stageTimings_;  // indexed like stages_
  SpeculationCounts speculationCounts_;

  // Output: what the previous line showed, and what happened since.
  SimulationCounts printedCounts_;
  std::string printedDecisionKey_;
  std::vector<std::string> addedSinceLine_;
  std::vector<std::string> removedSinceLine_;
  std::vector<SpeculationEvent> speculationSinceLine_;
};

SimulationSummary Simulation::run() {
  checkTraceFits(config_, trace_);
  // Asked for at start, before the first tick, like an application master registering.
  for (int i = 0; i < engine_->initialTarget(); ++i) {
    requests_.push_back({0, addSaturating(0, options_.grantDelay)});
  }

  int64_t ticks = 0;
  int settledTicks = 0;
  TimeMs settledSince = 0;
  bool first = true;
  while (true) {
    const TimeMs t = first ? 0 : nextInstant();
    first = false;
    if (options_.until && t > *options_.until) return finish(*options_.until);
    now_ = t;
    clock_.set(t);

    applyTraceEvents();
    completeTasks();
    grantExecutors();
    checkSpeculatableTasks();
    placeTasks();
    const bool isTick = t == nextTick_;
    TickResult result;
    if (isTick) {
      finishDecommissions();
      result = engine_->tick();
      releaseExecutors(result.toRemove);
      decommissionExecutors(result.toDecommission);
    }
    reconcileRequests();
    if (!isTick) continue;

    reportTick(result);
    nextTick_ += config_.interval;
    ++ticks;

    // Settled means nothing can change any more without a new event. Two ticks in a row make
    // sure no state the engine changed in the first (the end of its initial phase, say) acts
    // in the next; the run is taken to have ended at the first of them.
    if (settled(result)) {
      if (settledTicks++ == 0) settledSince = t;
      if (settledTicks >= 2) {
        return finish(options_.until ? *options_.until : settledSince);
      }
    } else {
      settledTicks = 0;
    }
    checkStalled();
    if (ticks >= options_.maxTicks) {
      throw SimulationError("the run did not settle within " + std::to_string(ticks) +
                            " ticks (t=" + std::to_string(now_) +
                            "ms): " + std::to_string(pendingTasks_) + " tasks pending, " +
                            std::to_string(runningTasks_.size()) + " running, " +
                            std::to_string(liveExecutors_.size()) + " executors live, target " +
                            std::to_string(engine_->snapshot().target) +
                            (options_.until ? "" : "; bound the run with --until"));
    }
  }
}

TimeMs Simulation::nextInstant() {
  TimeMs next = nextTick_;
  if (nextEvent_ < trace_.events.size()) next = std::min(next, trace_.events[nextEvent_].t);
  while (!completions_.empty() && runningTasks_.count(completions_.top().second) == 0) {
    completions_.pop();
  }
  if (!completions_.empty()) next = std::min(next, completions_.top().first);
  if (speculationOn() && !runningTasks_.empty()) {
    // Only a running task can become slow; the checks fall at multiples of the interval.
    const DurationMs interval = std::max<DurationMs>(options_.speculation.intervalMs, 1);
    next = std::min(next, (now_ / interval + 1) * interval);
  }
  // Requests due now or earlier but made in this instant wait for the next instant anyway;
  // only a due time still ahead is an instant of its own.
  auto firstAhead = std::upper_bound(
      requests_.begin(), requests_.end(), now_,
      [](TimeMs now, const ExecutorRequest& request) { return now < request.dueAt; });
  if (firstAhead != requests_.end()) next = std::min(next, firstAhead->dueAt);
  return next;
}

void Simulation::applyTraceEvents() {
  while (nextEvent_ < trace_.events.size() && trace_.events[nextEvent_].t <= now_) {
    applyTraceEvent(trace_.events[nextEvent_++]);
  }
}

void Simulation::applyTraceEvent(const TraceEvent& event) {
  switch (event.type) {
    case TraceEvent::Type::kStage:
      submitStage(event);
      break;
    case TraceEvent::Type::kUncache: {
      stages_[stageIndex_.at(event.stage)].uncached = true;
      engine_->onBlocksUncached(event.stage);
      break;
    }
    case TraceEvent::Type::kJobEnd:
      endJob(event);
      break;
    case TraceEvent::Type::kSetBounds:
      setBounds(event);
      break;
    case TraceEvent::Type::kExecutorLost:
      loseNewestExecutor(event);
      break;
  }
}

void Simulation::submitStage(const TraceEvent& event) {
  const size_t index = stages_.size();
  SimStage stage;
  stage.event = &event;
  stage.unfinished = event.taskCount;
  if (event.executorCores > 0) {
    const ResourceProfile& profile = profiles_.profileOfShape(event.executorCores, 0);
    stage.profileId = profile.id;
    engine_->addResourceProfile(profile);
  }
  const int profileId = stage.profileId;
  stages_.push_back(std::move(stage));
  stageTimings_.push_back({event.stage, now_, event.taskCount == 0 ? now_ : -1});
  stageIndex_.emplace(event.stage, index);
  if (event.shuffle) jobShuffleStages_[event.job].push_back(index);
  stagesWithPending_.insert(index);
  if (event.taskCount > 0) activeStages_.insert(index);
  pendingTasks_ += event.taskCount;
  offerFreeExecutorsAgain();
  engine_->onStageSubmitted(event.stage, event.taskCount, cpusOf(event), profileId);
}

void Simulation::endJob(const TraceEvent& event) {
  auto it = jobShuffleStages_.find(event.job);
  if (it == jobShuffleStages_.end()) return;
  for (size_t index : it->second) {
    SimStage& stage = stages_[index];
    if (stage.shuffleReleased) continue;
    stage.shuffleReleased = true;
    engine_->onShuffleReleased(stage.event->stage);
  }
}

void Simulation::setBounds(const TraceEvent& event) {
  Bounds bounds = changedBounds(engine_->snapshot().bounds, event.minExecutors,
                                event.initialExecutors, event.maxExecutors);
  std::string warning;
  const Status applied = engine_->setBounds(bounds, &warning);
  // Like a rejected PUT on a running application master: reported, and the run goes on.
  if (!applied.ok()) {
    diagnose(event, "set_bounds rejected, bounds unchanged: " + applied.message());
  }
  if (!warning.empty()) diagnose(event, "set_bounds: " + warning);
}

void Simulation::loseNewestExecutor(const TraceEvent& event) {
  if (liveExecutors_.empty()) {
    diagnose(event, "executor_lost with no live executor; ignored");
    return;
  }
  const size_t newest = *liveExecutors_.rbegin();
  failRunningTasks(newest);
  releaseExecutor(newest);
}

void Simulation::completeTasks() {
  while (!completions_.empty() && completions_.top().first <= now_) {
    const uint64_t key = completions_.top().second;
    completions_.pop();
    auto it = runningTasks_.find(key);
    if (it == runningTasks_.end()) continue;  // failed with a lost executor
    const RunningTask task = it->second;
    runningTasks_.erase(it);
    finishTask(key, task);
  }
}

void Simulation::finishTask(uint64_t key, const RunningTask& task) {
  SimExecutor& executor = executors_[task.executor];
  SimStage& stage = stages_[task.stage];
  const std::string& stageId = stage.event->stage;

  // The executor stored the task's output before the task's end reached the scheduler.
  if (stage.event->cache && !stage.uncached && executor.reportedCache.insert(task.stage).second) {
    engine_->onBlocksCached(executor.id, stageId);
  }
  if (stage.event->shuffle && !stage.shuffleReleased &&
      executor.reportedShuffle.insert(task.stage).second) {
    engine_->onShuffleOutput(executor.id, stageId);
  }

  detachAttempt(key, task);
  if (speculationOn()) stage.successful.add(task.duration);
  // As the AM: a copy marked but not launched is dropped first, then the success is heard,
  // then the other running copy ends killed.
  dropPendingCopy(task.stage, task.index);
  engine_->onTaskEnd(stageId, executor.id, TaskEnd::kSuccess, task.speculative);
  if (task.speculative) {
    ++speculationCounts_.copiesWon;
    recordSpeculation(SpeculationEvent::Kind::kCopyWon, stage, task.index, executor.id);
  }
  auto others = stage.runningByIndex.find(task.index);
  if (others != stage.runningByIndex.end()) {
    const std::vector<uint64_t> losers = others->second;
    for (uint64_t loserKey : losers) {
      auto it = runningTasks_.find(loserKey);
      const RunningTask loser = it->second;
      runningTasks_.erase(it);
      detachAttempt(loserKey, loser);
      engine_->onTaskEnd(stageId, executors_[loser.executor].id, TaskEnd::kKilled,
                         loser.speculative);
    }
    if (!task.speculative) {
      ++speculationCounts_.originalsWon;
      recordSpeculation(SpeculationEvent::Kind::kOriginalWon, stage, task.index, executor.id);
    }
  }

  ++completedTasks_;
  lastTaskEnd_ = now_;
  if (--stage.unfinished == 0) {
    activeStages_.erase(task.stage);
    engine_->onStageCompleted(stageId);
    stageTimings_[task.stage].finishedAt = now_;
  }
}

void Simulation::detachAttempt(uint64_t key, const RunningTask& task) {
  SimExecutor& executor = executors_[task.executor];
  const int before = static_cast<int>(executor.running.size());
  executor.running.erase(std::find(executor.running.begin(), executor.running.end(), key));
  executor.freeSlots += task.cpus;
  if (executor.live && !executor.decommissioning) executorsWithFreeSlots_.insert(task.executor);
  onRunningChanged(executor, before);
  SimStage& stage = stages_[task.stage];
  auto attempts = stage.runningByIndex.find(task.index);
  attempts->second.erase(std::find(attempts->second.begin(), attempts->second.end(), key));
  if (attempts->second.empty()) stage.runningByIndex.erase(attempts);
}

void Simulation::dropPendingCopy(size_t stageIndex, int64_t index) {
  SimStage& stage = stages_[stageIndex];
  if (stage.speculatable.erase(index) == 0) return;
  --pendingTasks_;
  if (!stage.hasWaitingWork()) stagesWithPending_.erase(stageIndex);
  engine_->onPendingSpeculativeTaskDropped(stage.event->stage);
  ++speculationCounts_.dropped;
  recordSpeculation(SpeculationEvent::Kind::kDropped, stage, index, "");
}

void Simulation::offerFreeExecutorsAgain() {
  for (size_t live : liveExecutors_) {
    if (executors_[live].freeSlots > 0 && !executors_[live].decommissioning) {
      executorsWithFreeSlots_.insert(live);
    }
  }
}

void Simulation::recordSpeculation(SpeculationEvent::Kind kind, const SimStage& stage,
                                   int64_t index, const std::string& executor) {
  speculationSinceLine_.push_back({now_, kind, stage.event->stage, index, executor});
}

void Simulation::checkSpeculatableTasks() {
  if (!speculationOn() || runningTasks_.empty()) return;
  const DurationMs interval = std::max<DurationMs>(options_.speculation.intervalMs, 1);
  if (now_ % interval != 0) return;
  bool marked = false;
  for (size_t stageIndex : activeStages_) {
    SimStage& stage = stages_[stageIndex];
    std::vector<RunningCopy> running;
    for (const auto& [index, keys] : stage.runningByIndex) {
      if (keys.size() != 1) continue;  // already has its copy
      running.push_back(RunningCopy{index, runningTasks_.at(keys.front()).startedAt});
    }
    for (int64_t index : speculatableTasks(stage.event->taskCount, stage.successful, running, now_,
                                           options_.speculation.rule)) {
      if (!stage.speculatable.insert(index).second) continue;
      ++pendingTasks_;
      stagesWithPending_.insert(stageIndex);
      engine_->onSpeculativeTaskSubmitted(stage.event->stage);
      ++speculationCounts_.submitted;
      recordSpeculation(SpeculationEvent::Kind::kSubmitted, stage, index, "");
      marked = true;
    }
  }
  if (marked) offerFreeExecutorsAgain();
}

void Simulation::failRunningTasks(size_t executorIndex) {
  SimExecutor& executor = executors_[executorIndex];
  const int before = static_cast<int>(executor.running.size());
  // Newest first, each pushed to the front of its stage: the failed tasks of a stage run again
  // in the order they first started, before the stage's fresh tasks.
  for (auto key = executor.running.rbegin(); key != executor.running.rend(); ++key) {
    auto it = runningTasks_.find(*key);
    const RunningTask task = it->second;
    runningTasks_.erase(it);
    executor.freeSlots += task.cpus;
    SimStage& stage = stages_[task.stage];
    auto attempts = stage.runningByIndex.find(task.index);
    attempts->second.erase(std::find(attempts->second.begin(), attempts->second.end(), *key));
    const bool otherCopyRuns = !attempts->second.empty();
    if (!otherCopyRuns) stage.runningByIndex.erase(attempts);
    engine_->onTaskEnd(stage.event->stage, executor.id, TaskEnd::kFailed, task.speculative);
    // Another copy still running will do (the AM's rule); else the task goes again. A copy
    // marked for it stays marked, as in Spark and the AM: it may run beside the retry, and it
    // counts as pending until it starts or the task succeeds.
    if (otherCopyRuns) continue;
    stage.retries.push_front(task.index);
    stagesWithPending_.insert(task.stage);
    ++pendingTasks_;
  }
  executor.running.clear();
  onRunningChanged(executor, before);
}

void Simulation::onRunningChanged(SimExecutor& executor, int before) {
  const bool wasBusy = before > 0;
  const bool isBusy = !executor.running.empty();
  if (wasBusy == isBusy) return;
  if (isBusy) {
    executor.busySince = now_;
    ++busyExecutors_;
  } else {
    busyExecutorMs_ += now_ - executor.busySince;
    executor.busySince = -1;
    --busyExecutors_;
  }
}

void Simulation::grantExecutors() {
  while (!requests_.empty() && requests_.front().dueAt <= now_ &&
         requests_.front().requestedAt < now_) {
    const int profileId = requests_.front().profileId;
    requests_.pop_front();
    const size_t index = executors_.size();
    SimExecutor executor;
    executor.id = "e" + std::to_string(index + 1);
    executor.profileId = profileId;
    executor.grantedAt = now_;
    executor.freeSlots = profiles_.find(profileId)->executorCores;
    executorIndex_.emplace(executor.id, index);
    executors_.push_back(std::move(executor));
    liveExecutors_.insert(index);
    executorsWithFreeSlots_.insert(index);
    peakLive_ = std::max(peakLive_, static_cast<int>(liveExecutors_.size()));
    addedSinceLine_.push_back(executors_[index].id);
    engine_->onExecutorAdded(executors_[index].id, profileId);
  }
}

void Simulation::placeTasks() {
  // One task per executor per round, oldest executor first, as the scheduler's offer rounds
  // spread a backlog over the executors instead of filling one before the next.
  while (!stagesWithPending_.empty() && !executorsWithFreeSlots_.empty()) {
    for (auto it = executorsWithFreeSlots_.begin();
         it != executorsWithFreeSlots_.end() && !stagesWithPending_.empty();) {
      const size_t index = *it;
      const bool started = startTask(index);
      it = !started || executors_[index].freeSlots == 0 ? executorsWithFreeSlots_.erase(it)
                                                        : std::next(it);
    }
  }
}

bool Simulation::startTask(size_t executorIndex) {
  const SimExecutor& executor = executors_[executorIndex];
  for (auto next = stagesWithPending_.begin(); next != stagesWithPending_.end(); ++next) {
    const size_t stageIndex = *next;
    SimStage& stage = stages_[stageIndex];
    // Only stages of its resource profile run on it (Spark's rule).
    if (stage.profileId != executor.profileId || cpusOf(*stage.event) > executor.freeSlots) {
      continue;
    }
    if (stage.pendingCount() > 0) {
      const bool retry = !stage.retries.empty();
      int64_t index;
      if (retry) {
        index = stage.retries.front();
        stage.retries.pop_front();
      } else {
        index = stage.nextFresh++;
      }
      if (!stage.hasWaitingWork()) stagesWithPending_.erase(next);
      launchAttempt(stageIndex, index, executorIndex, /*speculative=*/false, !retry);
      return true;
    }
    // Nothing else to run: a marked copy, but never beside an attempt of the same task (it
    // would be just as slow there; Spark's rule).
    for (auto copy = stage.speculatable.begin(); copy != stage.speculatable.end(); ++copy) {
      // Regular tasks go first, so a marked task whose attempts were lost has its retry running.
      auto attempts = stage.runningByIndex.find(*copy);
      const bool here =
          attempts != stage.runningByIndex.end() &&
          std::any_of(attempts->second.begin(), attempts->second.end(), [&](uint64_t key) {
            return runningTasks_.at(key).executor == executorIndex;
          });
      if (here) continue;
      const int64_t index = *copy;
      stage.speculatable.erase(copy);
      if (!stage.hasWaitingWork()) stagesWithPending_.erase(next);
      launchAttempt(stageIndex, index, executorIndex, /*speculative=*/true, false);
      return true;
    }
  }
  return false;
}

void Simulation::launchAttempt(size_t stageIndex, int64_t index, size_t executorIndex,
                               bool speculative, bool firstAttempt) {
  SimExecutor& executor = executors_[executorIndex];
  SimStage& stage = stages_[stageIndex];
  const int cpus = cpusOf(*stage.event);
  // A straggler is slow on its first attempt only; a copy or a retry takes the task's time.
  const DurationMs duration =
      firstAttempt ? stage.event->firstAttemptDuration(index) : stage.event->taskDuration(index);
  --pendingTasks_;
  const uint64_t key = nextTaskKey_++;
  runningTasks_.emplace(
      key, RunningTask{stageIndex, executorIndex, duration, cpus, index, speculative, now_});
  completions_.emplace(now_ + duration, key);
  stage.runningByIndex[index].push_back(key);
  const int before = static_cast<int>(executor.running.size());
  executor.running.push_back(key);
  executor.freeSlots -= cpus;
  onRunningChanged(executor, before);
  engine_->onTaskStart(stage.event->stage, executor.id, speculative);
  if (speculative) {
    ++speculationCounts_.launched;
    recordSpeculation(SpeculationEvent::Kind::kLaunched, stage, index, executor.id);
  }
}

void Simulation::releaseExecutors(const std::vector<ExecutorId>& ids) {
  for (const auto& id : ids) {
    auto it = executorIndex_.find(id);
    if (it == executorIndex_.end() || !executors_[it->second].live) continue;
    // The policy removes only idle executors, and placement ran before the tick; should one
    // still run tasks, they fail and run again elsewhere, as they would on a real cluster.
    failRunningTasks(it->second);
    releaseExecutor(it->second);
  }
}

void Simulation::decommissionExecutors(const std::vector<ExecutorId>& ids) {
  for (const auto& id : ids) {
    auto it = executorIndex_.find(id);
    if (it == executorIndex_.end() || !executors_[it->second].live) continue;
    executors_[it->second].decommissioning = true;
    executorsWithFreeSlots_.erase(it->second);
    decommissioning_.push_back(it->second);
  }
}

void Simulation::finishDecommissions() {
  std::vector<size_t> leaving;
  leaving.swap(decommissioning_);
  for (size_t index : leaving) {
    SimExecutor& executor = executors_[index];
    if (!executor.live) continue;
    failRunningTasks(index);  // none: only idle executors are chosen, and they get no tasks
    // Its data goes to the first live peer that is not leaving (the AM spreads it over all).
    std::optional<size_t> peer;
    for (size_t live : liveExecutors_) {
      if (live != index && !executors_[live].decommissioning) {
        peer = live;
        break;
      }
    }
    if (peer) {
      SimExecutor& taker = executors_[*peer];
      for (size_t stage : executor.reportedShuffle) {
        if (stages_[stage].shuffleReleased || !taker.reportedShuffle.insert(stage).second) continue;
        engine_->onShuffleOutput(taker.id, stages_[stage].event->stage);
      }
      for (size_t stage : executor.reportedCache) {
        if (stages_[stage].uncached || !taker.reportedCache.insert(stage).second) continue;
        engine_->onBlocksCached(taker.id, stages_[stage].event->stage);
      }
    }
    releaseExecutor(index, ExecutorExit::kDecommissionFinished);
  }
}

void Simulation::releaseExecutor(size_t executorIndex, ExecutorExit exit) {
  SimExecutor& executor = executors_[executorIndex];
  executor.live = false;
  executorMs_ += now_ - executor.grantedAt;
  liveExecutors_.erase(executorIndex);
  executorsWithFreeSlots_.erase(executorIndex);
  removedSinceLine_.push_back(executor.id);
  engine_->onExecutorRemoved(executor.id, exit);
}

void Simulation::reconcileRequests() {
  if (profiles_.all().size() == 1) {
    // One profile (no stage has executor_cores): the total, without a walk over executors.
    const int64_t target = engine_->snapshot().target;
    const int64_t outstanding =
        static_cast<int64_t>(liveExecutors_.size()) + static_cast<int64_t>(requests_.size());
    if (target > outstanding) {
      const TimeMs due = addSaturating(now_, options_.grantDelay);
      for (int64_t i = outstanding; i < target; ++i) requests_.push_back({now_, due});
    } else {
      // Lowering the target only withdraws requests not yet granted, newest first.
      for (int64_t i = target; i < outstanding && !requests_.empty(); ++i) requests_.pop_back();
    }
    return;
  }
  // Each resource profile's target against its live executors and requests.
  for (const ProfileSnapshot& profile : engine_->snapshot().profiles) {
    const int id = profile.profile.id;
    int64_t outstanding = 0;
    for (size_t live : liveExecutors_) outstanding += executors_[live].profileId == id ? 1 : 0;
    for (const ExecutorRequest& request : requests_) outstanding += request.profileId == id ? 1 : 0;
    const int64_t target = profile.target;
    if (target > outstanding) {
      const TimeMs due = addSaturating(now_, options_.grantDelay);
      for (int64_t i = outstanding; i < target; ++i) requests_.push_back({now_, due, id});
      continue;
    }
    // Lowering the target only withdraws requests not yet granted, newest first.
    for (int64_t i = target; i < outstanding; ++i) {
      auto newest = std::find_if(requests_.rbegin(), requests_.rend(),
                                 [&](const ExecutorRequest& r) { return r.profileId == id; });
      if (newest == requests_.rend()) break;
      requests_.erase(std::next(newest).base());
    }
  }
}

void Simulation::reportTick(const TickResult& result) {
  SimulationLine line;
  line.t = now_;
  SimulationCounts counts;
  counts.target = result.target;
  counts.live = static_cast<int>(liveExecutors_.size());
  counts.pending = static_cast<int>(requests_.size());
  counts.busy = busyExecutors_;
  counts.tasksPending = pendingTasks_;
  counts.tasksRunning = static_cast<int64_t>(runningTasks_.size());

  // Non-actions repeat every tick while nothing changes ("not adding: at maxExecutors=8",
  // "keeping e3: idle for 6.1s but at minExecutors=2", whose idle time grows): a line repeats
  // them only when they are not the ones the previous line showed.
  bool madeAction = false;
  std::string decisionKey;
  for (const Decision& decision : result.decisions) {
    if (!line.why.empty()) line.why += "; ";
    line.why += decision.why;
    madeAction = madeAction || !isNonAction(decision.action);
    decisionKey += actionName(decision.action);
    decisionKey += ' ';
    decisionKey += decision.action == Decision::Action::kKeep ? decision.executor : decision.why;
    decisionKey += '\n';
  }

  const bool changed = !(counts == printedCounts_) || !addedSinceLine_.empty() ||
                       !removedSinceLine_.empty() || !speculationSinceLine_.empty() || madeAction ||
                       (!decisionKey.empty() && decisionKey != printedDecisionKey_);
  if (!changed) return;

  static_cast<SimulationCounts&>(line) = counts;
  line.added = std::move(addedSinceLine_);
  line.removed = std::move(removedSinceLine_);
  line.speculation = std::move(speculationSinceLine_);
  addedSinceLine_.clear();
  removedSinceLine_.clear();
  speculationSinceLine_.clear();
  printedCounts_ = counts;
  printedDecisionKey_ = decisionKey;
  if (observer_.onLine) observer_.onLine(line);
}

bool Simulation::settled(const TickResult& result) const {
  // The requests are reconciled every instant, so with none pending live >= target; more live
  // than the target is steady when what holds them (cached data, min) will not let go.
  if (nextEvent_ < trace_.events.size() || pendingTasks_ > 0 || !runningTasks_.empty() ||
      !requests_.empty() || result.targetChanged() || !result.toRemove.empty() ||
      !result.toDecommission.empty() || !decommissioning_.empty()) {
    return false;
  }
  if (!config_.enabled) return true;  // a fixed executor set: no policy acts on it
  // An idle deadline still ahead will make a decision then (a removal, or keeping the executor
  // at minExecutors, which a line reports); one already past was decided on.
  for (const ExecutorTracker* tracker : engine_->monitor().all()) {
    if (tracker->timeoutAt > now_ && tracker->timeoutAt != kInfiniteMs) return false;
  }
  return true;
}

void Simulation::checkStalled() const {
  if (nextEvent_ < trace_.events.size() || pendingTasks_ == 0 || !runningTasks_.empty() ||
      !liveExecutors_.empty() || !requests_.empty()) {
    return;
  }
  const AllocationSnapshot snapshot = engine_->snapshot();
  if (snapshot.target > 0) return;
  // The backlog timer has fired (or never will) and still no executor was asked for.
  const bool timerSpent =
      snapshot.addTime < 0 || snapshot.addTime <= now_ || snapshot.addTime == kInfiniteMs;
  if (config_.enabled && !timerSpent) return;
  throw SimulationError("stalled at t=" + std::to_string(now_) +
                        "ms: " + std::to_string(pendingTasks_) +
                        " tasks are pending but the target stays at 0 executors and no trace "
                        "event is left to change that");
}

SimulationSummary Simulation::finish(TimeMs end) {
  now_ = end;
  for (size_t index : liveExecutors_) {
    const SimExecutor& executor = executors_[index];
    executorMs_ += end - executor.grantedAt;
    if (executor.busySince >= 0) busyExecutorMs_ += end - executor.busySince;
  }
  SimulationSummary summary;
  summary.makespanMs = lastTaskEnd_;
  summary.executorMs = executorMs_;
  summary.busyExecutorMs = busyExecutorMs_;
  summary.peakLive = peakLive_;
  summary.tasks = completedTasks_;
  if (speculationOn()) summary.speculation = speculationCounts_;
  summary.endMs = end;
  summary.stages = stageTimings_;
  return summary;
}

void Simulation::diagnose(const TraceEvent& event, const std::string& message) const {
  if (observer_.onDiagnostic) {
    observer_.onDiagnostic(trace_.source + ":" + std::to_string(event.line) +
                           ": t=" + std::to_string(event.t) + ": " + message);
  }
}

void writeIdList(rest::JsonWriter& out, const std::vector<std::string>& ids) {
  out.startArray();
  for (const auto& id : ids) out.value(id);
  out.endArray();
}

}  // namespace

const char* speculationEventName(SpeculationEvent::Kind kind) {
  static constexpr const char* kNames[] = {"submitted", "launched", "copy_won", "original_won",
                                           "dropped"};
  return enumName(kind, kNames, "unknown");
}

void checkTraceFits(const AllocationConfig& config, const Trace& trace) {
  for (const TraceEvent& event : trace.events) {
    if (event.type == TraceEvent::Type::kStage && event.executorCores > 0 &&
        (!config.enabled || config.policy != PolicyKind::kSpark)) {
      // As the AM refuses such a job: only Spark's policy keeps a target per profile.
      throw TraceError(trace.source + ":" + std::to_string(event.line) +
                       ": field 'executor_cores': a stage with executors of its own needs "
                       "dynamicAllocation.enabled=true and dynamicAllocation.policy=spark");
    }
    const int cpus = event.cpus > 0 ? event.cpus : config.taskCpus;
    const int cores = event.executorCores > 0 ? event.executorCores : config.executorCores;
    if (event.type == TraceEvent::Type::kStage && cpus > cores) {
      throw TraceError(trace.source + ":" + std::to_string(event.line) +
                       ": field 'cpus': " + std::to_string(cpus) + " cores per task is more than " +
                       (event.executorCores > 0 ? "its executor_cores (" : "executor.cores (") +
                       std::to_string(cores) + ")");
    }
  }
}

SimulationSummary simulate(const AllocationConfig& config, const Trace& trace,
                           const SimulationOptions& options, const SimulationObserver& observer) {
  if (options.grantDelay < 0 || options.grantDelay == kInfiniteMs) {
    throw SimulationError("the grant delay must be finite and not negative");
  }
  Simulation simulation(config, trace, options, observer);
  return simulation.run();
}

std::string toJsonLine(const SimulationLine& line) {
  rest::JsonWriter out;
  out.startObject()
      .field("t", line.t)
      .field("target", line.target)
      .field("live", line.live)
      .field("pending", line.pending)
      .field("busy", line.busy)
      .field("tasks_pending", line.tasksPending)
      .field("tasks_running", line.tasksRunning)
      .key("added");
  writeIdList(out, line.added);
  out.key("removed");
  writeIdList(out, line.removed);
  if (!line.speculation.empty()) {
    // Only on lines where speculation did something, so runs without it print what they did.
    out.key("speculation").startArray();
    for (const SpeculationEvent& event : line.speculation) {
      out.startObject()
          .field("t", event.t)
          .field("event", speculationEventName(event.kind))
          .field("stage", event.stage)
          .field("task", event.task);
      if (!event.executor.empty()) out.field("executor", event.executor);
      out.endObject();
    }
    out.endArray();
  }
  out.field("why", line.why).endObject();
  return out.str();
}

std::string toJsonLine(const SimulationSummary& summary) {
  rest::JsonWriter out;
  out.startObject()
      .key("summary")
      .startObject()
      .field("makespan_ms", summary.makespanMs)
      .field("executor_ms", summary.executorMs)
      .field("busy_executor_ms", summary.busyExecutorMs)
      .field("peak_live", summary.peakLive)
      .field("tasks", summary.tasks);
  if (summary.speculation) {
    const SpeculationCounts& counts = *summary.speculation;
    out.key("speculation")
        .startObject()
        .field("submitted", counts.submitted)
        .field("launched", counts.launched)
        .field("copies_won", counts.copiesWon)
        .field("originals_won", counts.originalsWon)
        .field("dropped", counts.dropped)
        .endObject();
  }
  out.endObject().endObject();
  return out.str();
}

SimulationSummary simulateToStream(const AllocationConfig& config, const Trace& trace,
                                   const SimulationOptions& options, std::ostream& out,
                                   std::ostream& diagnostics) {
  SimulationObserver observer;
  observer.onLine = [&out](const SimulationLine& line) { out << toJsonLine(line) << '\n'; };
  observer.onDiagnostic = [&diagnostics](const std::string& message) {
    diagnostics << message << '\n';
  };
  const SimulationSummary summary = simulate(config, trace, options, observer);
  out << toJsonLine(summary) << '\n';
  out.flush();
  return summary;
}

}  // namespace tide::allocation
