#include "allocation/adaptive_allocation_policy.h"

#include "allocation/executor_allocation_manager.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>

namespace tide::allocation {
namespace {

// Smoothing of the learned durations: each new observation moves the estimate this far.
constexpr double kAlpha = 0.3;
// An idle executor is kept when work is expected before this many start latencies have passed:
// releasing it and asking again would cost more than keeping it (ski rental).
constexpr double kReuseFactor = 2.0;

double smooth(double current, double sample) {
  return current < 0 ? sample : current + kAlpha * (sample - current);
}

// The median of the last few observations: one odd stage (a long one before short ones, a
// pause in a stream) does not move it.
constexpr size_t kRecent = 5;
void remember(std::deque<double>& recent, double sample) {
  recent.push_back(sample);
  if (recent.size() > kRecent) recent.pop_front();
}
double median(const std::deque<double>& recent) {
  if (recent.empty()) return -1;
  std::vector<double> sorted(recent.begin(), recent.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

// "38.0s", "0.4s": durations in the decision log, in seconds with one decimal.
std::string secs(double ms) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << ms / 1000.0 << "s";
  return out.str();
}

std::string executors(int64_t n) {
  return std::to_string(n) + (n == 1 ? " executor" : " executors");
}

int ceilToInt(double x) {
  if (x <= 0) return 0;
  const double c = std::ceil(x - 1e-9);
  return c >= static_cast<double>(INT_MAX) ? INT_MAX : static_cast<int>(c);
}

}  // namespace

AdaptiveAllocationPolicy::AdaptiveAllocationPolicy(const AllocationConfig& config,
                                                   const Clock& clock)
    : PolicyBase(config, clock), initialTarget_(startTarget(config)) {
  if (config_.enabled) trackRequests(clock_.nowMs());
}

double AdaptiveAllocationPolicy::priorTaskMs() const {
  return recentTaskMs_ >= 0 ? recentTaskMs_ : static_cast<double>(kUnknownTaskMs);
}

const AdaptiveAllocationPolicy::StageHistory& AdaptiveAllocationPolicy::historyOf(
    const std::string& stageId) const {
  static const StageHistory kNone;
  auto it = history_.find(stageId);
  return it == history_.end() ? kNone : it->second;
}

double AdaptiveAllocationPolicy::stageTaskMs(const StageHistory& stage, TimeMs now) const {
  if (stage.finished > 0) {
    return static_cast<double>(stage.finishedMs) / static_cast<double>(stage.finished);
  }
  // Nothing finished yet: a task that has run for x is expected to run about as long again.
  double oldest = 0;
  for (const auto& [executor, starts] : stage.starts) {
    if (!starts.empty()) oldest = std::max(oldest, static_cast<double>(now - starts.front()));
  }
  return std::max(priorTaskMs(), 2 * oldest);
}

double AdaptiveAllocationPolicy::expectedTaskMs(const std::string& stageId) const {
  return tasks_.stages().count(stageId) == 0 ? priorTaskMs()
                                             : stageTaskMs(historyOf(stageId), clock_.nowMs());
}

DurationMs AdaptiveAllocationPolicy::startLatencyMs() const {
  return startLatencyMs_ < 0 ? kUnknownStartLatencyMs : static_cast<DurationMs>(startLatencyMs_);
}

AdaptiveAllocationPolicy::Estimate AdaptiveAllocationPolicy::estimate() const {
  const TimeMs now = clock_.nowMs();
  Estimate e;
  for (const auto& [id, stage] : tasks_.stages()) {
    const StageHistory& history = historyOf(id);
    const double taskMs = stageTaskMs(history, now);
    double stageWorkMs = static_cast<double>(stage.pending + stage.pendingSpeculative) * taskMs;
    for (const auto& [executor, starts] : history.starts) {
      for (TimeMs start : starts) {
        stageWorkMs += std::max(0.0, taskMs - static_cast<double>(now - start));
      }
    }
    e.workMs += stageWorkMs;
    // A stage of wide tasks (its own cpus per task) fills an executor with fewer of them.
    const int cpus = stage.taskCpus > 0 ? stage.taskCpus : config_.taskCpus;
    e.executorWorkMs += stageWorkMs / static_cast<double>(StageTaskCounts::tasksPerExecutor(
                                          config_.executorCores, cpus));
  }
  e.tasks = tasks_.total();
  // A stream: stages keep coming faster than the target and the latest is not overdue.
  if (stageIntervalMs_ > 0 && stageWorkMs_ > 0 &&
      stageIntervalMs_ < static_cast<double>(config_.targetBacklogDuration) &&
      static_cast<double>(now - lastStageAt_) <= 2 * stageIntervalMs_) {
    e.arrivalSlots = stageWorkMs_ / stageIntervalMs_;
  }
  const double slots = static_cast<double>(config_.tasksPerExecutor());
  const double target = static_cast<double>(config_.targetBacklogDuration);
  e.byWork = ceilToInt(e.executorWorkMs / target + e.arrivalSlots / slots);
  e.byParallelism =
      std::max(ceilToInt(tasks_.executorsFilled(config_.executorCores, config_.taskCpus) *
                         config_.executorAllocationRatio),
               ceilToInt(e.arrivalSlots / slots));
  int desired = std::min(e.byWork, e.byParallelism);
  if (e.tasks > 0) desired = std::max(desired, 1);
  e.desired = std::clamp(desired, config_.bounds.minExecutors, config_.bounds.maxExecutors);
  return e;
}

void AdaptiveAllocationPolicy::onStageSubmitted(const std::string& stageId, int64_t numTasks,
                                                int taskCpus, int /*profileId*/) {
  // One target for all: the AM refuses stages with their own executor shape under this policy
  // (application_master.cc), so every stage here is of the default profile.
  initializing_ = false;
  const TimeMs now = clock_.nowMs();
  tasks_.onStageSubmitted(stageId, numTasks, taskCpus);
  if (lastStageAt_ >= 0) {
    remember(stageIntervals_, static_cast<double>(now - lastStageAt_));
    stageIntervalMs_ = median(stageIntervals_);
  }
  lastStageAt_ = now;
}

void AdaptiveAllocationPolicy::forgetStage(const std::string& stageId) {
  auto it = history_.find(stageId);
  if (it == history_.end()) return;
  // What the stage's tasks took in all: the work a stage of a stream brings.
  if (it->second.finished > 0) {
    remember(stageWorks_, static_cast<double>(it->second.finishedMs));
    stageWorkMs_ = median(stageWorks_);
    // A new stage's tasks are first taken to be like those of the last stage that finished.
    recentTaskMs_ =
        static_cast<double>(it->second.finishedMs) / static_cast<double>(it->second.finished);
  }
  history_.erase(it);
}

void AdaptiveAllocationPolicy::onStageCompleted(const std::string& stageId) {
  if (tasks_.onStageCompleted(stageId) == StageTaskCounts::Change::kForgotten) forgetStage(stageId);
}

void AdaptiveAllocationPolicy::onTaskStart(const std::string& stageId, const ExecutorId& executor,
                                           bool speculative) {
  tasks_.onTaskStart(stageId, speculative);
  history_[stageId].starts[executor].push_back(clock_.nowMs());
  monitor_.onTaskStart(executor);
  busyHistory_.emplace_back(clock_.nowMs(), monitor_.busyCount());
}

void AdaptiveAllocationPolicy::onTaskEnd(const std::string& stageId, const ExecutorId& executor,
                                         TaskEnd how, bool speculative) {
  monitor_.onTaskEnd(executor);
  const StageTaskCounts::Change change =
      tasks_.onTaskEnd(stageId, how == TaskEnd::kFailed && !speculative);
  if (change == StageTaskCounts::Change::kUnknownStage) return;
  auto history = history_.find(stageId);
  if (history != history_.end()) {
    StageHistory& stage = history->second;
    auto starts = stage.starts.find(executor);
    if (starts != stage.starts.end() && !starts->second.empty()) {
      const double took = static_cast<double>(clock_.nowMs() - starts->second.front());
      starts->second.pop_front();
      if (starts->second.empty()) stage.starts.erase(starts);
      if (how == TaskEnd::kSuccess) {
        ++stage.finished;
        stage.finishedMs += static_cast<int64_t>(took);
        if (recentTaskMs_ < 0) recentTaskMs_ = took;
      }
    }
  }
  if (change == StageTaskCounts::Change::kForgotten) forgetStage(stageId);
}

void AdaptiveAllocationPolicy::onSpeculativeTaskSubmitted(const std::string& stageId) {
  tasks_.onSpeculativeTaskSubmitted(stageId);
}

void AdaptiveAllocationPolicy::onExecutorAdded(const ExecutorId& id, int profileId) {
  PolicyBase::onExecutorAdded(id, profileId);
  if (!requestedAt_.empty()) {
    startLatencyMs_ =
        smooth(startLatencyMs_, static_cast<double>(clock_.nowMs() - requestedAt_.front()));
    requestedAt_.pop_front();
  }
}

void AdaptiveAllocationPolicy::trackRequests(TimeMs now) {
  // The executors asked for and not yet registered, oldest first: a registration ends the
  // oldest request (its wait is the start latency); a lower target withdraws the newest.
  const int live = liveExecutors();
  const size_t outstanding = static_cast<size_t>(std::max(0, target_ - live));
  while (requestedAt_.size() < outstanding) requestedAt_.push_back(now);
  while (requestedAt_.size() > outstanding) requestedAt_.pop_back();
}

void AdaptiveAllocationPolicy::beforeStep(TimeMs now) {
  busyHistory_.emplace_back(now, monitor_.busyCount());
  // The busy counts of the last target duration (at least two stage intervals and two start
  // latencies) are kept: while a stream goes on, an executor it kept busy in that time stays.
  const double window = std::max({2 * std::max(stageIntervalMs_, 0.0),
                                  kReuseFactor * static_cast<double>(startLatencyMs()),
                                  static_cast<double>(config_.targetBacklogDuration)});
  while (!busyHistory_.empty() && static_cast<double>(now - busyHistory_.front().first) > window) {
    busyHistory_.pop_front();
  }
}

void AdaptiveAllocationPolicy::step(TimeMs now, TickResult& result) {
  const Estimate e = estimate();
  // The executors the work still needs: what the estimate asks for, and the busy ones.
  const int floor = std::max(e.desired, std::min(monitor_.busyCount(), e.byParallelism));
  raiseTarget(e, result);
  removeIdle(now, floor, result);
  lowerTarget(e, floor, result);
  trackRequests(now);
}

std::string AdaptiveAllocationPolicy::needText(const Estimate& e) const {
  std::ostringstream need;
  need << "backlog " << secs(e.workMs) << " of work / target "
       << secs(static_cast<double>(config_.targetBacklogDuration));
  if (e.arrivalSlots > 0) {
    need << " + stages every " << secs(stageIntervalMs_) << " bringing " << secs(stageWorkMs_)
         << " each";
  }
  need << " → " << executors(e.desired);
  return need.str();
}

void AdaptiveAllocationPolicy::raiseTarget(const Estimate& e, TickResult& result) {
  const double latency = static_cast<double>(startLatencyMs());
  const int live = liveExecutors();
  const int max = config_.bounds.maxExecutors;
  if (e.desired > target_) {
    // New executors come after the start latency: not worth asking when the live ones finish
    // the work first.
    const double liveExecutorMs = static_cast<double>(live) * latency;
    if (live > 0 && e.arrivalSlots == 0 && e.executorWorkMs <= liveExecutorMs) {
      const std::string why = "not adding: " + executors(live) + " finish " + secs(e.workMs) +
                              " of work before a new one could start (start latency " +
                              secs(latency) + ")";
      result.decisions.push_back({Decision::Action::kNotAdding, target_, "", why});
      return;
    }
    const int before = target_;
    target_ = e.desired;
    std::string why = needText(e);
    if (target_ == max && e.byWork > max) {
      why += " (maxExecutors)";
    } else if (e.byParallelism < e.byWork) {
      why += " (all the tasks can use)";
    }
    why += "; start latency " + secs(latency) + "; target " + std::to_string(before) + " → " +
           std::to_string(target_);
    result.decisions.push_back({Decision::Action::kRaiseTarget, target_, "", why});
    return;
  }
  if (target_ >= max && e.byWork > max && e.byParallelism > max) {
    result.decisions.push_back({Decision::Action::kNotAdding, target_, "",
                                "not adding: at maxExecutors=" + std::to_string(max) + " with " +
                                    secs(e.workMs) + " of work"});
  }
}

void AdaptiveAllocationPolicy::lowerTarget(const Estimate& e, int floor, TickResult& result) {
  // While initializing the target is never lowered: the first job would find nothing. Above
  // what the work needs the target follows the live executors down (kept idle ones included),
  // so that requests not yet granted are withdrawn and the target does not flap on a stream.
  if (initializing_ || floor >= target_) return;
  const int live = liveExecutors();
  const int lowered = std::max(floor, std::min(target_, live));
  if (lowered >= target_) return;
  const int before = target_;
  target_ = lowered;
  std::string why = "lowered target " + std::to_string(before) + " → " + std::to_string(target_) +
                    ": " + needText(e);
  if (target_ > e.desired) {
    why += "; " + std::to_string(target_) + (floor == target_ ? " still busy" : " still live");
  }
  if (target_ == config_.bounds.minExecutors && target_ > 0) why += " (minExecutors)";
  result.decisions.push_back({Decision::Action::kLowerTarget, target_, "", why});
}

namespace {

// How long until the next stage is expected (-1: none is): stages that keep coming at their
// usual interval bring the next one at the last one plus that interval.
double untilNextStageMs(TimeMs now, TimeMs lastStageAt, double stageIntervalMs) {
  if (stageIntervalMs > 0 && static_cast<double>(now - lastStageAt) <= 2 * stageIntervalMs) {
    return std::max(0.0,
                    static_cast<double>(lastStageAt) + stageIntervalMs - static_cast<double>(now));
  }
  return -1;
}

// Executors idle without data, longest idle first.
std::vector<const ExecutorTracker*> idleWithoutData(const ExecutorMonitor& monitor) {
  std::vector<const ExecutorTracker*> idle;
  for (const ExecutorTracker* t : monitor.all()) {
    if (t->runningTasks == 0 && !t->pendingRemoval && !t->timedOut && t->cachedData.empty() &&
        t->shuffles.empty()) {
      idle.push_back(t);
    }
  }
  std::stable_sort(idle.begin(), idle.end(),
                   [](const auto* a, const auto* b) { return a->idleSince < b->idleSince; });
  return idle;
}

// Why an executor past its deadline stays: the work or minExecutors needs it.
std::string keptByFloor(const ExecutorId& id, const std::string& idleFor, int floor,
                        int minExecutors) {
  return "keeping " + id + ": idle for " + idleFor + " but " +
         (floor > minExecutors ? "the work needs " + executors(floor)
                               : "at minExecutors=" + std::to_string(minExecutors));
}

// Why an idle executor stays for the next stage (ski rental).
std::string keptForNextStage(const ExecutorId& id, double untilNextMs, double stageIntervalMs,
                             double latency) {
  return "keeping " + id + ": next stage expected in " + secs(untilNextMs) + " (stages every " +
         secs(stageIntervalMs) + "), before a replacement could start (" +
         secs(kReuseFactor * latency) + ", twice the start latency)";
}

std::string releaseReason(const std::string& verb, const ExecutorTracker& t,
                          const std::string& idleFor, bool deadline, int floor, double untilNextMs,
                          double latency) {
  std::string why = verb + t.id + ": idle for " + idleFor;
  if (deadline) {
    why += t.cachedData.empty() ? " (executorIdleTimeout)" : " with cached data";
  } else {
    why += " with no task pending; the work needs " + executors(floor);
    why += untilNextMs < 0 ? "; no further stage expected"
                           : "; next stage expected in " + secs(untilNextMs) +
                                 ", a replacement starts in " + secs(latency);
  }
  return why;
}

}  // namespace

void AdaptiveAllocationPolicy::removeIdle(TimeMs now, int needed, TickResult& result) {
  // Spark's deadlines first: idle timeouts, cached data, shuffle tracking.
  const std::vector<ExecutorId>& timedOut = monitor_.timedOutExecutors();
  if (!timedOut.empty()) initializing_ = false;
  if (initializing_) return;

  const double latency = static_cast<double>(startLatencyMs());
  // Is more work expected before a released executor could be replaced?
  const double untilNextMs = untilNextStageMs(now, lastStageAt_, stageIntervalMs_);
  const bool expectedSoon = untilNextMs >= 0 && untilNextMs <= kReuseFactor * latency;
  // How many executors the recent work kept busy: the ones kept for the expected work.
  int recentBusy = 0;
  for (const auto& [t, busy] : busyHistory_) recentBusy = std::max(recentBusy, busy);

  int remaining = liveExecutors();
  const int floor = std::max(config_.bounds.minExecutors, needed);
  const int keepFor = expectedSoon ? std::max(floor, recentBusy) : floor;

  // Candidates: past a Spark deadline, or idle without data while nothing is pending.
  std::vector<const ExecutorTracker*> candidates;
  for (const ExecutorId& id : timedOut) {
    if (const ExecutorTracker* t = monitor_.find(id)) candidates.push_back(t);
  }
  const size_t deadlineCount = candidates.size();
  if (!tasks_.hasPending()) {
    const std::vector<const ExecutorTracker*> idle = idleWithoutData(monitor_);
    candidates.insert(candidates.end(), idle.begin(), idle.end());
  }

  std::vector<ExecutorId> removed;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ExecutorTracker* t = candidates[i];
    const bool deadline = i < deadlineCount;
    const std::string idleFor = secs(static_cast<double>(now - t->idleSince));
    if (remaining - 1 < (deadline ? floor : keepFor)) {
      if (remaining - 1 < floor) {
        // Held by the target or min: one decision for all that are left.
        if (deadline) {
          result.decisions.push_back(
              {Decision::Action::kKeep, target_, t->id,
               keptByFloor(t->id, idleFor, floor, config_.bounds.minExecutors)});
        }
      } else {
        result.decisions.push_back(
            {Decision::Action::kKeep, target_, t->id,
             keptForNextStage(t->id, untilNextMs, stageIntervalMs_, latency)});
      }
      break;
    }
    removed.push_back(t->id);
    --remaining;
    result.decisions.push_back(
        {releaseAction(), target_, t->id,
         releaseReason(releaseVerb(), *t, idleFor, deadline, floor, untilNextMs, latency)});
  }
  release(removed, result);
}

AllocationSnapshot AdaptiveAllocationPolicy::snapshot() const {
  AllocationSnapshot s = baseSnapshot();
  s.maxNeeded = estimate().desired;
  s.numExecutorsToAdd = 0;
  s.addTime = -1;
  return s;
}

std::unique_ptr<AllocationPolicy> makeAllocationPolicy(const AllocationConfig& config,
                                                       const Clock& clock) {
  if (config.policy == PolicyKind::kAdaptive) {
    return std::make_unique<AdaptiveAllocationPolicy>(config, clock);
  }
  return std::make_unique<ExecutorAllocationManager>(config, clock);
}

}  // namespace tide::allocation
