#include "am/task_scheduler.h"

#include <algorithm>
#include <utility>

namespace tide::am {

struct TaskScheduler::StageRun {
  const StageSpec* spec = nullptr;  // into JobRun::job, which never changes after submission
  std::string schedulerStageId;     // "<jobId>/<id>"
  StageState state = StageState::kWaiting;
  int cpus = 1;
  size_t unfinishedDependencies = 0;
  std::vector<size_t> dependents;         // stages waiting on this one, in file order
  std::unique_ptr<TaskSetManager> tasks;  // from submission on
  TimeMs submittedMs = -1;
  TimeMs completedMs = -1;
};

struct TaskScheduler::JobRun {
  std::string id;
  int64_t number = 0;
  Job job;
  JobState state = JobState::kRunning;
  std::string message;
  TimeMs submittedMs = 0;
  TimeMs completedMs = -1;
  std::vector<StageRun> stages;  // parallel to job.stages
  size_t stagesSucceeded = 0;
  int64_t failedAttempts = 0;
  std::deque<FailedAttempt> recentFailures;
};

namespace {

std::string describeTask(const std::string& stageId, int64_t index) {
  return stageId + "[" + std::to_string(index) + "]";
}

std::string failureReason(const rest::TaskStatusUpdate& update) {
  if (!update.reason.empty()) return update.reason;
  return "exited with code " + std::to_string(update.exitCode);
}

}  // namespace

const char* taskOutcomeName(TaskOutcome outcome) {
  switch (outcome) {
    case TaskOutcome::kSucceeded:
      return "succeeded";
    case TaskOutcome::kFailed:
      return "failed";
    case TaskOutcome::kKilled:
      return "killed";
  }
  return "failed";
}

const char* jobStateName(JobState state) {
  switch (state) {
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSucceeded:
      return "SUCCEEDED";
    case JobState::kFailed:
      return "FAILED";
  }
  return "FAILED";
}

const char* stageStateName(StageState state) {
  switch (state) {
    case StageState::kWaiting:
      return "WAITING";
    case StageState::kRunning:
      return "RUNNING";
    case StageState::kSucceeded:
      return "SUCCEEDED";
    case StageState::kFailed:
      return "FAILED";
    case StageState::kCancelled:
      return "CANCELLED";
  }
  return "FAILED";
}

SchedulerConfig SchedulerConfig::fromProperties(const Properties& properties) {
  SchedulerConfig config;
  const int64_t cpus = properties.getInt("task.cpus");
  if (cpus < 1 || cpus > 1000000) {
    throw ConfigError("task.cpus must be at least 1: " + properties.describe("task.cpus"));
  }
  const int64_t maxFailures = properties.getInt("task.maxFailures");
  if (maxFailures < 1 || maxFailures > 1000000) {
    throw ConfigError("task.maxFailures must be at least 1: " +
                      properties.describe("task.maxFailures"));
  }
  config.taskCpus = static_cast<int>(cpus);
  config.maxTaskFailures = static_cast<int>(maxFailures);
  return config;
}

TaskScheduler::TaskScheduler(SchedulerConfig config, const Clock& clock,
                             SchedulerListener& listener, uint64_t seed)
    : config_(config), clock_(clock), listener_(listener), random_(seed) {}

TaskScheduler::~TaskScheduler() = default;

std::string TaskScheduler::submitJob(Job job) {
  checkJob(job);
  auto run = std::make_unique<JobRun>();
  run->number = nextJobNumber_++;
  run->id = "job-" + std::to_string(run->number);
  run->job = std::move(job);
  run->submittedMs = clock_.nowMs();

  const std::vector<StageSpec>& specs = run->job.stages;
  run->stages.resize(specs.size());
  std::unordered_map<std::string, size_t> indexById;
  for (size_t i = 0; i < specs.size(); ++i) indexById[specs[i].id] = i;
  for (size_t i = 0; i < specs.size(); ++i) {
    StageRun& stage = run->stages[i];
    stage.spec = &specs[i];
    stage.schedulerStageId = run->id + "/" + specs[i].id;
    stage.cpus = specs[i].cpus.value_or(config_.taskCpus);
    // A dependency named twice is still one dependency.
    std::set<size_t> dependencies;
    for (const std::string& dependency : specs[i].dependsOn) {
      dependencies.insert(indexById.at(dependency));
    }
    stage.unfinishedDependencies = dependencies.size();
    for (size_t dependency : dependencies) run->stages[dependency].dependents.push_back(i);
  }

  JobRun& added = *run;
  jobsById_[added.id] = &added;
  jobs_.push_back(std::move(run));
  for (size_t i = 0; i < added.stages.size(); ++i) {
    if (added.stages[i].unfinishedDependencies == 0) submitStage(added, i);
  }
  return added.id;
}

void TaskScheduler::submitStage(JobRun& job, size_t stageIndex) {
  StageRun& stage = job.stages[stageIndex];
  stage.state = StageState::kRunning;
  stage.submittedMs = clock_.nowMs();
  stage.tasks = std::make_unique<TaskSetManager>(stage.spec->numTasks);
  activeTaskSets_[{job.number, nextStageSubmission_++}] = {&job, stageIndex};
  listener_.onStageSubmitted(stage.schedulerStageId, stage.spec->numTasks);
}

void TaskScheduler::completeStage(JobRun& job, size_t stageIndex) {
  StageRun& stage = job.stages[stageIndex];
  stage.state = StageState::kSucceeded;
  stage.completedMs = clock_.nowMs();
  stage.tasks->releaseAfterSuccess();
  for (auto it = activeTaskSets_.begin(); it != activeTaskSets_.end(); ++it) {
    if (it->second.first == &job && it->second.second == stageIndex) {
      activeTaskSets_.erase(it);
      break;
    }
  }
  listener_.onStageCompleted(stage.schedulerStageId);

  if (++job.stagesSucceeded == job.stages.size()) {
    job.state = JobState::kSucceeded;
    job.completedMs = clock_.nowMs();
    int64_t tasks = 0;
    for (const StageSpec& spec : job.job.stages) tasks += spec.numTasks;
    job.message = "Job '" + job.job.name + "' succeeded: " + std::to_string(job.stages.size()) +
                  (job.stages.size() == 1 ? " stage, " : " stages, ") + std::to_string(tasks) +
                  (tasks == 1 ? " task" : " tasks") + " in " +
                  formatDuration(job.completedMs - job.submittedMs);
    listener_.onJobEnd(job.id, true, job.message);
    return;
  }
  for (size_t dependent : stage.dependents) {
    if (--job.stages[dependent].unfinishedDependencies == 0) submitStage(job, dependent);
  }
}

void TaskScheduler::failJob(JobRun& job, std::optional<size_t> failedStage,
                            const std::string& message) {
  job.state = JobState::kFailed;
  job.completedMs = clock_.nowMs();
  job.message = message;

  for (auto it = activeTaskSets_.begin(); it != activeTaskSets_.end();) {
    if (it->second.first == &job) {
      it = activeTaskSets_.erase(it);
    } else {
      ++it;
    }
  }
  for (size_t i = 0; i < job.stages.size(); ++i) {
    StageRun& stage = job.stages[i];
    if (stage.state == StageState::kWaiting) {
      stage.state = StageState::kCancelled;
    } else if (stage.state == StageState::kRunning) {
      stage.state = failedStage == i ? StageState::kFailed : StageState::kCancelled;
      stage.completedMs = job.completedMs;
      stage.tasks->abort();
      listener_.onStageCompleted(stage.schedulerStageId);
    }
  }

  // Its running tasks are stopped; they keep their slots until their executors report them.
  std::vector<int64_t> toKill;
  for (const auto& [taskId, task] : runningTasks_) {
    if (task.job == &job && killRequested_.count(taskId) == 0) toKill.push_back(taskId);
  }
  std::sort(toKill.begin(), toKill.end());
  for (int64_t taskId : toKill) {
    killRequested_.insert(taskId);
    tasksToKill_.push_back(TaskToKill{taskId, runningTasks_.at(taskId).executorId});
  }
  listener_.onJobEnd(job.id, false, message);
}

bool TaskScheduler::cancelJob(const std::string& jobId, const std::string& reason) {
  auto it = jobsById_.find(jobId);
  if (it == jobsById_.end() || it->second->state != JobState::kRunning) return false;
  JobRun& job = *it->second;
  failJob(job, std::nullopt, "Job '" + job.job.name + "' cancelled: " + reason);
  return true;
}

std::vector<rest::TaskLaunch> TaskScheduler::resourceOffers(
    const std::vector<WorkerOffer>& offers) {
  std::vector<rest::TaskLaunch> launches;
  if (offers.empty() || activeTaskSets_.empty()) return launches;

  // Shuffled so that tasks spread over executors instead of always filling the first one
  // (Spark's shuffleOffers). Fisher-Yates on the raw generator: the same seed gives the same
  // order with any standard library.
  std::vector<size_t> order(offers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[static_cast<size_t>(random_() % (i + 1))]);
  }
  std::vector<int> freeSlots(offers.size());
  for (size_t i = 0; i < offers.size(); ++i) freeSlots[i] = offers[i].freeSlots;

