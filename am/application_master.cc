#include "am/application_master.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "am/control_auth.h"
#include "am/instrumented_rm_client.h"
#include "am/status_handlers.h"
#include "common/config.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"

namespace tide::am {

using rest::JsonWriter;

// Notes when jobs end: the outcome run() reports, and a status published at once.
class ApplicationMaster::JobEndListener : public SchedulerListener {
 public:
  explicit JobEndListener(ApplicationMaster& am) : am_(am) {}
  void onJobEnd(const std::string& jobId, bool succeeded, const std::string& message) override {
    // Posted by the scheduler, under mu_.
    am_.jobEndedSincePublish_ = true;
    if (succeeded) {
      am_.log_.info() << "job " << jobId << " succeeded";
    } else {
      am_.log_.error() << message;
      am_.failedJobMessages_.push_back(message);
    }
    am_.stateChanged_.notify_all();
  }

 private:
  ApplicationMaster& am_;
};

// Counts task ends by outcome for /metrics.
class ApplicationMaster::TaskMetricsListener : public SchedulerListener {
 public:
  explicit TaskMetricsListener(AmMetrics& metrics) : metrics_(metrics) {}
  void onTaskEnd(const std::string&, const std::string&, TaskOutcome outcome) override {
    (outcome == TaskOutcome::kSucceeded ? metrics_.tasksSucceeded
     : outcome == TaskOutcome::kFailed  ? metrics_.tasksFailed
                                        : metrics_.tasksKilled)
        .inc();
  }

 private:
  AmMetrics& metrics_;
};

// Writes stage submissions, with their resource profile, to the event log (as Spark's
// SparkListenerStageSubmitted carries its StageInfo's resourceProfileId).
class ApplicationMaster::EventLogListener : public SchedulerListener {
 public:
  explicit EventLogListener(ApplicationMaster& am) : am_(am) {}
  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus,
                        const allocation::ResourceProfile& profile) override {
    // Posted by the scheduler, under mu_.
    if (!am_.eventLog_) return;
    const bool isDefault = profile.id == allocation::kDefaultProfileId;
    am_.eventLog_->stageSubmitted(
        {stageId, numTasks, taskCpus, profile.id,
         isDefault ? am_.config_.allocation.executorCores : profile.executorCores,
         isDefault ? am_.config_.containers.executorResource.memoryMb : profile.executorMemoryMb,
         am_.clock_.nowMs() - am_.startedAt_});
  }

 private:
  ApplicationMaster& am_;
};

ApplicationMaster::ApplicationMaster(AmConfig config, AmIdentity identity,
                                     std::unique_ptr<ResourceManagerClient> rm)
    : config_(std::move(config)),
      identity_(std::move(identity)),
      rm_(std::make_unique<InstrumentedResourceManagerClient>(std::move(rm), metrics_)),
      startedAt_(clock_.nowMs()),
      info_{identity_.applicationId,
            identity_.attemptId,
            startedAt_,
            config_.allocation.enabled,
            config_.allocation.executorCores,
            config_.session,
            config_.uiMaxRequestsPerSecond},
      allocationPolicy_(allocation::makeAllocationPolicy(config_.allocation, clock_)),
      allocation_(*allocationPolicy_),
      allocationListener_(allocation_),
      jobEndListener_(std::make_unique<JobEndListener>(*this)),
      metricsListener_(std::make_unique<TaskMetricsListener>(metrics_)),
      eventLogListener_(std::make_unique<EventLogListener>(*this)),
      scheduler_(std::make_unique<TaskScheduler>(config_.scheduler, clock_,
                                                 static_cast<uint64_t>(startedAt_))),
      allocator_(config_.containers, clock_),
      decommissioner_(config_.decommission, clock_) {
  info_.executorMemoryMb = config_.containers.executorResource.memoryMb;
  // The scheduler's one listener list: the policy first (as Spark's ExecutorAllocationListener),
  // then the metrics, then the job bookkeeping.
  scheduler_->subscribe(allocationListener_);
  scheduler_->subscribe(*metricsListener_);
  scheduler_->subscribe(*jobEndListener_);
  scheduler_->subscribe(*eventLogListener_);
  allocator_.setTarget(allocation_.initialTarget());
}

