#include "am/scheduler/task_scheduler.h"

#include <algorithm>
#include <utility>

#include "allocation/speculation.h"
#include "common/enum_names.h"

namespace tide::am {

struct TaskScheduler::StageRun {
  const StageSpec* spec = nullptr;  // into JobRun::job, which never changes after submission
  std::string schedulerStageId;     // "<jobId>/<id>"
  StageState state = StageState::kWaiting;
  int cpus = 1;
  int profileId = allocation::kDefaultProfileId;
  size_t unfinishedDependencies = 0;
  std::vector<size_t> dependents;         // stages waiting on this one, in file order
  std::unique_ptr<TaskSetManager> tasks;  // from submission on
  TimeMs submittedMs = -1;
  TimeMs completedMs = -1;
  std::pair<int64_t, int64_t> queueKey{0, 0};  // its place in the FIFO order, kept on re-runs
  // What it reads: (the name in depends_on, the stage id "<jobId>/<id>" of the blocks).
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<size_t> parents;  // stages of this job it reads
  std::string collectDir;       // where a final stage's output goes ("" for none)
  int reruns = 0;
  std::vector<int64_t> launchesByLocality = std::vector<int64_t>(kLocalityLevelCount, 0);
  int64_t speculativeLaunches = 0;
  // Running attempts by task index (for speculation and killing losing copies).
  std::unordered_map<int64_t, std::vector<int64_t>> runningByIndex;
  std::set<int64_t> speculatable;  // marked for a second copy, not yet launched
  // The highest attempt number launched, for indices launched more than once, so that
  // {attempt} and TIDE_ATTEMPT never repeat within a task (retries, speculative copies and
  // lineage re-runs each propose a number; the launch takes the next unused one).
  std::unordered_map<int64_t, int> highestAttempt;
  // The attempt (task id) authorised to commit each index, until the index succeeds.
  std::unordered_map<int64_t, int64_t> commitAuthorized;
  std::unique_ptr<TaskSetExcludelist> excludelist;  // with excludeOnFailure.enabled
  bool unschedulable = false;  // reported to the listeners as an unschedulable task set
  TimeMs unschedulableSinceMs = -1;
};

struct TaskScheduler::JobRun : JobProgress {
  std::string id;
  int64_t number = 0;
  Job job;
  std::vector<StageRun> stages;  // parallel to job.stages
  size_t stagesSucceeded = 0;
  std::deque<FailedAttempt> recentFailures;
  std::set<std::string> executorsUsed;  // where its tasks ran, so where its blocks may be
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
  static constexpr const char* kNames[] = {"succeeded", "failed", "killed"};
  return enumName(outcome, kNames);
}

const char* jobStateName(JobState state) {
  static constexpr const char* kNames[] = {"RUNNING", "SUCCEEDED", "FAILED"};
  return enumName(state, kNames);
}

const char* stageStateName(StageState state) {
  static constexpr const char* kNames[] = {"WAITING", "RUNNING", "SUCCEEDED", "FAILED",
                                           "CANCELLED"};
  return enumName(state, kNames);
}

namespace {

void readTaskLimits(const Properties& properties, SchedulerConfig& config) {
  // The key table bounds both (common/config_keys.cc).
  config.taskCpus = static_cast<int>(properties.getInt("task.cpus"));
  config.maxTaskFailures = static_cast<int>(properties.getInt("task.maxFailures"));
}

void readLocalityWaits(const Properties& properties, SchedulerConfig& config) {
  const DurationMs wait = properties.getDuration("locality.wait");
  const auto levelWait = [&](const char* key) {
    return properties.has(key) ? properties.getDuration(key) : wait;
  };
  config.localityWaits = {levelWait("locality.wait.process"), levelWait("locality.wait.node"),
                          levelWait("locality.wait.rack")};
}

void readSchedulingMode(const Properties& properties, SchedulerConfig& config) {
  const std::string mode = properties.getString("scheduler.mode");
  if (mode == "FAIR") {
    config.mode = SchedulingMode::kFair;
  } else if (mode != "FIFO") {
    throw ConfigError(properties.describe("scheduler.mode") + ": expected FIFO or FAIR");
  }
  if (properties.has("scheduler.allocation.file")) {
    const std::string file = properties.getString("scheduler.allocation.file");
    if (!file.empty()) config.pools = loadPoolsFile(file);
  }
}

// Speculation and the default executor shape (its slots are what speculation counts).
void readSpeculationAndExecutors(const Properties& properties, SchedulerConfig& config) {
  const SpeculationSettings speculation = readSpeculationSettings(properties);
  config.speculation = speculation.enabled;
  config.speculationQuantile = speculation.rule.quantile;
  config.speculationMultiplier = speculation.rule.multiplier;
  config.speculationIntervalMs = speculation.intervalMs;
  config.speculationMinThresholdMs = speculation.rule.minThresholdMs;
  config.speculationTaskDurationThresholdMs = speculation.rule.taskDurationThresholdMs;
  config.executorCores = static_cast<int>(properties.getInt("executor.cores"));
  config.executorMemoryMb = properties.getSizeBytes("executor.memory") / (1024 * 1024);
  config.slotsPerExecutor = speculation.rule.slotsPerExecutor;
}

void readPipelining(const Properties& properties, SchedulerConfig& config) {
  config.queuedTasksPerExecutor =
      static_cast<int>(properties.getInt("scheduler.queuedTasksPerExecutor"));
  config.queuedTaskWaitMs = properties.getDuration("scheduler.queuedTaskWait");
}

void readExclusionLimits(const Properties& properties, ExcludeOnFailureConfig& exclude) {
  const auto atLeastOne = [&](const char* key, int* value) {
    *value = static_cast<int>(properties.getInt(key));  // at least 1: the key table says so
  };
  atLeastOne("excludeOnFailure.task.maxTaskAttemptsPerExecutor",
             &exclude.maxTaskAttemptsPerExecutor);
  atLeastOne("excludeOnFailure.task.maxTaskAttemptsPerNode", &exclude.maxTaskAttemptsPerNode);
  atLeastOne("excludeOnFailure.stage.maxFailedTasksPerExecutor",
             &exclude.maxFailedTasksPerExecutorStage);
  atLeastOne("excludeOnFailure.stage.maxFailedExecutorsPerNode",
             &exclude.maxFailedExecutorsPerNodeStage);
  atLeastOne("excludeOnFailure.application.maxFailedTasksPerExecutor",
             &exclude.maxFailedTasksPerExecutor);
  atLeastOne("excludeOnFailure.application.maxFailedExecutorsPerNode",
             &exclude.maxFailedExecutorsPerNode);
}

// Reads excludeOnFailure.*, after task.maxFailures (which bounds the attempts per node).
void readExcludeOnFailure(const Properties& properties, SchedulerConfig& config) {
  ExcludeOnFailureConfig& exclude = config.excludeOnFailure;
  exclude.enabled = properties.getBool("excludeOnFailure.enabled");
  exclude.timeoutMs = properties.getDuration("excludeOnFailure.timeout");
  readExclusionLimits(properties, exclude);
  exclude.killExcludedExecutors = properties.getBool("excludeOnFailure.killExcludedExecutors");
  exclude.fetchFailureExclusion =
      properties.getBool("excludeOnFailure.application.fetchFailure.enabled");
  exclude.unschedulableTaskSetTimeoutMs =
      properties.getDuration("excludeOnFailure.unschedulableTaskSetTimeout");
  exclude.dynamicAllocation = properties.getBool("dynamicAllocation.enabled");
  // Spark's validateExcludeOnFailureConfs: a task excluded from more places than task.maxFailures
  // allows attempts would fail its job before exclusion could help it.
  if (exclude.enabled && exclude.maxTaskAttemptsPerNode >= config.maxTaskFailures) {
    throw ConfigError(properties.describe("excludeOnFailure.task.maxTaskAttemptsPerNode") +
                      ": must be below task.maxFailures (" +
                      std::to_string(config.maxTaskFailures) + ")");
  }
}

}  // namespace

SchedulerConfig SchedulerConfig::fromProperties(const Properties& properties) {
  SchedulerConfig config;
  readTaskLimits(properties, config);
  readLocalityWaits(properties, config);
  readSchedulingMode(properties, config);
  readSpeculationAndExecutors(properties, config);
  readPipelining(properties, config);
  readExcludeOnFailure(properties, config);
  return config;
}

TaskScheduler::TaskScheduler(SchedulerConfig config, const Clock& clock, uint64_t seed)
    : config_(config),
      clock_(clock),
      profiles_(allocation::ResourceProfile{allocation::kDefaultProfileId, config_.executorCores,
                                            config_.executorMemoryMb}),
      order_(makeSchedulingOrder(config_.mode, config_.pools)),
      random_(seed) {
  if (config_.excludeOnFailure.enabled) {
    health_ = std::make_unique<HealthTracker>(config_.excludeOnFailure, clock_);
  }
}

TaskScheduler::~TaskScheduler() = default;

std::string TaskScheduler::submitJob(Job job) {
  checkJob(job);
  checkPersistedInputs(job);
  if (!job.output.empty() && job.output.front() != '/') {
    throw JobError("output: expected an absolute path, got '" + job.output + "'");
  }
  checkTasksFitExecutors(job);
  std::unique_ptr<JobRun> run = planJobRun(std::move(job));

  JobRun& added = *run;
  jobsById_[added.id] = &added;
  for (size_t i = 0; i < added.stages.size(); ++i) {
    stagesById_[added.stages[i].schedulerStageId] = {&added, i};
  }
  jobs_.push_back(std::move(run));
  for (size_t i = 0; i < added.stages.size(); ++i) {
    if (added.stages[i].unfinishedDependencies == 0) submitStage(added, i);
  }
  return added.id;
}

// Reads of earlier jobs' data must find it whole.
void TaskScheduler::checkPersistedInputs(const Job& job) const {
  for (size_t i = 0; i < job.stages.size(); ++i) {
    for (size_t j = 0; j < job.stages[i].dependsOn.size(); ++j) {
      const std::string& dependency = job.stages[i].dependsOn[j];
      if (!isPersistedStageReference(dependency)) continue;
      const std::string path =
          "stages[" + std::to_string(i) + "].depends_on[" + std::to_string(j) + "]";
      if (persisted_.count(dependency) == 0) {
        std::string known;
        for (const std::string& id : persisted_) known += (known.empty() ? "" : ", ") + id;
        throw JobError(path + ": '" + dependency + "' is not a persisted stage of an ended job" +
                       (known.empty() ? " (none is persisted)" : " (persisted: " + known + ")"));
      }
      const int64_t missing = blocks_.missingCount(dependency);
      if (missing > 0) {
        throw JobError(path + ": persisted stage '" + dependency + "' lost " +
                       std::to_string(missing) +
                       " of its task outputs with their executors; run its job again");
      }
    }
  }
}

// A task must fit on an executor of its stage's own shape (Spark's ResourceProfile check that
// executor cores cover the task cpus).
void TaskScheduler::checkTasksFitExecutors(const Job& job) const {
  for (size_t i = 0; i < job.stages.size(); ++i) {
    const StageSpec& spec = job.stages[i];
    if (!spec.executor) continue;
    const int cores = spec.executor->cores ? *spec.executor->cores : config_.executorCores;
    const int cpus = spec.cpus.value_or(config_.taskCpus);
    if (cpus > cores) {
      throw JobError("stages[" + std::to_string(i) + "]: each task takes " + std::to_string(cpus) +
                     " cpus (" + (spec.cpus ? "its \"cpus\"" : "task.cpus") + "), more than the " +
                     std::to_string(cores) + " cores of its executors (" +
                     (spec.executor->cores ? "its \"executor\".cores" : "executor.cores") + ")");
    }
  }
}

std::unique_ptr<TaskScheduler::JobRun> TaskScheduler::planJobRun(Job job) {
  auto run = std::make_unique<JobRun>();
  run->number = nextJobNumber_++;
  run->id = "job-" + std::to_string(run->number);
  run->job = std::move(job);
  run->submittedMs = clock_.nowMs();

  const std::vector<StageSpec>& specs = run->job.stages;
  run->stages.resize(specs.size());
  std::unordered_map<std::string, size_t> indexById;
  for (size_t i = 0; i < specs.size(); ++i) indexById[specs[i].id] = i;
  for (size_t i = 0; i < specs.size(); ++i) planStageRun(*run, i, indexById);
  assignCollectDirs(*run);
  return run;
}

void TaskScheduler::planStageRun(JobRun& run, size_t index,
                                 const std::unordered_map<std::string, size_t>& indexById) {
  const StageSpec& spec = run.job.stages[index];
  StageRun& stage = run.stages[index];
  stage.spec = &spec;
  stage.schedulerStageId = run.id + "/" + spec.id;
  stage.cpus = spec.cpus.value_or(config_.taskCpus);
  if (spec.executor) {
    stage.profileId =
        profiles_
            .profileOfShape(spec.executor->cores.value_or(config_.executorCores),
                            spec.executor->memoryMb.value_or(config_.executorMemoryMb))
            .id;
  }
  // A dependency named twice is still one dependency.
  std::set<size_t> dependencies;
  std::set<std::string> named;
  for (const std::string& dependency : spec.dependsOn) {
    if (!named.insert(dependency).second) continue;
    if (isPersistedStageReference(dependency)) {
      stage.inputs.emplace_back(dependency, dependency);
      continue;
    }
    const size_t parent = indexById.at(dependency);
    dependencies.insert(parent);
    stage.inputs.emplace_back(dependency, run.id + "/" + dependency);
  }
  stage.parents.assign(dependencies.begin(), dependencies.end());
  stage.unfinishedDependencies = dependencies.size();
  for (size_t dependency : dependencies) run.stages[dependency].dependents.push_back(index);
}

// Final stages (read by no other) deliver to the job's output directory.
void TaskScheduler::assignCollectDirs(JobRun& run) {
  size_t finalStages = 0;
  for (const StageRun& stage : run.stages) finalStages += stage.dependents.empty() ? 1 : 0;
  if (run.job.output.empty()) return;
  for (StageRun& stage : run.stages) {
    if (!stage.dependents.empty()) continue;
    stage.collectDir = finalStages == 1 ? run.job.output : run.job.output + "/" + stage.spec->id;
  }
}

void TaskScheduler::submitStage(JobRun& job, size_t stageIndex) {
  StageRun& stage = job.stages[stageIndex];
  stage.state = StageState::kRunning;
  stage.submittedMs = clock_.nowMs();
  stage.tasks = std::make_unique<TaskSetManager>(stage.spec->numTasks);
  if (config_.speculation) stage.tasks->keepDurations();
  if (health_ && !stage.excludelist) {
    stage.excludelist = std::make_unique<TaskSetExcludelist>(config_.excludeOnFailure);
  }
  stage.queueKey = {job.number, nextStageSubmission_++};
  activeTaskSets_[stage.queueKey] = {&job, stageIndex};
  updatePreferences(job, stageIndex);
  listeners_.onStageSubmitted(stage.schedulerStageId, stage.spec->numTasks, stage.cpus,
                              *profiles_.find(stage.profileId));
}

// Preferences cost a record per task; beyond this a stage schedules without locality.
constexpr int64_t kMaxTasksWithPreferences = 1000000;

void TaskScheduler::updatePreferences(JobRun& job, size_t stageIndex) {
  StageRun& stage = job.stages[stageIndex];
  const StageSpec& spec = *stage.spec;
  if (stage.inputs.empty() && spec.preferredHosts.empty()) return;
  if (spec.numTasks > kMaxTasksWithPreferences) return;
  std::vector<TaskPreference> prefs(static_cast<size_t>(spec.numTasks));
  bool any = false;
  for (int64_t index = 0; index < spec.numTasks; ++index) {
    TaskPreference& pref = prefs[static_cast<size_t>(index)];
    // Spark's reducer locality: the places holding at least a fraction of the task's input.
    std::map<std::string, int64_t> byExecutor;
    std::map<std::string, int64_t> byNode;
    int64_t total = 0;
    for (const auto& [name, source] : stage.inputs) {
      for (const auto& [executor, bytes] : blocks_.partitionBytesByExecutor(source, index)) {
        byExecutor[executor] += bytes;
        total += bytes;
      }
      for (const auto& [node, bytes] : blocks_.partitionBytesByNode(source, index)) {
        byNode[node] += bytes;
      }
    }
    if (total > 0) {
      const double threshold = config_.preferredLocationFraction * static_cast<double>(total);
      for (const auto& [executor, bytes] : byExecutor) {
        if (static_cast<double>(bytes) >= threshold) pref.executors.push_back(executor);
      }
      for (const auto& [node, bytes] : byNode) {
        if (!node.empty() && static_cast<double>(bytes) >= threshold) pref.nodes.push_back(node);
      }
    }
    for (const std::string& host : spec.preferredHosts) {
      if (std::find(pref.nodes.begin(), pref.nodes.end(), host) == pref.nodes.end()) {
        pref.nodes.push_back(host);
      }
    }
    any = any || !pref.executors.empty() || !pref.nodes.empty();
  }
  if (!any && !stage.tasks->hasPreferences()) return;
  stage.tasks->setPreferences(prefs, config_.localityWaits, clock_.nowMs());
}

void TaskScheduler::completeStage(JobRun& job, size_t stageIndex) {
  StageRun& stage = job.stages[stageIndex];
  stage.state = StageState::kSucceeded;
  stage.completedMs = clock_.nowMs();
  stage.speculatable.clear();
  // Kept for stages whose output may be lost and re-run (lineage); the rest need only counters.
  if (stage.dependents.empty() && !stage.spec->persist) stage.tasks->releaseAfterSuccess();
  activeTaskSets_.erase(stage.queueKey);
  setUnschedulable(stage, false);
  if (health_ && stage.excludelist) {
    // Only a stage that succeeded counts its failures against executors (Spark's
    // updateExcludedForSuccessfulTaskSet): in a failed one the tasks may be to blame.
    NewlyExcluded newly = health_->updateExcludedForSuccessfulTaskSet(
        stage.schedulerStageId, stage.excludelist->failuresByExecutor());
    if (config_.excludeOnFailure.killExcludedExecutors) {
      const std::string why =
          " excluded for task failures (excludeOnFailure.killExcludedExecutors)";
      for (const std::string& executor : newly.executors) {
        queueKill(executor, "executor " + executor + why);
      }
      for (const std::string& node : newly.nodes) {
        for (const auto& [executor, host] : executorNodes_) {
          if (host == node) queueKill(executor, "executor " + executor + " on node " + node + why);
        }
      }
    }
    stage.excludelist = std::make_unique<TaskSetExcludelist>(config_.excludeOnFailure);
  }
  listeners_.onStageCompleted(stage.schedulerStageId);

  if (++job.stagesSucceeded == job.stages.size()) {
    job.state = JobState::kSucceeded;
    job.completedMs = clock_.nowMs();
    int64_t tasks = 0;
    for (const StageSpec& spec : job.job.stages) tasks += spec.numTasks;
    job.message = "Job '" + job.job.name + "' succeeded: " + std::to_string(job.stages.size()) +
                  (job.stages.size() == 1 ? " stage, " : " stages, ") + std::to_string(tasks) +
                  (tasks == 1 ? " task" : " tasks") + " in " +
                  formatDuration(job.completedMs - job.submittedMs);
    releaseJobData(job);
    listeners_.onJobEnd(job.id, true, job.message);
    return;
  }
  for (size_t dependent : stage.dependents) {
    StageRun& next = job.stages[dependent];
    if (next.state == StageState::kSucceeded) continue;
    if (--next.unfinishedDependencies != 0) continue;
    if (next.tasks) {
      // It ran before its inputs were lost; its tasks may go on, preferring the new places.
      updatePreferences(job, dependent);
    } else {
      submitStage(job, dependent);
    }
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
    setUnschedulable(stage, false);
    if (stage.state == StageState::kWaiting && stage.tasks) {
      stage.state = StageState::kCancelled;  // ran, then waited for re-run inputs
      stage.completedMs = job.completedMs;
      stage.tasks->abort();
      listeners_.onStageCompleted(stage.schedulerStageId);
    } else if (stage.state == StageState::kWaiting) {
      stage.state = StageState::kCancelled;
    } else if (stage.state == StageState::kRunning) {
      stage.state = failedStage == i ? StageState::kFailed : StageState::kCancelled;
      stage.completedMs = job.completedMs;
      stage.tasks->abort();
      listeners_.onStageCompleted(stage.schedulerStageId);
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
  releaseJobData(job);
  listeners_.onJobEnd(job.id, false, message);
}

bool TaskScheduler::cancelJob(const std::string& jobId, const std::string& reason) {
  auto it = jobsById_.find(jobId);
  if (it == jobsById_.end() || it->second->state != JobState::kRunning) return false;
  JobRun& job = *it->second;
  failJob(job, std::nullopt, "Job '" + job.job.name + "' cancelled: " + reason);
  return true;
}

std::vector<std::pair<TaskScheduler::JobRun*, size_t>> TaskScheduler::sortedTaskSets() const {
  std::vector<std::pair<JobRun*, size_t>> sets;
  sets.reserve(activeTaskSets_.size());
  for (const auto& [key, ref] : activeTaskSets_) sets.push_back(ref);  // FIFO order
  const auto poolOf = [](const JobRun& job) {
    return job.job.pool.empty() ? std::string(kDefaultPoolName) : job.job.pool;
  };
  SchedulingQueue queue;
  queue.sets.reserve(sets.size());
  const bool counts = order_->readsRunningTasks();
  for (const auto& [job, stageIndex] : sets) {
    const StageRun& stage = job->stages[stageIndex];
    queue.sets.push_back(SchedulableTaskSet{poolOf(*job), stage.schedulerStageId,
                                            counts ? stage.tasks->runningCount() : 0});
  }
  if (counts) {
    for (const auto& [taskId, task] : runningTasks_) ++queue.runningByPool[poolOf(*task.job)];
  }
  std::vector<std::pair<JobRun*, size_t>> ordered;
  ordered.reserve(sets.size());
  for (size_t index : order_->order(queue)) ordered.push_back(sets[index]);
  return ordered;
}

std::optional<TaskOffer> TaskScheduler::speculativeOffer(JobRun& job, size_t stageIndex,
                                                         const std::string& executorId,
                                                         const TaskExcluded& excluded) {
  StageRun& stage = job.stages[stageIndex];
  auto it = stage.speculatable.begin();
  while (it != stage.speculatable.end()) {
    const int64_t index = *it;
    auto copies = stage.runningByIndex.find(index);
    if (stage.tasks->isSucceeded(index) || copies == stage.runningByIndex.end()) {
      // Finished meanwhile, or pending again itself: no copy will run, and the policy that
      // counted one hears so.
      it = stage.speculatable.erase(it);
      listeners_.onPendingSpeculativeTaskDropped(stage.schedulerStageId);
      continue;
    }
    // A second copy on the executor that runs the first would be just as slow; one where the
    // task failed before would fail again.
    const bool here = std::any_of(copies->second.begin(), copies->second.end(), [&](int64_t id) {
      return runningTasks_.at(id).executorId == executorId;
    });
    if (here || (excluded && excluded(index))) {
      ++it;
      continue;
    }
    int attempt = 0;
    for (int64_t id : copies->second) {
      attempt = std::max(attempt, runningTasks_.at(id).attempt.attempt + 1);
    }
    stage.speculatable.erase(it);
    return TaskOffer{TaskAttempt{index, attempt}, TaskLocality::kAny};
  }
  return std::nullopt;
}

// The offers of one resourceOffers call as they are used up: the order they are tried in and the
// room each still has.
struct TaskScheduler::OfferRound {
  std::vector<size_t> order;  // shuffled offer indices
  std::vector<int> freeSlots;
  std::vector<int> queueRoom;
  std::vector<int> queuedOn;  // tasks queued on the offer's executor
  TimeMs now = 0;
};

namespace {

bool anyOfferOfProfile(const std::vector<WorkerOffer>& offers, int profileId) {
  bool offeredOfProfile = false;
  for (const WorkerOffer& worker : offers) offeredOfProfile |= worker.profileId == profileId;
  return offeredOfProfile;
}

}  // namespace

std::vector<rest::TaskLaunch> TaskScheduler::resourceOffers(
    const std::vector<WorkerOffer>& offers) {
  std::vector<rest::TaskLaunch> launches;
  if (offers.empty() || activeTaskSets_.empty()) return launches;
  OfferRound round = startOfferRound(offers);

  // Launching never changes the set of active TaskSets (only task ends do), so iterating a
  // snapshot of it here is safe.
  for (const auto& [jobPtr, stageIndex] : sortedTaskSets()) {
    JobRun& job = *jobPtr;
    StageRun& stage = job.stages[stageIndex];
    if (job.state != JobState::kRunning) continue;   // failed by an earlier stage of this round
    if (stage.unfinishedDependencies > 0) continue;  // waiting for lost inputs to be re-made
    // Only executors of the stage's resource profile run its tasks (Spark's rule); offers of
    // other profiles neither launch nor make it unschedulable.
    if (!anyOfferOfProfile(offers, stage.profileId)) continue;
    const size_t launchedBefore = launches.size();
    launchPendingTasks(job, stageIndex, offers, round, launches);
    if (stage.excludelist) {
      if (launches.size() > launchedBefore) {
        setUnschedulable(stage, false);
        stage.unschedulableSinceMs = -1;
      } else if (std::optional<int64_t> stuck = completelyExcludedTask(job, stageIndex)) {
        if (handleUnschedulable(job, stageIndex, *stuck, round.now)) continue;
      }
    }
    // Speculative copies only when the stage has nothing else to run, as in Spark.
    if (!stage.speculatable.empty() && !stage.tasks->hasPendingTasks()) {
      launchSpeculativeCopies(job, stageIndex, offers, round, launches);
    }
  }
  return launches;
}

TaskScheduler::OfferRound TaskScheduler::startOfferRound(const std::vector<WorkerOffer>& offers) {
  for (const WorkerOffer& offer : offers) {
    executorNodes_[offer.executorId] = offer.host;
    executorProfiles_[offer.executorId] = offer.profileId;
  }
  OfferRound round;
  // Shuffled so that tasks spread over executors instead of always filling the first one
  // (Spark's shuffleOffers). Fisher-Yates on the raw generator: the same seed gives the same
  // order with any standard library.
  round.order.resize(offers.size());
  for (size_t i = 0; i < round.order.size(); ++i) round.order[i] = i;
  for (size_t i = round.order.size() - 1; i > 0; --i) {
    std::swap(round.order[i], round.order[static_cast<size_t>(random_() % (i + 1))]);
  }
  round.freeSlots.resize(offers.size());
  round.queueRoom.resize(offers.size());
  round.queuedOn.assign(offers.size(), 0);
  for (size_t i = 0; i < offers.size(); ++i) {
    round.freeSlots[i] = offers[i].freeSlots;
    round.queueRoom[i] = offers[i].queueRoom;
    if (round.queueRoom[i] > 0) round.queuedOn[i] = queuedTasksOn(offers[i].executorId);
  }
  round.now = clock_.nowMs();
  if (health_) {
    // Excluded for the application: offered nothing (Spark filters such offers out first).
    health_->applyExcludeOnFailureTimeout();
    for (size_t i = 0; i < offers.size(); ++i) {
      if (health_->isExecutorExcluded(offers[i].executorId) ||
          health_->isNodeExcluded(offers[i].host)) {
        round.freeSlots[i] = 0;
      }
    }
  }
  return round;
}

void TaskScheduler::launchPendingTasks(JobRun& job, size_t stageIndex,
                                       const std::vector<WorkerOffer>& offers, OfferRound& round,
                                       std::vector<rest::TaskLaunch>& launches) {
  StageRun& stage = job.stages[stageIndex];
  // Tasks of this stage each offer may still take queued (pipelining): none for a stage too
  // long or too wide to pipeline.
  const int depth = queueDepthFor(stage);
  std::vector<int> stageQueue(offers.size(), 0);
  for (size_t i = 0; i < offers.size(); ++i) {
    stageQueue[i] = std::min(round.queueRoom[i], std::max(0, depth - round.queuedOn[i]));
  }
  // Each locality level in turn (Spark's resourceOffers), one task per offer per pass, so
  // that one large offer does not take the whole stage while others stay idle. Free slots are
  // filled before any task is queued.
  for (TaskLocality level : stage.tasks->validLocalityLevels()) {
    bool launchedInPass = true;
    while (launchedInPass && stage.tasks->hasPendingTasks()) {
      launchedInPass = false;
      for (size_t offer : round.order) {
        const bool queue = round.freeSlots[offer] < stage.cpus;
        if (queue && stageQueue[offer] <= 0) continue;
        const WorkerOffer& worker = offers[offer];
        if (worker.profileId != stage.profileId) continue;
        if (offerExcludedForStage(stage, worker)) continue;
        std::optional<TaskOffer> next = stage.tasks->resourceOffer(
            worker.executorId, worker.host, level, round.now, excludedTasks(stage, worker));
        if (!next) continue;
        launches.push_back(launchTask(job, stageIndex, *next, worker.executorId, false, queue));
        if (queue) {
          --stageQueue[offer];
          --round.queueRoom[offer];
          ++round.queuedOn[offer];
        } else {
          round.freeSlots[offer] -= stage.cpus;
        }
        launchedInPass = true;
      }
    }
  }
}

void TaskScheduler::launchSpeculativeCopies(JobRun& job, size_t stageIndex,
                                            const std::vector<WorkerOffer>& offers,
                                            OfferRound& round,
                                            std::vector<rest::TaskLaunch>& launches) {
  const StageRun& stage = job.stages[stageIndex];
  for (size_t offer : round.order) {
    if (offers[offer].profileId != stage.profileId) continue;
    if (offerExcludedForStage(stage, offers[offer])) continue;
    const TaskExcluded excluded = excludedTasks(stage, offers[offer]);
    while (round.freeSlots[offer] >= stage.cpus) {
      std::optional<TaskOffer> copy =
          speculativeOffer(job, stageIndex, offers[offer].executorId, excluded);
      if (!copy) break;
      launches.push_back(launchTask(job, stageIndex, *copy, offers[offer].executorId, true));
      round.freeSlots[offer] -= stage.cpus;
    }
  }
}

std::vector<rest::BlockInput> TaskScheduler::inputsOf(const JobRun& job, size_t stageIndex,
                                                      int64_t index) const {
  std::vector<rest::BlockInput> inputs;
  const StageRun& stage = job.stages[stageIndex];
  for (const auto& [name, source] : stage.inputs) {
    // Only the map outputs holding blocks, and the lost ones: a map task that wrote nothing
    // has nothing to fetch, so a wide noop stage costs its readers nothing per map task.
    blocks_.forEachInput(
        source, [&, &name = name, &source = source](int64_t map, const MapOutput* output) {
          rest::BlockInput input;
          input.stageId = name;
          input.mapIndex = map;
          input.path = source + "/" + std::to_string(map) + "/part-" + std::to_string(index);
          if (output == nullptr) {
            // Lost since the stage was unblocked: the fetch fails and the map task runs again,
            // rather than the task silently reading less.
            inputs.push_back(std::move(input));
            return;
          }
          const std::optional<int64_t> size = output->partitionSize(index);
          if (!size) return;  // that map task wrote nothing for this partition
          input.executorId = output->executorId;
          input.size = *size;
          inputs.push_back(std::move(input));
        });
  }
  return inputs;
}

int TaskScheduler::queueDepthFor(const StageRun& stage) const {
  if (config_.queuedTasksPerExecutor <= 0 || stage.cpus != config_.taskCpus) return 0;
  const int64_t succeeded = stage.tasks->succeededCount();
  if (succeeded == 0) return 0;  // how long its tasks take is not known yet
  // The k-th queued task starts after about ceil(k / slots) mean durations.
  const double meanMs = static_cast<double>(stage.tasks->durationSumMs()) / succeeded;
  const double drained = static_cast<double>(config_.queuedTaskWaitMs) / std::max(meanMs, 0.001) *
                         static_cast<double>(config_.slotsPerExecutor);
  return static_cast<int>(std::min<double>(config_.queuedTasksPerExecutor, drained));
}

rest::TaskLaunch TaskScheduler::launchTask(JobRun& job, size_t stageIndex, const TaskOffer& offer,
                                           const std::string& executorId, bool speculative,
                                           bool queued) {
  StageRun& stage = job.stages[stageIndex];
  const StageSpec& spec = *stage.spec;
  TaskAttempt attempt = offer.attempt;
  // A first launch is attempt 0 and proposes nothing else; every re-launch proposes 1 or more
  // (and so does a first launch here of an index an earlier AM attempt launched).
  if (attempt.attempt > 0 || stage.highestAttempt.count(attempt.index) != 0) {
    int& highest = stage.highestAttempt[attempt.index];  // 0: only attempt 0 ran so far
    attempt.attempt = std::max(attempt.attempt, highest + 1);
    highest = attempt.attempt;
  }
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
  launch.inputs = inputsOf(job, stageIndex, attempt.index);
  launch.collectDir = stage.collectDir;
  launch.speculative = speculative;
  launch.queued = queued;

  RunningTask running;
  running.job = &job;
  running.stage = stageIndex;
  running.attempt = attempt;
  running.executorId = executorId;
  running.startMs = clock_.nowMs();
  running.speculative = speculative;
  running.queued = queued;
  runningTasks_.emplace(launch.taskId, std::move(running));
  runningByExecutor_[executorId].insert(launch.taskId);
  stage.runningByIndex[attempt.index].push_back(launch.taskId);
  ++stage.launchesByLocality[static_cast<size_t>(offer.locality)];
  ++job.launched;
  job.executorsUsed.insert(executorId);
  if (queued) {
    ++queuedTasks_;  // its start is heard once the executor starts it
    ++queuedNotAskedBack_;
  } else if (speculative) {
    ++stage.speculativeLaunches;
    // The speculative copy was counted when it was submitted, not as a pending task.
    listeners_.onSpeculativeTaskStart(stage.schedulerStageId, executorId);
  } else {
    listeners_.onTaskStart(stage.schedulerStageId, executorId);
  }
  return launch;
}

void TaskScheduler::startQueued(RunningTask& task, TimeMs startMs) {
  task.queued = false;
  --queuedTasks_;
  if (!task.takeBackAsked) --queuedNotAskedBack_;
  task.startMs = startMs;
  listeners_.onTaskStart(task.job->stages[task.stage].schedulerStageId, task.executorId);
}

void TaskScheduler::taskStarted(int64_t taskId, const std::string& executorId) {
  auto found = runningTasks_.find(taskId);
  if (found == runningTasks_.end() || !found->second.queued) return;
  if (found->second.executorId != executorId) return;
  startQueued(found->second, clock_.nowMs());
}

int TaskScheduler::queuedTasksOn(const std::string& executorId) const {
  if (queuedTasks_ == 0) return 0;
  auto found = runningByExecutor_.find(executorId);
  if (found == runningByExecutor_.end()) return 0;
  int queued = 0;
  for (int64_t taskId : found->second) queued += runningTasks_.at(taskId).queued ? 1 : 0;
  return queued;
}

std::vector<TaskToKill> TaskScheduler::takeBackQueuedTasksFor(const std::string& idleExecutor) {
  std::vector<TaskToKill> takeBack;
  // Idle executors ask again at every wake-up of their long poll: only a scan that can find
  // something walks the running tasks.
  if (queuedNotAskedBack_ == 0) return takeBack;
  for (auto& [taskId, task] : runningTasks_) {
    if (!task.queued || task.takeBackAsked || task.executorId == idleExecutor) continue;
    task.takeBackAsked = true;
    --queuedNotAskedBack_;
    takeBack.push_back(TaskToKill{taskId, task.executorId});
  }
  std::sort(takeBack.begin(), takeBack.end(),
            [](const TaskToKill& a, const TaskToKill& b) { return a.taskId < b.taskId; });
  return takeBack;
}

std::vector<TaskToKill> TaskScheduler::takeBackQueuedTasksOn(const std::string& executorId) {
  std::vector<TaskToKill> takeBack;
  if (queuedNotAskedBack_ == 0) return takeBack;
  auto found = runningByExecutor_.find(executorId);
  if (found == runningByExecutor_.end()) return takeBack;
  for (int64_t taskId : found->second) {
    RunningTask& task = runningTasks_.at(taskId);
    if (!task.queued || task.takeBackAsked) continue;
    task.takeBackAsked = true;
    --queuedNotAskedBack_;
    takeBack.push_back(TaskToKill{taskId, executorId});
  }
  std::sort(takeBack.begin(), takeBack.end(),
            [](const TaskToKill& a, const TaskToKill& b) { return a.taskId < b.taskId; });
  return takeBack;
}

bool TaskScheduler::queuedTaskReturned(int64_t taskId, const std::string& executorId) {
  auto found = runningTasks_.find(taskId);
  if (found == runningTasks_.end() || !found->second.queued ||
      found->second.executorId != executorId) {
    return false;
  }
  bool killRequested = false;
  const RunningTask task = removeRunning(taskId, &killRequested);
  requeueUnstarted(task);
  return true;
}

void TaskScheduler::requeueUnstarted(const RunningTask& task) {
  StageRun& stage = task.job->stages[task.stage];
  const int64_t index = task.attempt.index;
  if (stage.state != StageState::kRunning || stage.tasks->isSucceeded(index) ||
      stage.runningByIndex.count(index) != 0) {
    return;  // nothing left to do for it (its job ended, or another copy runs or has won)
  }
  // It never ran: its next launch takes the same attempt number.
  auto highest = stage.highestAttempt.find(index);
  if (highest != stage.highestAttempt.end() && highest->second == task.attempt.attempt) {
    --highest->second;
  }
  stage.tasks->requeueFront(index, task.attempt.attempt);
}

std::pair<TaskScheduler::JobRun*, size_t> TaskScheduler::findStage(const std::string& jobId,
                                                                   const std::string& stageId,
                                                                   std::string* why) {
  auto job = jobsById_.find(jobId);
  if (job == jobsById_.end()) {
    *why = "unknown job '" + jobId + "'";
    return {nullptr, 0};
  }
  for (size_t i = 0; i < job->second->stages.size(); ++i) {
    if (job->second->stages[i].spec->id == stageId) return {job->second, i};
  }
  *why = "job '" + jobId + "' has no stage '" + stageId + "'";
  return {nullptr, 0};
}

std::string TaskScheduler::restoreLaunchedAttempt(const std::string& jobId,
                                                  const std::string& stageId, int64_t index,
                                                  int attempt) {
  std::string why;
  auto [job, stageIndex] = findStage(jobId, stageId, &why);
  if (job == nullptr) return why;
  StageRun& stage = job->stages[stageIndex];
  if (index < 0 || index >= stage.spec->numTasks) {
    return describeTask(stage.schedulerStageId, index) + " is out of range";
  }
  int& highest = stage.highestAttempt[index];
  highest = std::max(highest, attempt);
  return "";
}

std::string TaskScheduler::restoreCommitted(const std::string& jobId, const std::string& stageId,
                                            int64_t index, int attempt,
                                            const std::string& executorId, const std::string& node,
                                            DurationMs durationMs,
                                            const std::vector<rest::BlockOutput>& blocks) {
  std::string why = restoreLaunchedAttempt(jobId, stageId, index, attempt);
  if (!why.empty()) return why;
  auto [job, stageIndex] = findStage(jobId, stageId, &why);
  StageRun& stage = job->stages[stageIndex];
  // A committed index launches again only for lineage, which proposes attempt 1 or more: only
  // a higher attempt needs remembering, so replaying a huge stage's commits keeps no entry per
  // task (the entry of a launch lasts only until its commit).
  if (auto highest = stage.highestAttempt.find(index);
      highest != stage.highestAttempt.end() && highest->second == 0) {
    stage.highestAttempt.erase(highest);
  }
  if (job->state != JobState::kRunning) return "";  // its end is known already
  if (!stage.tasks || stage.state != StageState::kRunning) {
    return "a task of " + stage.schedulerStageId + " committed before the stage could run";
  }
  if (stage.tasks->isSucceeded(index)) return "";
  stage.tasks->markRestored(index, /*running=*/false);
  if (!stage.tasks->markSucceeded(index, durationMs)) return "";
  if (!node.empty()) executorNodes_[executorId] = node;
  job->executorsUsed.insert(executorId);
  ++job->launched;
  // The policy counts it as it would have: started, then succeeded.
  listeners_.onTaskStart(stage.schedulerStageId, executorId);
  registerOutput(*job, stageIndex, index, executorId, blocks);
  listeners_.onTaskEnd(stage.schedulerStageId, executorId, TaskOutcome::kSucceeded);
  if (stage.tasks->allSucceeded()) completeStage(*job, stageIndex);
  return "";
}

std::string TaskScheduler::restoreRunning(int64_t taskId, const std::string& jobId,
                                          const std::string& stageId, int64_t index, int attempt,
                                          const std::string& executorId, const std::string& node) {
  std::string why = restoreLaunchedAttempt(jobId, stageId, index, attempt);
  if (!why.empty()) return why;
  auto [job, stageIndex] = findStage(jobId, stageId, &why);
  StageRun& stage = job->stages[stageIndex];
  if (job->state != JobState::kRunning || !stage.tasks || stage.state != StageState::kRunning ||
      stage.tasks->isSucceeded(index) || runningTasks_.count(taskId) != 0) {
    return "task " + std::to_string(taskId) + " (" + describeTask(stage.schedulerStageId, index) +
           ") is not wanted any more";
  }
  stage.tasks->markRestored(index, /*running=*/true);
  if (!node.empty()) executorNodes_[executorId] = node;
  RunningTask running;
  running.job = job;
  running.stage = stageIndex;
  running.attempt = TaskAttempt{index, attempt};
  running.executorId = executorId;
  running.startMs = clock_.nowMs();
  runningTasks_.emplace(taskId, std::move(running));
  runningByExecutor_[executorId].insert(taskId);
  stage.runningByIndex[index].push_back(taskId);
  ++job->launched;
  job->executorsUsed.insert(executorId);
  continueTaskIdsAfter(taskId);
  listeners_.onTaskStart(stage.schedulerStageId, executorId);
  return "";
}

TaskScheduler::RunningTask TaskScheduler::removeRunning(int64_t taskId, bool* killRequested) {
  auto it = runningTasks_.find(taskId);
  RunningTask task = std::move(it->second);
  runningTasks_.erase(it);
  if (task.queued) {
    --queuedTasks_;
    if (!task.takeBackAsked) --queuedNotAskedBack_;
  }
  auto byExecutor = runningByExecutor_.find(task.executorId);
  if (byExecutor != runningByExecutor_.end()) {
    byExecutor->second.erase(taskId);
    if (byExecutor->second.empty()) runningByExecutor_.erase(byExecutor);
  }
  *killRequested = killRequested_.erase(taskId) > 0;
  StageRun& stage = task.job->stages[task.stage];
  stage.tasks->onAttemptEnded();
  auto copies = stage.runningByIndex.find(task.attempt.index);
  if (copies != stage.runningByIndex.end()) {
    copies->second.erase(std::remove(copies->second.begin(), copies->second.end(), taskId),
                         copies->second.end());
    if (copies->second.empty()) stage.runningByIndex.erase(copies);
  }
  return task;
}

bool TaskScheduler::statusUpdate(const rest::TaskStatusUpdate& update,
                                 const std::string& executorId,
                                 std::optional<CommittedTask>* committed) {
  auto found = runningTasks_.find(update.taskId);
  if (found == runningTasks_.end() || found->second.executorId != executorId) return false;
  const TimeMs now = clock_.nowMs();
  // A queued task that started and ended between two syncs: its start is heard first.
  if (found->second.queued)
    startQueued(found->second, now - std::max<int64_t>(0, update.durationMs));
  bool killRequested = false;
  const RunningTask task = removeRunning(update.taskId, &killRequested);

  if (update.state == rest::TaskState::kFinished) {
    taskFinished(task, update, executorId, now, committed);
  } else if (update.state == rest::TaskState::kKilled) {
    taskKilled(task, update, killRequested);
  } else if (update.state == rest::TaskState::kFetchFailed) {
    handleFetchFailure(task, update.taskId, update);
  } else {
    // FAILED: the one state left.
    failAttempt(task, update.taskId, failureReason(update), update.exitCode, update.stderrTail,
                killRequested);
  }
  return true;
}

void TaskScheduler::taskFinished(const RunningTask& task, const rest::TaskStatusUpdate& update,
                                 const std::string& executorId, TimeMs now,
                                 std::optional<CommittedTask>* committed) {
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  auto authorized = stage.commitAuthorized.find(task.attempt.index);
  if (authorized != stage.commitAuthorized.end() && authorized->second != update.taskId) {
    // Another attempt holds the commit: this one's output is not the task's (an executor that
    // did not ask). It ends as a kill, never as the task's success.
    taskEnded(task, TaskOutcome::kKilled);
    return;
  }
  const bool stageActive = stage.state == StageState::kRunning;
  const bool counted =
      stageActive && stage.tasks->markSucceeded(task.attempt.index, now - task.startMs);
  if (authorized != stage.commitAuthorized.end()) stage.commitAuthorized.erase(authorized);
  if (counted) {
    registerOutput(job, task.stage, task.attempt.index, executorId, update.blocks);
    killOtherCopies(job, task.stage, task.attempt.index, update.taskId);
    // Marked for a copy that never launched: nobody needs it now (as in Spark).
    if (stage.speculatable.erase(task.attempt.index) != 0) {
      listeners_.onPendingSpeculativeTaskDropped(stage.schedulerStageId);
    }
  }
  taskEnded(task, TaskOutcome::kSucceeded);
  const bool stageDone = counted && stage.tasks->allSucceeded();
  if (counted && committed != nullptr) {
    auto node = executorNodes_.find(executorId);
    *committed = CommittedTask{job.id,
                               stage.spec->id,
                               task.attempt.index,
                               task.attempt.attempt,
                               node == executorNodes_.end() ? "" : node->second,
                               stageDone};
  }
  if (stageDone) completeStage(job, task.stage);
}

void TaskScheduler::taskKilled(const RunningTask& task, const rest::TaskStatusUpdate& update,
                               bool killRequested) {
  const StageRun& stage = task.job->stages[task.stage];
  const bool stageActive = stage.state == StageState::kRunning;
  if (killRequested || !stageActive || stage.tasks->isSucceeded(task.attempt.index)) {
    taskEnded(task, TaskOutcome::kKilled);
  } else {
    // Nobody here asked for it (the executor shutting down, say): without a retry the stage
    // could never finish. Spark re-queues killed tasks the same way.
    retryWithoutCounting(task, update.taskId, "killed: " + failureReason(update), false);
  }
}

void TaskScheduler::failAttempt(const RunningTask& task, int64_t taskId, const std::string& reason,
                                int exitCode, const std::string& stderrTail, bool killRequested) {
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  const bool stageActive = stage.state == StageState::kRunning;
  recordFailedAttempt(task, taskId, reason, exitCode, stderrTail, stageActive);
  if (!stageActive || stage.tasks->isSucceeded(task.attempt.index)) {
    taskEnded(task, killRequested ? TaskOutcome::kKilled : TaskOutcome::kFailed);
    return;
  }
  const int failures = stage.tasks->recordFailure(task.attempt.index);
  if (stage.excludelist) {
    auto node = executorNodes_.find(task.executorId);
    stage.excludelist->updateExcludedForFailedTask(node == executorNodes_.end() ? "" : node->second,
                                                   task.executorId, task.attempt.index,
                                                   clock_.nowMs());
  }
  taskEnded(task, TaskOutcome::kFailed);
  if (failures >= config_.maxTaskFailures) {
    std::string message = "Job '" + job.job.name + "' failed: task " +
                          describeTask(stage.spec->id, task.attempt.index) + " failed " +
                          std::to_string(failures) + (failures == 1 ? " time" : " times") +
                          "; most recent failure: " + reason;
    if (!stderrTail.empty()) message += "; stderr tail:\n" + stderrTail;
    failJob(job, task.stage, message);
  } else if (stage.runningByIndex.count(task.attempt.index) == 0) {
    // Another copy still running will do (speculation); else the task goes again.
    dropSpeculationMark(stage, task.attempt.index);
    stage.tasks->requeueFront(task.attempt.index, task.attempt.attempt + 1);
  }
}

void TaskScheduler::dropSpeculationMark(StageRun& stage, int64_t index) {
  if (stage.speculatable.erase(index) != 0) {
    listeners_.onPendingSpeculativeTaskDropped(stage.schedulerStageId);
  }
}

std::string TaskScheduler::canCommit(int64_t taskId, const std::string& executorId) {
  auto found = runningTasks_.find(taskId);
  if (found == runningTasks_.end()) {
    return "task " + std::to_string(taskId) +
           " is not running (its executor was lost, or it ended)";
  }
  const RunningTask& task = found->second;
  if (task.executorId != executorId) {
    return "task " + std::to_string(taskId) + " runs on " + task.executorId + ", not " + executorId;
  }
  StageRun& stage = task.job->stages[task.stage];
  const std::string which = describeTask(stage.spec->id, task.attempt.index);
  if (stage.state != StageState::kRunning) return "stage " + stage.spec->id + " is not running";
  if (stage.tasks->isSucceeded(task.attempt.index)) {
    return "another attempt of " + which + " has committed";
  }
  if (killRequested_.count(taskId) != 0) return "attempt " + std::to_string(taskId) + " is killed";
  auto authorized = stage.commitAuthorized.find(task.attempt.index);
  if (authorized != stage.commitAuthorized.end() && authorized->second != taskId &&
      runningTasks_.count(authorized->second) != 0) {
    // It reports KILLED next: an end the scheduler asked for, neither a failure nor a retry.
    killRequested_.insert(taskId);
    return "attempt " + std::to_string(authorized->second) + " of " + which + " is committing";
  }
  stage.commitAuthorized[task.attempt.index] = taskId;
  return "";
}

void TaskScheduler::retryWithoutCounting(const RunningTask& task, int64_t taskId,
                                         const std::string& reason, bool killRequested) {
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  if (stage.state != StageState::kRunning || stage.tasks->isSucceeded(task.attempt.index)) {
    taskEnded(task, killRequested ? TaskOutcome::kKilled : TaskOutcome::kFailed);
    return;
  }
  recordFailedAttempt(task, taskId, reason, -1, "", /*countsTowardsFailures=*/false);
  const bool lastAttempt = stage.runningByIndex.count(task.attempt.index) == 0;
  if (lastAttempt) stage.tasks->requeueFront(task.attempt.index, task.attempt.attempt + 1);
  taskEnded(task, TaskOutcome::kFailed);
  // After the end: the policy counts the retry pending before it stops counting the copy, so
  // its backlog timer is not reset by a moment with nothing pending.
  if (lastAttempt) dropSpeculationMark(stage, task.attempt.index);
}

void TaskScheduler::handleFetchFailure(const RunningTask& task, int64_t taskId,
                                       const rest::TaskStatusUpdate& update) {
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  const rest::BlockInput& missing = update.failedInput;
  std::string source;
  for (const auto& [name, id] : stage.inputs) {
    if (name == missing.stageId) source = id;
  }
  const std::string why = "fetch of " + missing.stageId + "[" + std::to_string(missing.mapIndex) +
                          "] from " + (missing.executorId.empty() ? "?" : missing.executorId) +
                          " failed: " + update.reason;
  // As Spark without an external shuffle service: an executor that cannot serve one block is
  // taken to have lost them all, so every reader does not have to find out on its own.
  std::map<std::string, std::vector<int64_t>> lost;
  if (!missing.executorId.empty()) {
    lost = blocks_.removeExecutor(missing.executorId);
    auto node = executorNodes_.find(missing.executorId);
    // The fallback storage is no executor to exclude.
    if (health_ && missing.executorId != kFallbackStorageId &&
        health_->updateExcludedForFetchFailure(node == executorNodes_.end() ? "" : node->second,
                                               missing.executorId) &&
        config_.excludeOnFailure.killExcludedExecutors) {
      queueKill(missing.executorId, "executor " + missing.executorId +
                                        " excluded after a fetch failure (" + why +
                                        "; excludeOnFailure.killExcludedExecutors)");
    }
  }
  if (!source.empty()) {
    const std::vector<int64_t> stillMissing = blocks_.missingOutputs(source);
    std::vector<int64_t>& indices = lost[source];
    indices.insert(indices.end(), stillMissing.begin(), stillMissing.end());
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  }
  // The reading task waits for its inputs again; not its fault, so not counted (as in Spark).
  retryWithoutCounting(task, taskId, why, false);
  handleLostOutputs(lost, why);
}

void TaskScheduler::registerOutput(JobRun& job, size_t stageIndex, int64_t index,
                                   const std::string& executorId,
                                   const std::vector<rest::BlockOutput>& blocks) {
  StageRun& stage = job.stages[stageIndex];
  auto node = executorNodes_.find(executorId);
  MapOutput output;
  output.executorId = executorId;
  output.node = node == executorNodes_.end() ? "" : node->second;
  output.blocks = blocks;
  blocks_.registerOutput(stage.schedulerStageId, stage.spec->numTasks, index, std::move(output));
  // An executor holds data only if the task left some there (builtin tasks never do).
  if (blocks.empty()) return;
  if (!stage.dependents.empty()) listeners_.onShuffleOutput(executorId, stage.schedulerStageId);
  if (stage.spec->persist) listeners_.onBlocksCached(executorId, stage.schedulerStageId);
}

void TaskScheduler::killOtherCopies(const JobRun& job, size_t stageIndex, int64_t index,
                                    int64_t winner) {
  const StageRun& stage = job.stages[stageIndex];
  auto copies = stage.runningByIndex.find(index);
  if (copies == stage.runningByIndex.end()) return;
  for (int64_t taskId : copies->second) {
    if (taskId == winner || killRequested_.count(taskId) != 0) continue;
    killRequested_.insert(taskId);
    tasksToKill_.push_back(TaskToKill{taskId, runningTasks_.at(taskId).executorId});
  }
}

void TaskScheduler::handleLostOutputs(const std::map<std::string, std::vector<int64_t>>& lost,
                                      const std::string& why) {
  for (const auto& [stageId, indices] : lost) {
    if (indices.empty()) continue;
    auto found = stagesById_.find(stageId);
    if (found == stagesById_.end()) continue;
    JobRun& job = *found->second.first;
    const size_t stageIndex = found->second.second;
    StageRun& stage = job.stages[stageIndex];
    if (job.state == JobState::kRunning) {
      // Needed again only while a stage of the job still has to read it.
      const bool needed =
          std::any_of(stage.dependents.begin(), stage.dependents.end(),
                      [&](size_t d) { return job.stages[d].state != StageState::kSucceeded; });
      // A final stage's outputs are already collected; nobody reads them again.
      if (needed) rerunStage(job, stageIndex, indices, why);
      continue;
    }
    // A persisted stage of an ended job: the jobs reading it cannot re-make it.
    for (const std::unique_ptr<JobRun>& reader : jobs_) {
      if (reader->state != JobState::kRunning) continue;
      for (size_t i = 0; i < reader->stages.size(); ++i) {
        const StageRun& readerStage = reader->stages[i];
        const bool reads =
            readerStage.state != StageState::kSucceeded &&
            std::any_of(readerStage.inputs.begin(), readerStage.inputs.end(),
                        [&id = stageId](const auto& input) { return input.second == id; });
        if (reads && reader->state == JobState::kRunning) {
          failJob(*reader, i,
                  "Job '" + reader->job.name + "' failed: persisted stage " + stageId + " lost " +
                      std::to_string(indices.size()) + " task outputs (" + why + ")");
        }
      }
    }
  }
}

void TaskScheduler::rerunStage(JobRun& job, size_t stageIndex, const std::vector<int64_t>& indices,
                               const std::string& why) {
  StageRun& stage = job.stages[stageIndex];
  if (!stage.tasks || job.state != JobState::kRunning) return;
  if (stage.state == StageState::kSucceeded) {
    if (++stage.reruns > config_.maxStageReruns) {
      failJob(job, stageIndex,
              "Job '" + job.job.name + "' failed: stage " + stage.spec->id + " lost its output " +
                  std::to_string(stage.reruns) + " times; most recently: " + why);
      return;
    }
    stage.state = StageState::kRunning;
    stage.completedMs = -1;
    --job.stagesSucceeded;
    activeTaskSets_[stage.queueKey] = {&job, stageIndex};
    // Its readers wait until it has made the lost outputs again.
    for (size_t dependent : stage.dependents) {
      if (job.stages[dependent].state != StageState::kSucceeded) {
        ++job.stages[dependent].unfinishedDependencies;
      }
    }
  }
  const int64_t requeued = stage.tasks->resubmit(indices);
  if (requeued > 0) {
    listeners_.onStageSubmitted(stage.schedulerStageId, requeued, stage.cpus,
                                *profiles_.find(stage.profileId));
  }
}

void TaskScheduler::releaseJobData(JobRun& job) {
  for (StageRun& stage : job.stages) {
    const std::string& id = stage.schedulerStageId;
    if (!stage.dependents.empty()) listeners_.onShuffleReleased(id);
    if (stage.spec->persist && stage.state == StageState::kSucceeded) {
      persisted_.insert(id);  // kept, with its cached-data hold on its executors
      continue;
    }
    if (stage.spec->persist) listeners_.onBlocksUncached(id);
    blocks_.dropStage(id);
    dropStageBlocks(id, job.executorsUsed);
  }
  for (const std::string& stageId : job.job.unpersist) {
    if (persisted_.count(stageId) != 0) (void)unpersist(stageId);
  }
}

void TaskScheduler::dropStageBlocks(const std::string& stageId,
                                    const std::set<std::string>& executors) {
  for (const std::string& executor : executors) {
    if (executorNodes_.count(executor) == 0) continue;  // gone, and its files with it
    blocksToDrop_.push_back(BlocksToDrop{executor, stageId});
  }
}

Status TaskScheduler::unpersist(const std::string& stageId) {
  auto found = stagesById_.find(stageId);
  if (found == stagesById_.end()) return Status::notFound("no stage " + stageId);
  JobRun& job = *found->second.first;
  const StageRun& stage = job.stages[found->second.second];
  if (!stage.spec->persist) {
    return Status::failedPrecondition("stage " + stageId + " is not persisted");
  }
  if (job.state == JobState::kRunning) {
    return Status::failedPrecondition("the job of stage " + stageId + " is still running");
  }
  if (persisted_.erase(stageId) == 0) {
    return Status::failedPrecondition("stage " + stageId + " is no longer persisted");
  }
  listeners_.onBlocksUncached(stageId);
  blocks_.dropStage(stageId);
  dropStageBlocks(stageId, job.executorsUsed);
  return Status();
}

std::vector<CachedStageSummary> TaskScheduler::cachedStages() const {
  std::vector<CachedStageSummary> cached;
  for (const std::string& stageId : persisted_) {
    CachedStageSummary summary;
    summary.stageId = stageId;
    summary.numTasks = blocks_.numTasks(stageId);
    summary.missing = blocks_.missingCount(stageId);
    summary.bytes = blocks_.stageBytes(stageId);
    summary.executors = blocks_.stageExecutors(stageId);
    cached.push_back(std::move(summary));
  }
  return cached;
}

std::map<std::string, int64_t> TaskScheduler::pendingTasksByPreferredNode() const {
  std::map<std::string, int64_t> counts;
  for (const auto& [key, ref] : activeTaskSets_) {
    const StageRun& stage = ref.first->stages[ref.second];
    if (stage.unfinishedDependencies > 0) continue;
    for (const auto& [node, tasks] : stage.tasks->pendingTasksByNode()) counts[node] += tasks;
  }
  return counts;
}

std::map<int, LocalityHints> TaskScheduler::containerPlacementHints() const {
  std::map<int, LocalityHints> hints;
  std::map<int, int> widestCpus;
  for (const auto& [key, ref] : activeTaskSets_) {
    const StageRun& stage = ref.first->stages[ref.second];
    if (stage.unfinishedDependencies > 0) continue;
    int64_t preferring = 0;
    const auto byNode = stage.tasks->tasksByNode(&preferring);
    if (preferring == 0) continue;
    LocalityHints& profile = hints[stage.profileId];
    for (const auto& [node, tasks] : byNode) profile.tasksByHost[node] += tasks;
    profile.localityAwareTasks += preferring;
    widestCpus[stage.profileId] = std::max(widestCpus[stage.profileId], stage.cpus);
  }
  for (auto& [profileId, profile] : hints) {
    const allocation::ResourceProfile* shape = profiles_.find(profileId);
    const int cores = shape != nullptr ? shape->executorCores : config_.executorCores;
    profile.tasksPerExecutor = std::max(1, cores / std::max(1, widestCpus[profileId]));
  }
  return hints;
}

int64_t TaskScheduler::keepOnlyHeldOutputs(const std::string& executorId,
                                           const std::set<std::string>& held,
                                           const std::string& why) {
  const auto lost = blocks_.removeMissingOn(executorId, held);
  int64_t count = 0;
  for (const auto& [stageId, indices] : lost) count += static_cast<int64_t>(indices.size());
  handleLostOutputs(lost, why);
  return count;
}

std::vector<std::string> TaskScheduler::stagesHeldBy(const std::string& executorId) const {
  return blocks_.stagesOn(executorId);
}

std::vector<OutputToMigrate> TaskScheduler::outputsToMigrate(const std::string& executorId) const {
  std::vector<OutputToMigrate> outputs;
  for (const auto& [stageId, index] : blocks_.outputsOn(executorId)) {
    auto found = stagesById_.find(stageId);
    if (found == stagesById_.end()) continue;
    const JobRun& job = *found->second.first;
    const StageRun& stage = job.stages[found->second.second];
    const bool cached = stage.spec->persist;
    // Shuffle output matters while a stage of its job still has to read it; a final stage's
    // outputs are already collected.
    const bool read = job.state == JobState::kRunning &&
                      std::any_of(stage.dependents.begin(), stage.dependents.end(), [&](size_t d) {
                        return job.stages[d].state != StageState::kSucceeded;
                      });
    if (!cached && !read) continue;
    const MapOutput* output = blocks_.output(stageId, index);
    if (output == nullptr) continue;
    OutputToMigrate migrate;
    migrate.stageId = stageId;
    migrate.index = index;
    migrate.cached = cached;
    for (const rest::BlockOutput& block : output->blocks) {
      migrate.blocks.push_back(stageId + "/" + std::to_string(index) + "/part-" +
                               std::to_string(block.partition));
    }
    outputs.push_back(std::move(migrate));
  }
  return outputs;
}

bool TaskScheduler::outputMigrated(const std::string& stageId, int64_t index,
                                   const std::string& fromExecutor, const std::string& toExecutor,
                                   const std::string& toNode) {
  if (!blocks_.moveOutput(stageId, index, fromExecutor, toExecutor, toNode)) return false;
  auto found = stagesById_.find(stageId);
  if (found == stagesById_.end()) return true;
  JobRun& job = *found->second.first;
  const StageRun& stage = job.stages[found->second.second];
  // Readers already submitted prefer the new place, not the executor that is leaving.
  for (size_t dependent : stage.dependents) {
    const StageRun& reader = job.stages[dependent];
    if (reader.tasks && reader.state == StageState::kRunning) updatePreferences(job, dependent);
  }
  // In the fallback storage it is on no executor: none holds data for the policy.
  if (toExecutor == kFallbackStorageId) return true;
  job.executorsUsed.insert(toExecutor);  // the job's end drops its blocks there too
  if (!stage.dependents.empty()) listeners_.onShuffleOutput(toExecutor, stageId);
  if (stage.spec->persist) listeners_.onBlocksCached(toExecutor, stageId);
  return true;
}

void TaskScheduler::executorRemoved(const std::string& executorId) {
  // The policy releases only idle executors, but whatever the scheduler still has there must not
  // be stranded: it runs elsewhere, not counted (a release is the AM's doing, not the task's).
  dropExecutor(executorId, "executor " + executorId + " released", /*exitCausedByApp=*/false);
}

void TaskScheduler::dropExecutor(const std::string& executorId, const std::string& why,
                                 bool exitCausedByApp) {
  executorNodes_.erase(executorId);
  executorProfiles_.erase(executorId);
  if (health_) health_->handleRemovedExecutor(executorId);
  for (const auto& [key, ref] : activeTaskSets_) {
    ref.first->stages[ref.second].tasks->executorLost(executorId);
  }
  // Its blocks are gone with it: the stages that wrote them run those tasks again.
  const auto lost = blocks_.removeExecutor(executorId);
  handleLostOutputs(lost, "executor " + executorId + " is gone");
  auto found = runningByExecutor_.find(executorId);
  if (found == runningByExecutor_.end()) return;
  const std::vector<int64_t> taskIds(found->second.begin(), found->second.end());
  // Newest first, each to the front of its stage: the lost tasks then run again in their
  // original order, ahead of the rest of the stage.
  for (auto it = taskIds.rbegin(); it != taskIds.rend(); ++it) {
    bool killRequested = false;
    const RunningTask task = removeRunning(*it, &killRequested);
    if (task.queued) {
      // Never started as far as the AM knows: not an attempt that failed, just pending again.
      requeueUnstarted(task);
      continue;
    }
    // Spark's ExecutorLostFailure(exitCausedByApp): a container the application's own tasks
    // killed (memory, a non-zero exit) fails the tasks running in it, toward task.maxFailures.
    if (exitCausedByApp) {
      failAttempt(task, *it, why, -1, "", killRequested);
    } else {
      retryWithoutCounting(task, *it, why, killRequested);
    }
  }
}

bool TaskScheduler::offerExcludedForStage(const StageRun& stage, const WorkerOffer& offer) const {
  return stage.excludelist && (stage.excludelist->isExecutorExcludedForTaskSet(offer.executorId) ||
                               stage.excludelist->isNodeExcludedForTaskSet(offer.host));
}

TaskExcluded TaskScheduler::excludedTasks(const StageRun& stage, const WorkerOffer& offer) const {
  if (!stage.excludelist) return {};
  const TaskSetExcludelist* list = stage.excludelist.get();
  return [list, executorId = offer.executorId, host = offer.host](int64_t index) {
    return list->isExcluded(executorId, host, index);
  };
}

std::optional<int64_t> TaskScheduler::completelyExcludedTask(const JobRun& job,
                                                             size_t stageIndex) const {
  const StageRun& stage = job.stages[stageIndex];
  // Only once some executor registered: before that nothing is excluded, only missing.
  if (!stage.excludelist || !stage.tasks->hasPendingTasks() || executorNodes_.empty()) {
    return std::nullopt;
  }
  const TaskSetExcludelist& list = *stage.excludelist;
  const auto excludedEverywhere = [&](int64_t index) {
    for (const auto& [executor, node] : executorNodes_) {
      // Executors of other profiles could never run it: neither excluded nor a place for it.
      auto profile = executorProfiles_.find(executor);
      const int profileId =
          profile == executorProfiles_.end() ? allocation::kDefaultProfileId : profile->second;
      if (profileId != stage.profileId) continue;
      const bool nodeExcluded = health_->isNodeExcluded(node) ||
                                list.isNodeExcludedForTaskSet(node) ||
                                list.isNodeExcludedForTask(node, index);
      if (nodeExcluded) continue;
      if (!health_->isExecutorExcluded(executor) && !list.isExecutorExcludedForTaskSet(executor) &&
          !list.isExecutorExcludedForTask(executor, index)) {
        return false;
      }
    }
    return true;
  };
  // The pending tasks that failed before are the ones excluded one by one; any other pending
  // task is excluded only where whole executors and nodes are (index -1 stands for it).
  int64_t pendingFailed = 0;
  for (int64_t index : list.failedTasks()) {
    if (stage.tasks->isSucceeded(index) || stage.runningByIndex.count(index) != 0) continue;
    ++pendingFailed;
    if (excludedEverywhere(index)) return index;
  }
  if (stage.tasks->pendingCount() > pendingFailed && excludedEverywhere(-1)) return -1;
  return std::nullopt;
}

void TaskScheduler::setUnschedulable(StageRun& stage, bool unschedulable) {
  if (stage.unschedulable == unschedulable) return;
  stage.unschedulable = unschedulable;
  if (unschedulable) {
    listeners_.onUnschedulableTaskSetAdded(stage.schedulerStageId);
  } else {
    listeners_.onUnschedulableTaskSetRemoved(stage.schedulerStageId);
  }
}

std::vector<ExcludedExecutor> TaskScheduler::excludedExecutors() const {
  return health_ ? health_->excludedExecutors() : std::vector<ExcludedExecutor>{};
}

bool TaskScheduler::isExecutorExcluded(const std::string& executorId) const {
  if (!health_) return false;
  auto node = executorNodes_.find(executorId);
  return health_->isExecutorExcluded(executorId) ||
         (node != executorNodes_.end() && health_->isNodeExcluded(node->second));
}

std::vector<ExecutorToKill> TaskScheduler::takeExcludedExecutorsToKill() {
  std::vector<ExecutorToKill> kills;
  kills.swap(excludedToKill_);
  return kills;
}

void TaskScheduler::queueKill(const std::string& executorId, const std::string& reason) {
  for (const ExecutorToKill& queued : excludedToKill_) {
    if (queued.executorId == executorId) return;
  }
  excludedToKill_.push_back({executorId, reason});
}

bool TaskScheduler::handleUnschedulable(JobRun& job, size_t stageIndex, int64_t stuck, TimeMs now) {
  StageRun& stage = job.stages[stageIndex];
  const ExcludeOnFailureConfig& exclude = config_.excludeOnFailure;
  const std::string which = stuck >= 0 ? "task " + describeTask(stage.spec->id, stuck)
                                       : "a task of stage " + stage.spec->id;
  const std::string cannotRun = which +
                                " cannot run anywhere: every executor is excluded for it after "
                                "task failures (excludeOnFailure)";
  if (stage.unschedulableSinceMs < 0) {
    // Spark's abort timer starts once per episode; until it runs out nothing else is tried.
    stage.unschedulableSinceMs = now;
    std::optional<std::string> idle;
    for (const auto& [executor, node] : executorNodes_) {
      auto running = runningByExecutor_.find(executor);
      if (running == runningByExecutor_.end() || running->second.empty()) {
        idle = executor;
        break;
      }
    }
    if (idle) {
      queueKill(*idle, "executor " + *idle + " killed while idle: " + cannotRun +
                           ", so a new executor may take its place (Spark's "
                           "killExcludedIdleExecutor)");
    } else if (exclude.dynamicAllocation) {
      setUnschedulable(stage, true);
    } else {
      failJob(job, stageIndex,
              "Job '" + job.job.name + "' failed: " + cannotRun +
                  ", no executor is idle to make room, and dynamic allocation is off");
      return true;
    }
  }
  const DurationMs waited = now - stage.unschedulableSinceMs;
  if (waited < exclude.unschedulableTaskSetTimeoutMs) return false;
  failJob(job, stageIndex,
          "Job '" + job.job.name + "' failed: " + cannotRun +
              ", and no executor it can run on came in " + formatDuration(waited) +
              " (excludeOnFailure.unschedulableTaskSetTimeout)");
  return true;
}

int TaskScheduler::checkSpeculatableTasks() {
  if (!config_.speculation) return 0;
  const TimeMs now = clock_.nowMs();
  if (lastSpeculationCheckMs_ >= 0 &&
      now - lastSpeculationCheckMs_ < config_.speculationIntervalMs) {
    return 0;
  }
  lastSpeculationCheckMs_ = now;
  int marked = 0;
  for (const auto& [key, ref] : activeTaskSets_) {
    StageRun& stage = ref.first->stages[ref.second];
    std::vector<RunningCopy> running;
    for (const auto& [index, copies] : stage.runningByIndex) {
      if (copies.size() != 1) continue;  // already has its second copy
      const RunningTask& only = runningTasks_.at(copies.front());
      if (only.queued) continue;  // not started: it cannot be slow yet
      running.push_back(RunningCopy{index, only.startMs});
    }
    SpeculationConfig speculation{config_.speculationQuantile, config_.speculationMultiplier,
                                  config_.speculationMinThresholdMs,
                                  config_.speculationTaskDurationThresholdMs,
                                  config_.slotsPerExecutor};
    for (int64_t index :
         speculatableTasks(stage.tasks->numTasks(), stage.tasks->successfulDurations(), running,
                           now, speculation)) {
      if (stage.tasks->isSucceeded(index) || !stage.speculatable.insert(index).second) continue;
      listeners_.onSpeculativeTaskSubmitted(stage.schedulerStageId);
      ++marked;
    }
  }
  return marked;
}

void TaskScheduler::executorLost(const std::string& executorId, const std::string& reason,
                                 bool exitCausedByApp) {
  tasksToKill_.erase(
      std::remove_if(tasksToKill_.begin(), tasksToKill_.end(),
                     [&](const TaskToKill& kill) { return kill.executorId == executorId; }),
      tasksToKill_.end());
  blocksToDrop_.erase(
      std::remove_if(blocksToDrop_.begin(), blocksToDrop_.end(),
                     [&](const BlocksToDrop& drop) { return drop.executorId == executorId; }),
      blocksToDrop_.end());
  dropExecutor(executorId, "executor " + executorId + " lost: " + reason, exitCausedByApp);
}

std::vector<BlocksToDrop> TaskScheduler::takeBlocksToDrop() {
  std::vector<BlocksToDrop> drops;
  drops.swap(blocksToDrop_);
  return drops;
}

std::vector<TaskToKill> TaskScheduler::takeTasksToKill() {
  std::vector<TaskToKill> kills;
  kills.swap(tasksToKill_);
  return kills;
}

void TaskScheduler::taskEnded(const RunningTask& task, TaskOutcome outcome) {
  const std::string& stageId = task.job->stages[task.stage].schedulerStageId;
  if (task.speculative) {
    listeners_.onSpeculativeTaskEnd(stageId, task.executorId, outcome);
  } else {
    listeners_.onTaskEnd(stageId, task.executorId, outcome);
  }
}

void TaskScheduler::recordFailedAttempt(const RunningTask& task, int64_t taskId,
                                        const std::string& reason, int exitCode,
                                        const std::string& stderrTail, bool countsTowardsFailures) {
  JobRun& job = *task.job;
  StageRun& stage = job.stages[task.stage];
  stage.tasks->countFailedAttempt();
  ++job.failedAttempts;
  if (config_.failedAttemptsKeptPerJob == 0) return;
  FailedAttempt failed;
  failed.taskId = taskId;
  failed.stageId = stage.spec->id;
  failed.index = task.attempt.index;
  failed.attempt = task.attempt.attempt;
  failed.executorId = task.executorId;
  failed.reason = reason;
  failed.exitCode = exitCode;
  failed.stderrTail = stderrTail;
  failed.timeMs = clock_.nowMs();
  failed.countsTowardsFailures = countsTowardsFailures;
  job.recentFailures.push_back(std::move(failed));
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
  summary.profile = *profiles_.find(stage.profileId);
  summary.submittedMs = stage.submittedMs;
  summary.completedMs = stage.completedMs;
  summary.persist = stage.spec->persist;
  summary.reruns = stage.reruns;
  summary.launchesByLocality = stage.launchesByLocality;
  summary.speculativeLaunches = stage.speculativeLaunches;
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
  static_cast<JobProgress&>(summary) = job;
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