  // Launching never changes the set of active TaskSets (only task ends do), so iterating it
  // here is safe.
  for (auto& [key, ref] : activeTaskSets_) {
    JobRun& job = *ref.first;
    StageRun& stage = job.stages[ref.second];
    // One task per offer per pass, as Spark's resourceOfferSingleTaskSet, so that one large
    // offer does not take the whole stage while others stay idle.
    bool launchedInPass = true;
    while (launchedInPass && stage.tasks->hasPendingTasks()) {
      launchedInPass = false;
      for (size_t offer : order) {
        if (freeSlots[offer] < stage.cpus) continue;
        std::optional<TaskAttempt> next = stage.tasks->launchNext();
        if (!next) break;
        launches.push_back(launchTask(job, ref.second, *next, offers[offer].executorId));
        freeSlots[offer] -= stage.cpus;
        launchedInPass = true;
      }
    }
  }
  return launches;
}

rest::TaskLaunch TaskScheduler::launchTask(JobRun& job, size_t stageIndex, TaskAttempt attempt,
                                           const std::string& executorId) {
  const StageRun& stage = job.stages[stageIndex];
  const StageSpec& spec = *stage.spec;
  rest::TaskLaunch launch;
  launch.taskId = nextTaskId_++;
  launch.jobId = job.id;
  launch.stageId = spec.id;
  launch.index = attempt.index;
  launch.attempt = attempt.attempt;
  launch.kind = taskKindName(spec.kind);
  launch.argv.reserve(spec.command.size());
  for (const std::string& arg : spec.command) {
    launch.argv.push_back(substituteTaskPlaceholders(arg, spec.id, attempt.index, attempt.attempt));
  }
  launch.env = spec.env;
  launch.cwd = spec.cwd;
  launch.timeoutMs = spec.timeoutMs;
  launch.sleepMs = spec.sleepMs;
  launch.cpus = stage.cpus;

  RunningTask running;
  running.job = &job;
  running.stage = stageIndex;
  running.attempt = attempt;
  running.executorId = executorId;
  running.startMs = clock_.nowMs();
  runningTasks_.emplace(launch.taskId, std::move(running));
  runningByExecutor_[executorId].insert(launch.taskId);
  listener_.onTaskStart(stage.schedulerStageId, executorId);
  return launch;
}