ApplicationMaster::~ApplicationMaster() {
  withState([&] {
    stopping_ = true;
    wakeExecutors();
  });
  heartbeatWake_.notify_all();
  launchWake_.notify_all();
  stateChanged_.notify_all();
  if (server_) server_->stop();
  if (executorServer_) executorServer_->stop();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

std::string ApplicationMaster::trackingUrl() const {
  return config_.tls.urlOf(config_.host + ":" + std::to_string(port_)) + "/";
}

rest::HttpServerOptions ApplicationMaster::executorServerOptions() const {
  rest::HttpServerOptions options;
  options.bindAddress = config_.host;
  options.port = 0;  // executors are told where it is
  // Every executor keeps a connection open, many of them from one host; between syncs and while
  // its sync is held (a long poll) it holds no worker, so a few workers serve thousands of
  // executors, and more would only contend for the AM's lock.
  const int executors = config_.allocation.enabled ? config_.allocation.bounds.maxExecutors
                                                   : config_.allocation.executorInstances;
  // maxExecutors defaults to INT_MAX (Spark's "infinity"): add in 64 bits, then bound it.
  options.maxConnections =
      static_cast<size_t>(std::clamp<int64_t>(int64_t{executors} * 2 + 64, 1024, 100000));
  options.maxConnectionsPerAddress = options.maxConnections;
  // Kept warm (no thread churn as syncs come in bursts), and no more: every sync takes the AM's
  // lock, so more workers only queue on it and crowd out the allocation loop's ticks (64 workers
  // let 2,000 busy executors starve it to 3 ticks a second on 2 cores).
  options.threadCount = 16;
  options.maxThreads = 16;
  options.maxRequestBodyBytes = 64 << 20;  // a sync from a busy executor carries many updates
  // Executors prove they belong to this application; this port serves only them (the
  // status pages are on ui.port).
  options.auth = rest::bearerTokenAuth(identity_.appSecret);
  options.log = [this](const std::string& line) { log_.info() << line; };
  config_.tls.applyTo(options);
  return options;
}

rest::HttpServerOptions ApplicationMaster::statusServerOptions() const {
  rest::HttpServerOptions status;
  status.bindAddress = config_.host;
  status.port = config_.uiPort;
  status.portRetries = config_.portMaxRetries;
  status.threadCount = 4;  // readers take turns; see status_handlers.cc
  status.log = [this](const std::string& line) { log_.info() << line; };
  // Writes (and with ui.auth=all, reads) need the application's control token.
  status.auth =
      controlAuth(rest::controlTokenOf(identity_.appSecret), config_.uiAuth, config_.tls.scheme());
  config_.tls.applyTo(status);
  status.authExemptPaths = controlAuthExemptPaths();
  return status;
}

int ApplicationMaster::start() {
  openJournal();  // an unreadable journal stops this attempt here, with the reason
  openEventLog();
  executorServer_ = std::make_unique<rest::HttpServer>(executorServerOptions());
  server_ = std::make_unique<rest::HttpServer>(statusServerOptions());
  handlers_ = std::make_unique<StatusHandlers>(*this);
  handlers_->registerExecutorRoutes(*executorServer_);
  handlers_->registerStatusRoutes(*server_);
  executorPort_ = executorServer_->start();
  port_ = server_->start();
  log_.info() << "status at " << trackingUrl() << "; executors connect to port " << executorPort_;

  rm_->setExecutorTemplate(executorTemplate());
  const auto registration = rm_->registerAm({config_.host, port_, trackingUrl()});
  withState([&] { maximumCapability_ = registration.maximumResourceCapability; });
  if (auto tooLarge = executorAboveMaximum(config_.containers.executorResource,
                                           registration.maximumResourceCapability)) {
    log_.error() << *tooLarge;
    requestStop("FAILED", *tooLarge);  // it could wait forever for an executor
  }
  log_.info() << "registered with the resource manager as " << identity_.attemptId
              << "; initial target " << allocation_.initialTarget();
  withState([&] { recover(registration.containersFromPreviousAttempts); });
  writeAmAddressFile();  // the previous attempt's executors find this one through it
  withState([&] {
    recordDecision("allocation", "initial_target", allocation_.initialTarget(),
                   "initial target " + std::to_string(allocation_.initialTarget()) + " (policy " +
                       allocation_.name() + ")",
                   "initial");
    publishStatusSnapshot(clock_.nowMs());
  });
  threads_.emplace_back([this] { allocationLoop(); });
  threads_.emplace_back([this] { heartbeatLoop(); });
  if (eventLog_) threads_.emplace_back([this] { eventLogLoop(); });
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { launchLoop(); });
  return port_;
}

std::string ApplicationMaster::submitJob(Job job) {
  return withState([&] {
    const std::string name = job.name;
    const std::string json = journal_ ? jobToJson(job) : "";
    checkStageShapes(job);
    std::string jobId = scheduler_->submitJob(std::move(job));
    journal(JournalRecord::jobAccepted(jobId, json), /*sync=*/true);
    ++jobsSubmitted_;
    log_.info() << "submitted job " << jobId << " (" << name << ")";
    wakeExecutors();
    return jobId;
  });
}

void ApplicationMaster::checkStageShapes(const Job& job) const {
  for (size_t i = 0; i < job.stages.size(); ++i) {
    const StageSpec& stage = job.stages[i];
    if (!stage.executor) continue;
    const std::string path = "stages[" + std::to_string(i) + "].executor";
    // As Spark on YARN: ResourceProfiles need dynamic allocation, whose policy keeps a target
    // per profile.
    if (!config_.allocation.enabled) {
      throw JobError(path + ": stage " + ("'" + stage.id + "'") +
                     " asks for its own executor shape, which needs "
                     "dynamicAllocation.enabled=true (executors are sized per resource profile)");
    }
    if (config_.allocation.policy != allocation::PolicyKind::kSpark) {
      throw JobError(path + ": stage " + ("'" + stage.id + "'") +
                     " asks for its own executor shape, which needs "
                     "dynamicAllocation.policy=spark (the adaptive policy keeps one target)");
    }
    // Fail fast, as for the default shape at registration: a container no node can hold would
    // be waited for forever.
    const rest::Resource resource{
        stage.executor->memoryMb.value_or(config_.containers.executorResource.memoryMb),
        stage.executor->cores.value_or(config_.allocation.executorCores)};
    if (auto tooLarge =
            executorAboveMaximum(resource, maximumCapability_, path + ".memory", path + ".cores")) {
      throw JobError(*tooLarge + " for stage " + ("'" + stage.id + "'"));
    }
  }
}

void ApplicationMaster::applyTargets(const std::map<int, int>& targets) {
  for (const auto& [profileId, target] : targets) {
    if (profileId == allocation::kDefaultProfileId) continue;
    if (const allocation::ResourceProfile* profile = scheduler_->profiles().find(profileId)) {
      allocator_.addProfile(profileId, {profile->executorMemoryMb, profile->executorCores});
    }
  }
  allocator_.setTargets(targets);
}

int ApplicationMaster::slotsOf(int profileId) const {
  const allocation::ResourceProfile* profile = scheduler_->profiles().find(profileId);
  const int cores = profile != nullptr ? profile->executorCores : config_.allocation.executorCores;
  return std::max(1, cores / std::max(1, config_.allocation.taskCpus));
}

void ApplicationMaster::requestStop(const std::string& finalStatus,
                                    const std::string& diagnostics) {
  withState([&] {
    if (!stopOutcome_) stopOutcome_ = AmOutcome{finalStatus, diagnostics};
    stateChanged_.notify_all();
  });
}

AmOutcome ApplicationMaster::run() {
  const AmOutcome outcome = waitForTheEnd();
  stopLoops();
  releaseExecutors();
  if (!config_.reportFile.empty()) writeReport();
  // Before the RM hears of the end: whoever sees the application ended finds its history.
  closeEventLog(outcome);
  bool unregistered = false;
  try {
    rm_->unregister(outcome.finalStatus, outcome.diagnostics);
    unregistered = true;
  } catch (const std::exception& e) {
    log_.warn() << "could not unregister from the resource manager: " << e.what();
  }
  // The application has ended for good (or was killed): no attempt will need the journal. One
  // whose end the RM did not hear of keeps it: a next attempt finds its jobs done and ends.
  if (unregistered || outcome.finalStatus == "KILLED") {
    withState([&] {
      if (journal_) journal_->remove();
      journal_.reset();
    });
    cleanUpFallbackStorage();
  }
  log_.info() << "finished: " << outcome.finalStatus
              << (outcome.diagnostics.empty() ? "" : ": " + outcome.diagnostics);
  return outcome;
}

AmOutcome ApplicationMaster::waitForTheEnd() {
  return withState([&](StateLock& lock) {
    const auto jobDone = [&] {
      return !config_.session && jobsSubmitted_ > 0 && scheduler_->allJobsDone();
    };
    stateChanged_.wait(lock, [&] { return stopOutcome_.has_value() || jobDone(); });
    if (!stopOutcome_ && config_.keepAlive > 0) {
      // am.keepAlive: the allocation goes on without work, so idle executors time out and
      // go as they would between jobs; then the AM ends with the job's status.
      log_.info() << "the job has ended; staying up " << config_.keepAlive
                  << " ms (am.keepAlive) while idle executors go";
      const auto stopped = [&] { return stopOutcome_.has_value(); };
      if (config_.keepAlive >= kInfiniteMs) {
        stateChanged_.wait(lock, stopped);  // until killed
      } else {
        stateChanged_.wait_for(lock, std::chrono::milliseconds(config_.keepAlive), stopped);
      }
    }
    // Executors are told to finish; their containers go back with the last heartbeat.
    stopping_ = true;
    if (stopOutcome_) return *stopOutcome_;
    if (failedJobMessages_.empty()) return AmOutcome{"SUCCEEDED", ""};
    return AmOutcome{"FAILED", failedJobMessages_.front()};
  });
}