TaskScheduler::RunningTask TaskScheduler::removeRunning(int64_t taskId, bool* killRequested) {
  auto it = runningTasks_.find(taskId);
  RunningTask task = std::move(it->second);
  runningTasks_.erase(it);
  auto byExecutor = runningByExecutor_.find(task.executorId);
  if (byExecutor != runningByExecutor_.end()) {
    byExecutor->second.erase(taskId);
    if (byExecutor->second.empty()) runningByExecutor_.erase(byExecutor);
  }
  *killRequested = killRequested_.erase(taskId) > 0;
  task.job->stages[task.stage].tasks->onAttemptEnded();
  return task;
}

bool TaskScheduler::statusUpdate(const rest::TaskStatusUpdate& update,
                                 const std::string& executorId) {
  auto found = runningTasks_.find(update.taskId);
  if (found == runningTasks_.end() || found->second.executorId != executorId) return false;
  bool killRequested = false;
  const RunningTask task = removeRunning(update.taskId, &killRequested);
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  const bool stageActive = stage.state == StageState::kRunning;
  const TimeMs now = clock_.nowMs();

  if (update.state == "FINISHED") {
    const bool counted =
        stageActive && stage.tasks->markSucceeded(task.attempt.index, now - task.startMs);
    listener_.onTaskEnd(stage.schedulerStageId, executorId, TaskOutcome::kSucceeded);
    if (counted && stage.tasks->allSucceeded()) completeStage(job, task.stage);
    return true;
  }

  if (update.state == "KILLED") {
    if (killRequested || !stageActive) {
      listener_.onTaskEnd(stage.schedulerStageId, executorId, TaskOutcome::kKilled);
    } else {
      // Nobody here asked for it (the executor shutting down, say): without a retry the stage
      // could never finish. Spark re-queues killed tasks the same way.
      retryWithoutCounting(task, update.taskId, "killed: " + failureReason(update), false);
    }
    return true;
  }

  // FAILED (and any state the codec let through that is not a success or a kill).
  const std::string reason = update.state == "FAILED" ? failureReason(update)
                                                      : "unknown task state '" + update.state + "'";
  stage.tasks->countFailedAttempt();
  FailedAttempt failed;
  failed.taskId = update.taskId;
  failed.stageId = stage.spec->id;
  failed.index = task.attempt.index;
  failed.attempt = task.attempt.attempt;
  failed.executorId = executorId;
  failed.reason = reason;
  failed.exitCode = update.exitCode;
  failed.stderrTail = update.stderrTail;
  failed.timeMs = now;
  failed.countsTowardsFailures = stageActive;
  recordFailedAttempt(job, failed);
  if (!stageActive) {
    listener_.onTaskEnd(stage.schedulerStageId, executorId,
                        killRequested ? TaskOutcome::kKilled : TaskOutcome::kFailed);
    return true;
  }
  const int failures = stage.tasks->recordFailure(task.attempt.index);
  listener_.onTaskEnd(stage.schedulerStageId, executorId, TaskOutcome::kFailed);
  if (failures >= config_.maxTaskFailures) {
    std::string message = "Job '" + job.job.name + "' failed: task " +
                          describeTask(stage.spec->id, task.attempt.index) + " failed " +
                          std::to_string(failures) + (failures == 1 ? " time" : " times") +
                          "; most recent failure: " + reason;
    if (!update.stderrTail.empty()) message += "; stderr tail:\n" + update.stderrTail;
    failJob(job, task.stage, message);
  } else {
    stage.tasks->requeueFront(task.attempt.index, task.attempt.attempt + 1);
  }
  return true;
}

void TaskScheduler::retryWithoutCounting(const RunningTask& task, int64_t taskId,
                                         const std::string& reason, bool killRequested) {
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  if (stage.state != StageState::kRunning) {
    listener_.onTaskEnd(stage.schedulerStageId, task.executorId,
                        killRequested ? TaskOutcome::kKilled : TaskOutcome::kFailed);
    return;
  }
  stage.tasks->countFailedAttempt();
  FailedAttempt failed;
  failed.taskId = taskId;
  failed.stageId = stage.spec->id;
  failed.index = task.attempt.index;
  failed.attempt = task.attempt.attempt;
  failed.executorId = task.executorId;
  failed.reason = reason;
  failed.exitCode = -1;
  failed.timeMs = clock_.nowMs();
  failed.countsTowardsFailures = false;
  recordFailedAttempt(job, std::move(failed));
  stage.tasks->requeueFront(task.attempt.index, task.attempt.attempt + 1);
  listener_.onTaskEnd(stage.schedulerStageId, task.executorId, TaskOutcome::kFailed);
}

void TaskScheduler::executorLost(const std::string& executorId, const std::string& reason) {
  tasksToKill_.erase(
      std::remove_if(tasksToKill_.begin(), tasksToKill_.end(),
                     [&](const TaskToKill& kill) { return kill.executorId == executorId; }),
      tasksToKill_.end());
  auto found = runningByExecutor_.find(executorId);
  if (found == runningByExecutor_.end()) return;
  const std::vector<int64_t> taskIds(found->second.begin(), found->second.end());
  // Newest first, each to the front of its stage: the lost tasks then run again in their
  // original order, ahead of the rest of the stage.
  for (auto it = taskIds.rbegin(); it != taskIds.rend(); ++it) {
    bool killRequested = false;
    const RunningTask task = removeRunning(*it, &killRequested);
    retryWithoutCounting(task, *it, "executor " + executorId + " lost: " + reason, killRequested);
  }
}