void ApplicationMaster::stopLoops() {
  withState([&] { wakeExecutors(); });
  launchWake_.notify_all();
  heartbeatWake_.notify_all();
  stateChanged_.notify_all();  // the allocation and event log loops wait on it
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void ApplicationMaster::releaseExecutors() {
  const ContainerAsk last = withState([&] {
    const TimeMs now = clock_.nowMs();
    for (auto& [id, executor] : executors_) {
      executorMsClosed_ += now - executor.registeredAt;
      if (eventLog_) eventLog_->executorRemoved(id, now - startedAt_, "the application ended");
    }
    executors_.clear();
    allocator_.releaseAll();
    publishStatusSnapshot(now);  // the end as the event log keeps it
    return allocator_.nextAsk();
  });
  try {
    rm_->heartbeat(last);
  } catch (const std::exception& e) {
    log_.warn() << "could not release the containers: " << e.what();
  }
}

void ApplicationMaster::closeEventLog(const AmOutcome& outcome) {
  if (!eventLog_) return;
  writeEventLog(/*last=*/true);
  const int64_t epochMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  if (!eventLog_->end(clock_.nowMs() - startedAt_, epochMs, outcome.finalStatus,
                      outcome.diagnostics)) {
    log_.warn() << eventLog_->error();
  }
}

// ------------------------------------------------------------------------------------------
// The allocation loop

void ApplicationMaster::allocationLoop() {
  withState([&](StateLock& lock) {
    while (!stopping_) {
      const TimeMs now = clock_.nowMs();
      const auto tickStart = std::chrono::steady_clock::now();
      const allocation::TickResult result = allocation_.tick();
      applyTick(result, now);
      detectSilentExecutors(now);
      releaseExcludedExecutors(now);
      // The scheduler looks for slow tasks at most every speculation.interval.
      // Held syncs are woken when there are copies of slow tasks to run, and while tasks wait
      // (for their locality wait, say): a held executor may take them now.
      if (scheduler_->checkSpeculatableTasks() > 0 || scheduler_->hasPendingTasks()) {
        wakeExecutors();
      }
      observeTick(
          now, std::chrono::duration<double>(std::chrono::steady_clock::now() - tickStart).count());
      const TimeMs next = now + config_.allocation.interval;
      stateChanged_.wait_for(lock,
                             std::chrono::milliseconds(std::max<TimeMs>(1, next - clock_.nowMs())),
                             [&] { return stopping_; });
    }
  });
}

void ApplicationMaster::applyTick(const allocation::TickResult& result, TimeMs now) {
  std::map<std::string, std::string> removalWhy;  // executor -> the policy's sentence
  int targetBefore = allocator_.target();
  for (const auto& decision : result.decisions) {
    const std::string action = allocation::actionName(decision.action);
    if (decision.action == allocation::Decision::Action::kRemove ||
        decision.action == allocation::Decision::Action::kDecommission) {
      removalWhy[decision.executor] = decision.why;
    }
    // States that hold tick after tick (not adding, keeping) are one record with repeats;
    // every other decision is an event of its own (an empty key is never merged).
    const bool repeating = decision.action == allocation::Decision::Action::kNotAdding ||
                           decision.action == allocation::Decision::Action::kKeep;
    // The target each event started from: a run of them shows "137 → 27".
    const std::string profile = decision.profileId == allocation::kDefaultProfileId
                                    ? ""
                                    : "/profile-" + std::to_string(decision.profileId);
    recordDecision("allocation", action, decision.target, decision.why,
                   repeating ? action + "/" + decision.executor + profile : "", targetBefore);
    targetBefore = decision.target;
    metrics_.decisionCounter(action).inc();
    if (decision.action != allocation::Decision::Action::kNotAdding &&
        decision.action != allocation::Decision::Action::kKeep) {
      log_.info() << decision.why;
    }
  }
  if (result.targetChanged()) {
    applyTargets(result.targets);
    heartbeatRequested_ = true;
    heartbeatWake_.notify_all();
  }
  for (const auto& id : result.toRemove) {
    auto why = removalWhy.find(id);
    releaseExecutor(id, "idle_timeout", why != removalWhy.end() ? why->second : "idle", now);
  }
  for (const auto& id : result.toDecommission) startDecommission(id, now);
  releaseDecommissioned(now);
}

void ApplicationMaster::releaseExecutor(const std::string& executorId, const std::string& reason,
                                        const std::string& detail, TimeMs now,
                                        allocation::ExecutorExit exit) {
  allocator_.release(executorId);
  releasedExecutors_.insert(executorId);
  forgetExecutor(executorId, reason, detail, now);
  scheduler_->executorRemoved(executorId);  // its blocks go with it
  // The executor is gone for the policy and the scheduler from now on; it gets no more tasks
  // and is told to shut down at its next sync.
  allocation_.onExecutorRemoved(executorId, exit);
  log_.info() << "releasing executor " << executorId << " (" << reason << ")";
  heartbeatRequested_ = true;
  heartbeatWake_.notify_all();
  wakeExecutors();
}

void ApplicationMaster::forgetExecutor(const std::string& executorId, const std::string& reason,
                                       const std::string& detail, TimeMs now) {
  auto it = executors_.find(executorId);
  if (it == executors_.end()) return;
  executorMsClosed_ += now - it->second.registeredAt;
  if (eventLog_) eventLog_->executorRemoved(executorId, now - startedAt_, detail);
  removedExecutors_.add({executorId, it->second.host, it->second.containerId,
                         it->second.registeredAt, now, reason, detail});
  executors_.erase(it);
  // A leaving executor's decommissioning ends with it; a peer's migrations go elsewhere.
  decommissioner_.onExecutorGone(executorId, migrationPeers());
}

void ApplicationMaster::detectSilentExecutors(TimeMs now) {
  std::vector<std::string> silent;
  for (const auto& [id, executor] : executors_) {
    if (now - executor.lastSeen > config_.networkTimeout) {
      silent.push_back(id);
    }
  }
  for (const auto& id : silent) {
    const std::string reason = "executor " + id + " lost: no heartbeat for " +
                               formatDuration(now - executors_[id].lastSeen);
    log_.warn() << reason;
    recordDecision("containers", "lost", allocator_.target(), reason, "lost/" + id);
    metrics_.executorFailures.labels({"heartbeat_timeout"}).inc();
    scheduler_->executorLost(id, reason);
    releaseExecutor(id, "heartbeat_timeout", reason, now);
  }
}

void ApplicationMaster::releaseExcludedExecutors(TimeMs now) {
  for (const ExecutorToKill& kill : scheduler_->takeExcludedExecutorsToKill()) {
    const std::string& id = kill.executorId;
    if (executors_.count(id) == 0) continue;  // gone already
    const std::string& reason = kill.reason;
    log_.warn() << reason;
    recordDecision("containers", "excluded", allocator_.target(), reason, "");
    scheduler_->executorLost(id, reason);
    releaseExecutor(id, "excluded", reason, now);
  }
}

void ApplicationMaster::recordDecision(const std::string& source, const std::string& action,
                                       int target, const std::string& why, const std::string& key,
                                       int fromTarget) {
  decisions_.add(clock_.nowMs() - startedAt_, source, action, target, why, key, fromTarget);
}

// ------------------------------------------------------------------------------------------
// The resource manager heartbeat

void ApplicationMaster::heartbeatLoop() {
  HeartbeatPacer pacer(config_.heartbeatInterval, config_.initialAllocationInterval);
  int consecutiveFailures = 0;
  while (true) {
    ContainerAsk ask;
    {
      const StateLock lock = lockState();
      if (stopping_) return;
      std::optional<AskChange> change;
      allocator_.setLocalityHints(scheduler_->containerPlacementHints());
      ask = allocator_.nextAsk(&change);
      if (change) {
        log_.info() << change->why;
        // Events: while a backlog drains, one every heartbeat, coalesced into a run.
        recordDecision("containers", change->cancelled ? "cancel_requests" : "request",
                       allocator_.target(), change->why, "");
      }
      const auto summaries = scheduler_->jobSummaries();
      int64_t total = 0, done = 0;
      for (const auto& job : summaries) {
        total += job.numTasks;
        done += job.succeeded;
      }
      ask.progress = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
    }
    HeartbeatResult result;
    bool ok = true;
    std::optional<std::string> rejected;
    try {
      result = rm_->heartbeat(ask);
      consecutiveFailures = 0;
    } catch (const ResourceManagerRejected& e) {
      // Asking again cannot help (e.g. Slurm has no such partition): the application fails.
      ok = false;
      rejected = e.what();
      log_.error() << "the resource manager rejected the application: " << e.what();
    } catch (const std::exception& e) {
      ok = false;
      ++consecutiveFailures;
      log_.warn() << "heartbeat to the resource manager failed (" << consecutiveFailures
                  << " in a row): " << e.what();
    }
    StateLock lock = lockState();
    if (ok) {
      clusterCapacity_ = result.capacity;
      AllocatorActions actions = allocator_.onHeartbeat(result);
      applyAllocatorActions(actions, clock_.nowMs());
      startingExecutors_ =
          std::set<std::string>(result.startingExecutors.begin(), result.startingExecutors.end());
    } else {
      allocator_.onHeartbeatFailed(ask);  // its releases go out again with the next one
    }
    if (rejected && !stopOutcome_) {
      stopOutcome_ = AmOutcome{"FAILED", *rejected};
      stateChanged_.notify_all();
    }
    if (consecutiveFailures * config_.heartbeatInterval > config_.networkTimeout && !stopOutcome_) {
      stopOutcome_ = AmOutcome{"FAILED", "lost contact with the resource manager"};
      stateChanged_.notify_all();
    }
    const DurationMs delay = pacer.nextDelay(allocator_.snapshot().outstanding);
    heartbeatWake_.wait_for(lock, std::chrono::milliseconds(delay),
                            [&] { return stopping_ || heartbeatRequested_; });
    if (heartbeatRequested_) pacer.reset();
    heartbeatRequested_ = false;
  }
}

void ApplicationMaster::applyAllocatorActions(AllocatorActions& actions, TimeMs now) {
  for (const auto& why : actions.decisions) {
    log_.info() << why;
    recordDecision("containers", "containers", allocator_.target(), why, why);
  }
  for (const auto& lost : actions.lost) {
    metrics_.executorFailures.labels({lost.exit.cause}).inc();
    if (lost.wasRegistered) {
      scheduler_->executorLost(lost.executorId, lost.reason, lost.exit.executorFailure);
    }
    allocation_.onExecutorRemoved(lost.executorId);
    forgetExecutor(lost.executorId, lost.exit.cause, lost.reason, now);
  }
  for (auto& launch : actions.launches) launchQueue_.push_back(std::move(launch));
  if (!actions.launches.empty()) launchWake_.notify_all();
  if (actions.failApplication && !stopOutcome_) {
    stopOutcome_ = AmOutcome{"FAILED", *actions.failApplication};
    stateChanged_.notify_all();
  }
  if (!actions.lost.empty()) {
    // Lost executors are replaced while the target stands: ask at once, not a beat later.
    heartbeatRequested_ = true;
    heartbeatWake_.notify_all();
    wakeExecutors();
  }
}

ExecutorTemplate ApplicationMaster::executorTemplate(int cores) const {
  ExecutorTemplate common;
  std::string command = "exec '" + identity_.executorBinary + "'";
  for (const auto& [key, value] : config_.executorConf) {
    // An executor of another resource profile has that profile's cores.
    const std::string given = key == "executor.cores" && cores > 0 ? std::to_string(cores) : value;
    command += " --conf '" + key + "=" + given + "'";
  }
  common.command = command;
  common.environment = {{"TIDE_AM_ADDRESS", executorEndpoint()},
                        {"TIDE_APP_SECRET", identity_.appSecret},
                        {"TIDE_APPLICATION_ID", identity_.applicationId}};
  // Where to look for the AM's address when it stops answering (a new attempt took over).
  if (!stagingDir_.empty())
    common.environment.emplace_back("TIDE_AM_ADDRESS_FILE", amAddressFile());
  return common;
}

ExecutorLaunch ApplicationMaster::executorLaunchFor(const std::string& executorId,
                                                    const std::string& containerId) {
  const allocation::ResourceProfile* profile =
      scheduler_->profiles().find(allocator_.profileOf(executorId));
  ExecutorTemplate common = executorTemplate(profile != nullptr ? profile->executorCores : 0);
  ExecutorLaunch launch;
  launch.executorId = executorId;
  launch.command = std::move(common.command);
  launch.environment = std::move(common.environment);
  launch.environment.emplace_back("TIDE_EXECUTOR_ID", executorId);
  launch.environment.emplace_back("TIDE_CONTAINER_ID", containerId);
  return launch;
}

Status ApplicationMaster::executorLog(const std::string& executorId, const std::string& path,
                                      std::optional<int64_t> tailBytes, std::string* content) {
  rest::Container container;
  {
    std::lock_guard<std::mutex> lock(executorContainersMutex_);
    const auto it = executorContainers_.find(executorId);
    if (it == executorContainers_.end()) {
      return Status::notFound("no executor " + executorId + " of this application");
    }
    container = it->second;
  }
  return rm_->readContainerLog(container, info_.applicationId, path, tailBytes, content);
}

void ApplicationMaster::launchLoop() {
  while (true) {
    std::pair<rest::Container, std::string> next;
    ExecutorLaunch launch;
    const bool stopping = withState([&](StateLock& lock) {
      launchWake_.wait(lock, [&] { return stopping_ || !launchQueue_.empty(); });
      if (stopping_) return true;
      next = std::move(launchQueue_.front());
      launchQueue_.pop_front();
      launch = executorLaunchFor(next.second, next.first.id);
      // Where it runs, for locality: node managers on one machine are still two places.
      launch.environment.emplace_back("TIDE_NODE_ID", next.first.nodeId);
      // The node's configured host: the executor's block server binds it, not every address.
      launch.environment.emplace_back(
          "TIDE_NODE_HOST",
          next.first.nodeHttpAddress.substr(0, next.first.nodeHttpAddress.rfind(':')));
      {
        JournalRecord started = JournalRecord::executorStarted(next.second, next.first.id);
        const int profileId = allocator_.profileOf(next.second);
        if (const allocation::ResourceProfile* profile = scheduler_->profiles().find(profileId);
            profile != nullptr && profileId != allocation::kDefaultProfileId) {
          started.withProfile(profileId, profile->executorCores, profile->executorMemoryMb);
        }
        journal(started);
      }
      {
        std::lock_guard<std::mutex> containersLock(executorContainersMutex_);
        executorContainers_[next.second] = next.first;
      }
      return false;
    });
    if (stopping) return;
    try {
      rm_->launchExecutor(next.first, launch);
      log_.info() << "started executor " << next.second << " in " << next.first.id << " on "
                  << next.first.nodeId;
    } catch (const std::exception& e) {
      withState([&] {
        AllocatorActions actions = allocator_.onLaunchFailed(next.second, e.what());
        applyAllocatorActions(actions, clock_.nowMs());
      });
    }
  }
}

// ------------------------------------------------------------------------------------------
// Executors

Status ApplicationMaster::registerExecutor(const rest::ExecutorRegistration& registration,
                                           const std::string& remoteAddress,
                                           rest::ExecutorRegistered* reply) {
  return withState([&] {
    if (auto adopted = executors_.find(registration.executorId);
        !stopping_ && adopted != executors_.end() && adopted->second.adopted) {
      // An executor of the previous attempt, found this one: it goes on where it was.
      readoptExecutor(adopted->second, registration, remoteAddress);
      answerRegistration(adopted->second, reply);
      wakeExecutors();
      return Status();
    }
    if (!stopping_ && startingExecutors_.count(registration.executorId) != 0 &&
        !allocator_.containerOf(registration.executorId)) {
      // Started by the backend (a Slurm job) and already up, but the heartbeat that grants its
      // container has not come yet: ask for it now; the executor retries a 503.
      heartbeatRequested_ = true;
      heartbeatWake_.notify_all();
      return Status::unavailable("executor " + registration.executorId +
                                 " is starting: its container is not granted yet; retry");
    }
    if (stopping_ || !allocator_.onExecutorRegistered(registration.executorId)) {
      return Status::notFound("executor " + registration.executorId +
                              " is not one this application master started");
    }
    answerRegistration(addExecutor(registration, remoteAddress), reply);
    return Status();
  });
}

void ApplicationMaster::readoptExecutor(Executor& executor,
                                        const rest::ExecutorRegistration& registration,
                                        const std::string& remoteAddress) {
  allocator_.onExecutorRegistered(executor.id);
  executor.host = registration.host.empty() ? executor.host : registration.host;
  executor.pid = registration.pid;
  executor.lastSeen = clock_.nowMs();
  if (registration.port > 0) executor.blockUrl = blockUrlOf(registration, remoteAddress);
  resumeExecutor(executor, registration);
  journal(JournalRecord::executorStarted(executor.id, executor.containerId, executor.node,
                                         executor.blockUrl));
}

ApplicationMaster::Executor& ApplicationMaster::addExecutor(
    const rest::ExecutorRegistration& registration, const std::string& remoteAddress) {
  const TimeMs now = clock_.nowMs();
  Executor& executor = executors_[registration.executorId];
  executor.id = registration.executorId;
  executor.host = registration.host;
  executor.containerId = registration.containerId;
  executor.pid = registration.pid;
  executor.profileId = allocator_.profileOf(executor.id);
  executor.slots = slotsOf(executor.profileId);
  executor.registeredAt = now;
  executor.lastSeen = now;
  executor.node = registration.node.empty() ? registration.host : registration.node;
  executor.blockUrl = blockUrlOf(registration, remoteAddress);
  allocation_.onExecutorAdded(executor.id, executor.profileId);
  if (eventLog_) {
    const allocation::ResourceProfile* profile = scheduler_->profiles().find(executor.profileId);
    const bool isDefault = executor.profileId == allocation::kDefaultProfileId;
    eventLog_->executorAdded({executor.id, executor.host, executor.containerId, executor.node,
                              executor.pid, now - startedAt_, -1, "", executor.profileId,
                              isDefault || profile == nullptr ? config_.allocation.executorCores
                                                              : profile->executorCores,
                              isDefault || profile == nullptr
                                  ? config_.containers.executorResource.memoryMb
                                  : profile->executorMemoryMb});
  }
  journal(JournalRecord::executorStarted(executor.id, executor.containerId, executor.node,
                                         executor.blockUrl));
  peakExecutors_ = std::max(peakExecutors_, static_cast<int>(executors_.size()));
  log_.info() << "executor " << executor.id << " registered from " << executor.host << " ("
              << executor.containerId << ")";
  return executor;
}

void ApplicationMaster::answerRegistration(const Executor& executor,
                                           rest::ExecutorRegistered* reply) const {
  reply->heartbeatIntervalMs = config_.executorSyncWait;
  reply->taskSlots = executor.slots;
  reply->queuedTaskWaitMs = config_.scheduler.queuedTaskWaitMs;
}

std::string ApplicationMaster::blockUrlOf(const rest::ExecutorRegistration& registration,
                                          const std::string& remoteAddress) const {
  if (registration.port <= 0) return "";
  std::string host = registration.host.empty() ? remoteAddress : registration.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return config_.tls.urlOf(host + ":" + std::to_string(registration.port));
}

void ApplicationMaster::routeKills() {
  for (const auto& kill : scheduler_->takeTasksToKill()) {
    auto it = executors_.find(kill.executorId);
    if (it != executors_.end()) it->second.kills.push_back(kill.taskId);
  }
  for (const auto& drop : scheduler_->takeBlocksToDrop()) {
    auto it = executors_.find(drop.executorId);
    if (it != executors_.end()) it->second.blockDrops.push_back(drop.prefix);
  }
}

rest::CommitDecision ApplicationMaster::decideCommit(const std::string& executorId,
                                                     const rest::CommitRequest& request) {
  rest::CommitDecision decision;
  withState([&] {
    if (executors_.count(executorId) == 0) {
      decision.reason = "executor " + executorId + " is not registered (lost or released)";
    } else {
      decision.reason = scheduler_->canCommit(request.taskId, executorId);
    }
  });
  decision.allowed = decision.reason.empty();
  if (!decision.allowed) {
    log_.info() << "task " << request.taskId << " on " << executorId
                << " may not commit its output: " << decision.reason;
  }
  return decision;
}

Status ApplicationMaster::syncExecutor(const std::string& executorId,
                                       const rest::ExecutorSync& sync,
                                       rest::ExecutorSyncReply* reply) {
  int64_t holdMs = 0;
  Status status = beginSync(executorId, sync, reply, &holdMs);
  if (!status.ok() || holdMs == 0) return status;
  // Held here, on the caller's thread (the HTTP port holds it without one: resumeSync).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(holdMs);
  while (true) {
    const bool timedOut = std::chrono::steady_clock::now() >= deadline;
    const uint64_t seen = withState([&] { return wakeGeneration_; });
    bool answered = false;
    status = resumeSync(executorId, HeldSync::of(sync), timedOut, reply, &answered);
    if (!status.ok() || answered) return status;
    withState([&](StateLock& lock) {
      workAvailable_.wait_until(lock, deadline, [&] { return wakeGeneration_ != seen; });
    });
  }
}

Status ApplicationMaster::beginSync(const std::string& executorId, const rest::ExecutorSync& sync,
                                    rest::ExecutorSyncReply* reply, int64_t* holdMs) {
  // The commits this reply acknowledges, and those the launches it hands out may read, must be
  // fsync'd before the executor hears of it (launch records are written, not fsync'd). The fsync is
  // taken after the AM's mutex is released, and shared by the replies waiting at the same time
  // (group commit): many executors' commits cost one fdatasync, and nobody waits for it holding
  // the mutex.
  *holdMs = 0;
  std::shared_ptr<RecoveryJournal> durable;
  uint64_t position = 0;
  const Status status = withState([&] {
    if (executors_.count(executorId) == 0) {
      if (releasedExecutors_.count(executorId) == 0) {
        return Status::notFound("executor " + executorId + " is not registered");
      }
      reply->shutdown = true;
      return Status();
    }
    const bool reportedAny = !sync.updates.empty() || !sync.returned.empty();
    const int64_t pendingBefore = reportedAny ? scheduler_->pendingTaskCount() : 0;
    const bool jobEndedBefore = jobEndedSincePublish_;
    if (!sync.migrated.empty()) migrationsReported(executorId, sync.migrated, clock_.nowMs());
    if (sync.decommissioning) decommissionAsked(executorId, clock_.nowMs());
    queuedTasksReported(executorId, sync.running, sync.returned);
    const bool committedAny = taskUpdatesReported(executorId, sync.updates);
    // Executors waiting for work hear of these updates only when they made some: tasks that
    // became runnable (a stage finished and released the next, a failed task to run again) or
    // a job that ended (its blocks to drop). A task that merely ended wakes nobody: with
    // thousands of executors, waking every held sync at every task end made each sync cost
    // O(executors).
    const bool jobEnded = !jobEndedBefore && jobEndedSincePublish_;
    if (jobEndedSincePublish_) publishStatusSnapshot(clock_.nowMs());
    if (reportedAny && (jobEnded || scheduler_->pendingTaskCount() > pendingBefore)) {
      wakeExecutors();
    }

    // With nothing to report and nothing to do, the executor may be held, up to its maxWaitMs.
    // One that just gave queued tasks back is not handed queued ones again.
    if (!takeWork(executorId, sync.freeSlots, sync.returned.empty(), *reply) &&
        sync.updates.empty()) {
      *holdMs = std::max<int64_t>(0, std::min(sync.maxWaitMs, config_.executorSyncWait));
    }
    if (journal_ && (committedAny || !reply->launches.empty())) {
      durable = journal_;
      position = journaledCommits_;  // launch records themselves need no fsync
    }
    return Status();
  });
  if (!durable || !status.ok()) return status;
  return makeDurable(*durable, position);
}

void ApplicationMaster::queuedTasksReported(const std::string& executorId,
                                            const std::vector<int64_t>& started,
                                            const std::vector<int64_t>& returned) {
  // Queued tasks it has started since (pipelining): running for the listeners from now on.
  if (scheduler_->queuedTaskCount() > 0) {
    for (int64_t taskId : started) scheduler_->taskStarted(taskId, executorId);
  }
  // Queued tasks it gives back (not started) are pending again: that may wake held syncs.
  size_t handedBack = 0;
  for (int64_t taskId : returned) {
    if (scheduler_->queuedTaskReturned(taskId, executorId)) ++handedBack;
  }
  if (handedBack == 0) return;
  auto self = executors_.find(executorId);
  if (self != executors_.end() && self->second.decommissioning) {
    queuedTasksHandedBack(executorId, handedBack);
  }
}

bool ApplicationMaster::taskUpdatesReported(const std::string& executorId,
                                            const std::vector<rest::TaskStatusUpdate>& updates) {
  bool committedAny = false;
  for (const auto& update : updates) {
    std::optional<CommittedTask> committed;
    if (scheduler_->statusUpdate(update, executorId, journal_ ? &committed : nullptr)) {
      metrics_.taskDurationAll().observe(static_cast<double>(update.durationMs) / 1000.0);
    }
    if (!committed) continue;
    // Before anything depends on it (the reply, the next stage's launches).
    journal(JournalRecord::taskCommitted(update.taskId, committed->jobId, committed->stageId,
                                         committed->index, committed->attempt, executorId,
                                         committed->node, update.durationMs, update.blocks));
    if (committed->stageCompleted) {
      journal(JournalRecord::stageDone(committed->jobId, committed->stageId));
    }
    if (journal_) journaledCommits_ = journal_->position();
    committedAny = true;
  }
  return committedAny;
}

Status ApplicationMaster::resumeSync(const std::string& executorId, const HeldSync& held,
                                     bool timedOut, rest::ExecutorSyncReply* reply,
                                     bool* answered) {
  std::shared_ptr<RecoveryJournal> durable;
  uint64_t position = 0;
  withState([&] {
    *answered = takeWork(executorId, held.freeSlots, held.mayQueue, *reply) || timedOut;
    if (*answered && journal_ && !reply->launches.empty()) {
      durable = journal_;
      position = journaledCommits_;
    }
  });
  if (!durable) return Status();
  return makeDurable(*durable, position);
}

Status ApplicationMaster::makeDurable(RecoveryJournal& journal, uint64_t position) {
  try {
    journal.syncTo(position);
  } catch (const JournalError& e) {
    withState([&] { journalFailed(e.what()); });
    return Status::unavailable(std::string("the AM cannot write its journal: ") + e.what());
  }
  return Status();
}

void ApplicationMaster::wakeExecutors() {
  ++wakeGeneration_;
  workAvailable_.notify_all();
  if (executorServer_) executorServer_->wakeDeferred();
}

bool ApplicationMaster::takeWork(const std::string& executorId, int freeSlots, bool mayQueue,
                                 rest::ExecutorSyncReply& reply) {
  auto it = executors_.find(executorId);
  if (it == executors_.end()) {
    reply.shutdown = true;  // released or lost meanwhile
    return true;
  }
  Executor& executor = it->second;
  executor.lastSeen = clock_.nowMs();
  routeKills();
  reply.kills = std::move(executor.kills);
  executor.kills.clear();
  reply.dropBlocks = std::move(executor.blockDrops);
  executor.blockDrops.clear();
  if (stopping_) {
    reply.shutdown = true;
    return true;
  }
  reply.migrations = migrationsFor(executorId);
  const int queueLimit = config_.scheduler.queuedTasksPerExecutor;
  const int queueRoom = mayQueue && queueLimit > 0
                            ? std::max(0, queueLimit - scheduler_->queuedTasksOn(executorId))
                            : 0;
  // A decommissioning executor takes no more tasks (Spark's isExecutorActive).
  if ((freeSlots > 0 || queueRoom > 0) && !executor.decommissioning) {
    // The scheduler counts cpus; an executor counts slots of task.cpus each.
    reply.launches = scheduler_->resourceOffers(
        {{executorId, executor.node, freeSlots * config_.allocation.taskCpus, executor.profileId,
          queueRoom}});
    // Journaled before the executor hears of them: the next attempt knows every task id and
    // attempt number given out.
    for (const rest::TaskLaunch& launch : reply.launches) {
      journal(JournalRecord::taskLaunched(launch.taskId, launch.jobId, launch.stageId, launch.index,
                                          launch.attempt, executorId));
    }
    // The scheduler knows where blocks are; only the AM knows where executors serve them.
    for (rest::TaskLaunch& launch : reply.launches) {
      for (rest::BlockInput& input : launch.inputs) input.url = blockUrlOf(input.executorId);
    }
  }
  if (freeSlots > 0 && reply.launches.empty() && scheduler_->queuedTaskCount() > 0 &&
      !scheduler_->hasPendingTasks()) {
    // Idle with nothing pending while others hold queued tasks (the end of a stage, or a long
    // task ahead of them): those that have not started come back and run here.
    for (const TaskToKill& back : scheduler_->takeBackQueuedTasksFor(executorId)) {
      auto holder = executors_.find(back.executorId);
      if (holder != executors_.end()) holder->second.takeBack.push_back(back.taskId);
    }
  }
  reply.takeBack = std::move(executor.takeBack);
  executor.takeBack.clear();
  return !reply.launches.empty() || !reply.kills.empty() || !reply.dropBlocks.empty() ||
         !reply.takeBack.empty() || !reply.migrations.empty();
}

// ------------------------------------------------------------------------------------------
// The event log (history.dir)

void ApplicationMaster::openEventLog() {
  if (config_.historyDir.empty()) return;
  EventLogApplication app;
  app.applicationId = identity_.applicationId;
  app.attemptId = identity_.attemptId;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr) app.user = pw->pw_name;
  app.startedAtEpochMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  try {
    eventLog_ =
        std::make_unique<EventLog>(eventLogPath(config_.historyDir, identity_.applicationId), app);
    log_.info() << "event log at " << eventLog_->path();
  } catch (const std::exception& e) {
    // The application runs without its history rather than not at all.
    log_.warn() << e.what() << "; running without an event log (history.dir)";
  }
}