std::vector<TaskToKill> TaskScheduler::takeTasksToKill() {
  std::vector<TaskToKill> kills;
  kills.swap(tasksToKill_);
  return kills;
}

void TaskScheduler::recordFailedAttempt(JobRun& job, FailedAttempt attempt) {
  ++job.failedAttempts;
  if (config_.failedAttemptsKeptPerJob == 0) return;
  job.recentFailures.push_back(std::move(attempt));
  while (job.recentFailures.size() > config_.failedAttemptsKeptPerJob) {
    job.recentFailures.pop_front();
  }
}

int64_t TaskScheduler::pendingTaskCount() const {
  int64_t pending = 0;
  for (const auto& [key, ref] : activeTaskSets_) {
    pending += ref.first->stages[ref.second].tasks->pendingCount();
  }
  return pending;
}

std::vector<int64_t> TaskScheduler::runningTasksOn(const std::string& executorId) const {
  auto found = runningByExecutor_.find(executorId);
  if (found == runningByExecutor_.end()) return {};
  return std::vector<int64_t>(found->second.begin(), found->second.end());
}

std::optional<std::string> TaskScheduler::executorOf(int64_t taskId) const {
  auto found = runningTasks_.find(taskId);
  if (found == runningTasks_.end()) return std::nullopt;
  return found->second.executorId;
}

bool TaskScheduler::allJobsDone() const {
  return std::none_of(jobs_.begin(), jobs_.end(), [](const std::unique_ptr<JobRun>& job) {
    return job->state == JobState::kRunning;
  });
}

size_t TaskScheduler::materializedTaskRecords() const {
  size_t records = runningTasks_.size();
  for (const std::unique_ptr<JobRun>& job : jobs_) {
    for (const StageRun& stage : job->stages) {
      if (stage.tasks) records += stage.tasks->trackedIndexCount();
    }
  }
  return records;
}

StageSummary TaskScheduler::summarizeStage(const JobRun& job, size_t stageIndex) const {
  const StageRun& stage = job.stages[stageIndex];
  StageSummary summary;
  summary.id = stage.spec->id;
  summary.schedulerStageId = stage.schedulerStageId;
  summary.state = stage.state;
  summary.dependsOn = stage.spec->dependsOn;
  summary.numTasks = stage.spec->numTasks;
  summary.cpus = stage.cpus;
  summary.submittedMs = stage.submittedMs;
  summary.completedMs = stage.completedMs;
  if (stage.tasks) {
    const TaskSetManager& tasks = *stage.tasks;
    summary.pending = tasks.pendingCount();
    summary.running = tasks.runningCount();
    summary.succeeded = tasks.succeededCount();
    summary.failedAttempts = tasks.failedAttempts();
    summary.taskDurationSumMs = tasks.durationSumMs();
    summary.taskDurationMinMs = tasks.durationMinMs();
    summary.taskDurationMaxMs = tasks.durationMaxMs();
  }
  return summary;
}

JobSummary TaskScheduler::summarizeJob(const JobRun& job) const {
  JobSummary summary;
  summary.jobId = job.id;
  summary.name = job.job.name;
  summary.pool = job.job.pool;
  summary.state = job.state;
  summary.message = job.message;
  summary.submittedMs = job.submittedMs;
  summary.completedMs = job.completedMs;
  summary.failedAttempts = job.failedAttempts;
  for (size_t i = 0; i < job.stages.size(); ++i) {
    StageSummary stage = summarizeStage(job, i);
    summary.numTasks += stage.numTasks;
    summary.pending += stage.pending;
    summary.running += stage.running;
    summary.succeeded += stage.succeeded;
    summary.stages.push_back(std::move(stage));
  }
  summary.recentFailures.assign(job.recentFailures.begin(), job.recentFailures.end());
  return summary;
}

std::optional<JobSummary> TaskScheduler::jobSummary(const std::string& jobId) const {
  auto found = jobsById_.find(jobId);
  if (found == jobsById_.end()) return std::nullopt;
  return summarizeJob(*found->second);
}

std::vector<JobSummary> TaskScheduler::jobSummaries() const {
  std::vector<JobSummary> summaries;
  summaries.reserve(jobs_.size());
  for (const std::unique_ptr<JobRun>& job : jobs_) summaries.push_back(summarizeJob(*job));
  return summaries;
}

}  // namespace tide::am