void ApplicationMaster::eventLogLoop() {
  while (true) {
    const bool stop = withState([&](StateLock& lock) {
      return stateChanged_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
    });
    if (stop) return;  // run() writes the last of it
    writeEventLog();
  }
}

void ApplicationMaster::writeEventLog(bool last) {
  // The documents the status port serves, written as it writes them: none takes mu_.
  LiveDocuments documents;
  documents.status = handlers_->statusJson();
  documents.executors = handlers_->executorsJson(0);  // removals are records of their own
  documents.jobs = jobsDocument(status()->jobs, startedAt_);
  documents.decisions = handlers_->decisionsJson(1000);
  if (!eventLog_->flush(history_, documents, clock_.nowMs() - startedAt_, last) &&
      !eventLogWarned_) {
    eventLogWarned_ = true;  // the error sticks: once is enough
    log_.warn() << eventLog_->error();
  }
}

// ------------------------------------------------------------------------------------------
// What the status handlers read

std::shared_ptr<const StatusSnapshot> ApplicationMaster::status() {
  // The newest published snapshot; before the first tick, one made now.
  if (auto snapshot = statusSnapshot_.latest()) return snapshot;
  return withState([&] {
    publishStatusSnapshot(clock_.nowMs());
    return statusSnapshot_.latest();
  });
}

std::optional<JobSummary> ApplicationMaster::job(const std::string& jobId) {
  return withState([&] { return scheduler_->jobSummary(jobId); });
}

std::vector<JobSummary> ApplicationMaster::jobs() {
  return withState([&] { return scheduler_->jobSummaries(); });
}

std::vector<CachedStageSummary> ApplicationMaster::cachedStages() {
  return withState([&] { return scheduler_->cachedStages(); });
}

std::vector<DecisionRecord> ApplicationMaster::decisions(size_t limit) {
  return decisions_.newest(limit);  // its own lock
}

std::string ApplicationMaster::metricsText() const {
  metrics_.refreshMemory();
  return metrics_.registry.render();
}

Status ApplicationMaster::unpersist(const std::string& stageId) {
  return withState([&] {
    Status done = scheduler_->unpersist(stageId);
    if (done.ok()) {
      journal(JournalRecord::unpersisted(stageId), /*sync=*/true);
      log_.info() << "unpersisted " << stageId;
    }
    return done;
  });
}

void ApplicationMaster::writeReport() {
  // Aside, then renamed: a reader polling for it never sees half of it.
  const std::string partial = config_.reportFile + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << reportJson() << "\n";
    if (!out.flush()) {
      log_.warn() << "could not write the report " << config_.reportFile;
      return;
    }
  }
  if (std::rename(partial.c_str(), config_.reportFile.c_str()) != 0) {
    log_.warn() << "could not write the report " << config_.reportFile << ": "
                << std::strerror(errno);
  }
}

std::string ApplicationMaster::reportJson() {
  const RunReport report = withState([&] {
    RunReport r;
    const TimeMs now = clock_.nowMs();
    r.executorMs = executorMsClosed_;
    for (const auto& [id, executor] : executors_) r.executorMs += now - executor.registeredAt;
    r.durationMs = now - startedAt_;
    r.jobs = scheduler_->jobSummaries();
    for (const auto& job : r.jobs) {
      r.tasksSucceeded += job.succeeded;
      r.tasksFailed += job.failedAttempts;
    }
    r.status = "RUNNING";
    if (stopOutcome_) {
      r.status = stopOutcome_->finalStatus;
    } else if (scheduler_->allJobsDone()) {
      r.status = failedJobMessages_.empty() ? "SUCCEEDED" : "FAILED";
    }
    r.peakExecutors = peakExecutors_;
    r.launchedExecutors = allocator_.snapshot().launched;
    if (!failedJobMessages_.empty()) r.diagnostics = failedJobMessages_.front();
    return r;
  });
  return runReportJson(report);
}

}  // namespace tide::am
