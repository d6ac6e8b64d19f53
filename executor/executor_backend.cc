#include "executor/executor_backend.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "rest/json.h"
#include "rest/messages/executor.h"

namespace tide::executor {
namespace {

using Millis = std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

// Backoff between attempts to reach an unreachable AM: 100ms doubling to 2s, each delay drawn
// from [ceiling/2, ceiling] so that the executors of a restarted AM do not all come back at the
// same instant.
constexpr Millis kFirstBackoff{100};
constexpr Millis kMaxBackoff{2000};
// After the last task was told to stop: how long leaving waits for the processes to go,
// beyond the SIGTERM->SIGKILL grace period.
constexpr Millis kExitMargin{2000};
// Updates batched while the queue is deep (batchesUpdates): how long after the last sync they
// may wait, and how many make a sync go at once. Small against the queue's depth in tasks.
constexpr Millis kUpdateBatchWindow{20};
constexpr size_t kUpdateBatchSize = 32;

rest::HttpClientOptions clientOptions(const ExecutorSettings& settings, const Logger& log) {
  rest::HttpClientOptions options;
  options.connectTimeout = Millis(std::min<int64_t>(settings.networkTimeout, 3000));
  options.requestTimeout = Millis(settings.networkTimeout);
  // The backend retries itself, over the whole network.timeout rather than a few attempts.
  options.retry.maxAttempts = 1;
  options.defaultHeaders = {{"Authorization", "Bearer " + settings.appSecret}};
  options.log = [log](const std::string& line) { log.warn() << line; };
  settings.tls.applyTo(options);
  return options;
}

std::string excerpt(const std::string& body) {
  constexpr size_t kMax = 300;
  return body.size() <= kMax ? body : body.substr(0, kMax) + "...";
}

}  // namespace

ExecutorBackend::ExecutorBackend(ExecutorSettings settings, TaskRunner& runner, BlockStore* blocks)
    : settings_(std::move(settings)),
      runner_(runner),
      blocks_(blocks),
      client_(
          std::make_unique<rest::HttpClient>(settings_.amAddress, clientOptions(settings_, log_))),
      commitClient_(
          std::make_unique<rest::HttpClient>(settings_.amAddress, clientOptions(settings_, log_))),
      syncPath_("/api/v1/executors/" + settings_.executorId + "/sync"),
      jitter_(std::random_device{}()),
      amAddress_(settings_.amAddress) {}

std::pair<std::string, int> ExecutorBackend::currentAm() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {amAddress_, amGeneration_};
}

std::optional<std::string> ExecutorBackend::newAmAddress() const {
  if (settings_.amAddressFile.empty()) return std::nullopt;
  std::ifstream in(settings_.amAddressFile);
  std::string address;
  if (!(in >> address)) return std::nullopt;
  while (address.size() > 1 && address.back() == '/') address.pop_back();
  if (address.rfind("http://", 0) != 0 && address.rfind("https://", 0) != 0) return std::nullopt;
  if (address == currentAm().first) return std::nullopt;
  return address;
}

void ExecutorBackend::switchAm(const std::string& address) {
  log_.warn() << "the AM at " << currentAm().first << " is gone; a new attempt of it is at "
              << address << ": registering there again";
  client_ = std::make_unique<rest::HttpClient>(address, clientOptions(settings_, log_));
  std::lock_guard<std::mutex> lock(mutex_);
  amAddress_ = address;
  ++amGeneration_;
}

void ExecutorBackend::requestStop(const std::string& why) {
  leave(0, why, false);
  // Tasks go now rather than when the current sync returns.
  runner_.killAll();
  runner_.interruptWaits();
  stopRequested_.notify_all();
}

std::string ExecutorBackend::askToCommit(int64_t taskId) {
  static const rest::HttpHeaders kJson = {{"Content-Type", "application/json"}};
  rest::RequestOptions options;
  options.idempotent = true;  // asking twice for the same attempt gets the same answer
  try {
    std::lock_guard<std::mutex> lock(commitMutex_);
    // While the AM is away, ask again (a new attempt of it may take over), up to
    // network.timeout; the run() thread registers with the new attempt.
    const auto giveUpAt = std::chrono::steady_clock::now() + Millis(settings_.networkTimeout);
    rest::HttpResponse response;
    for (int failures = 0;; ++failures) {
      const auto [address, generation] = currentAm();
      if (generation != commitClientGeneration_) {
        commitClient_ = std::make_unique<rest::HttpClient>(address, clientOptions(settings_, log_));
        commitClientGeneration_ = generation;
      }
      if (failures > 0) {
        // A new attempt of the AM may already be up while the run() thread waits for this
        // task to end: ask the new one (it knows this executor and the task).
        std::optional<std::string> newer = newAmAddress();
        if (newer && *newer != commitAddress_) {
          commitClient_ =
              std::make_unique<rest::HttpClient>(*newer, clientOptions(settings_, log_));
          commitAddress_ = *newer;
        }
      }
      try {
        response =
            commitClient_->request("POST", "/api/v1/executors/" + settings_.executorId + "/commit",
                                   rest::toJson(rest::CommitRequest{taskId}), kJson, options);
        if (response.status != 502 && response.status != 503 && response.status != 504) break;
      } catch (const rest::HttpError&) {
        if (settings_.amAddressFile.empty() || leaving() ||
            std::chrono::steady_clock::now() >= giveUpAt) {
          throw;
        }
      }
      if (leaving() || std::chrono::steady_clock::now() >= giveUpAt) break;
      std::this_thread::sleep_for(std::min<Millis>(kMaxBackoff, kFirstBackoff * (failures + 1)));
    }
    if (!response.ok()) {
      return "the AM answered HTTP " + std::to_string(response.status) + ": " +
             excerpt(response.body);
    }
    const rest::CommitDecision decision =
        rest::commitDecisionFromJson(rest::parseJson(response.body));
    if (decision.allowed) return "";
    return decision.reason.empty() ? "denied by the AM" : decision.reason;
  } catch (const std::exception& error) {
    return std::string("the AM could not be asked: ") + error.what();
  }
}

std::string ExecutorBackend::exitReason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exitReason_;
}

void ExecutorBackend::leave(int exitStatus, const std::string& why, bool asError) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (leaving_) return;
    leaving_ = true;
    exitStatus_ = exitStatus;
    exitReason_ = why;
  }
  if (asError) {
    log_.error() << "executor " << settings_.executorId << " exits: " << why;
  } else {
    log_.info() << "executor " << settings_.executorId << " exits: " << why;
  }
  stopRequested_.notify_all();
}

bool ExecutorBackend::leaving() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leaving_;
}

void ExecutorBackend::leaveOnRefusal(const std::string& call, const rest::HttpResponse& response) {
  const std::string status = "HTTP " + std::to_string(response.status);
  if (response.status == 401 || response.status == 403) {
    leave(1,
          "the AM refused this executor's credentials on " + call + " (" + status +
              "): TIDE_APP_SECRET does not match the application's secret",
          true);
  } else if (response.status == 404) {
    leave(1,
          "the AM does not know executor " + settings_.executorId + " (" + status + " on " + call +
              "): it was removed or the AM restarted",
          true);
  } else {
    leave(1, "the AM answered " + call + " with " + status + ": " + excerpt(response.body), true);
  }
}

std::optional<rest::HttpResponse> ExecutorBackend::postToAm(const std::string& path,
                                                            const std::string& body,
                                                            int64_t maxWaitMs) {
  static const rest::HttpHeaders kJson = {{"Content-Type", "application/json"}};
  rest::RequestOptions options;
  // The AM may hold the request for maxWaitMs; beyond that, network.timeout is the budget.
  options.timeout = Millis(maxWaitMs + settings_.networkTimeout);
  options.idempotent = false;

  bool unreachable = false;
  SteadyTime unreachableSince = std::chrono::steady_clock::now();
  for (int failures = 0;; ++failures) {
    if (leaving()) return std::nullopt;
    const SteadyTime attemptStart = std::chrono::steady_clock::now();
    std::string problem;
    try {
      rest::HttpResponse response = client_->request("POST", path, body, kJson, options);
      // A proxy or a briefly overloaded AM: an outage, not an answer.
      if (response.status != 502 && response.status != 503 && response.status != 504) {
        if (unreachable) log_.info() << "the AM is reachable again";
        return response;
      }
      problem = "HTTP " + std::to_string(response.status);
    } catch (const rest::HttpError& error) {
      problem = error.what();
    }
    if (!unreachable) {
      unreachable = true;
      unreachableSince = attemptStart;
    }
    // A new attempt of the AM: register with it (carrying the running tasks), then send
    // this request again, to it.
    if (!resuming_) {
      if (std::optional<std::string> address = newAmAddress()) {
        switchAm(*address);
        resuming_ = true;
        const bool registered = registerWithAm(/*resumed=*/true);
        resuming_ = false;
        if (!registered) return std::nullopt;
        unreachable = false;
        failures = -1;
        continue;
      }
    }
    const SteadyTime now = std::chrono::steady_clock::now();
    const SteadyTime giveUpAt = unreachableSince + Millis(settings_.networkTimeout);
    if (now >= giveUpAt) {
      leave(1,
            "the AM at " + currentAm().first + " has been unreachable for " +
                formatDuration(settings_.networkTimeout) +
                " (network.timeout); last error: " + problem,
            true);
      return std::nullopt;
    }
    if (failures == 0) {
      log_.warn() << "cannot reach the AM (" << problem << "); retrying for up to "
                  << formatDuration(settings_.networkTimeout);
    } else {
      TIDE_LOG(log_, debug) << "AM still unreachable: " << problem;
    }
    const Millis ceiling =
        std::min<Millis>(kMaxBackoff, kFirstBackoff * (int64_t{1} << std::min(failures, 10)));
    const Millis delay = Millis(
        std::uniform_int_distribution<int64_t>(ceiling.count() / 2, ceiling.count())(jitter_));
    std::unique_lock<std::mutex> lock(mutex_);
    stopRequested_.wait_until(lock, std::min(now + delay, giveUpAt), [this] { return leaving_; });
  }
}

bool ExecutorBackend::registerWithAm(bool resumed) {
  if (resumed) {
    // Not started, so not reported: the new attempt takes them for launches that never got
    // here and runs them again, once.
    const std::vector<int64_t> dropped = runner_.dropQueued();
    if (!dropped.empty()) {
      log_.info() << "dropping " << dropped.size()
                  << " queued tasks that had not started: the new AM attempt runs them again";
    }
  }
  rest::ExecutorRegistration registration;
  registration.resumed = resumed;
  if (resumed) {
    // The sync that failed (sent again once registered) and what the runner has started or
    // ended since (queued tasks start on its own thread), so the new attempt adopts them all.
    std::set<int64_t> held(inFlight_.begin(), inFlight_.end());
    for (int64_t taskId : runner_.heldTaskIds()) held.insert(taskId);
    registration.running.assign(held.begin(), held.end());
  }
  if (resumed && blocks_ != nullptr) {
    registration.blocksReported = true;
    registration.blocks = blocks_->heldBlocks();
  }
  registration.executorId = settings_.executorId;
  registration.containerId = settings_.containerId;
  registration.host = settings_.host;
  registration.port = settings_.blockPort;
  registration.node = settings_.nodeId;
  registration.cores = settings_.cores;
  registration.pid = ::getpid();
  std::optional<rest::HttpResponse> response =
      postToAm("/api/v1/executors/register", rest::toJson(registration), 0);
  if (!response) return false;
  if (!response->ok()) {
    leaveOnRefusal("register", *response);
    return false;
  }
  try {
    rest::ExecutorRegistered registered =
        rest::executorRegisteredFromJson(rest::parseJson(response->body));
    heartbeatInterval_ = Millis(registered.heartbeatIntervalMs);
    queuedTaskWaitMs_ = registered.queuedTaskWaitMs;
    if (registered.taskSlots != settings_.taskSlots()) {
      log_.warn() << "the AM gives this executor " << registered.taskSlots
                  << " task slots, not the " << settings_.taskSlots()
                  << " of executor.cores / task.cpus; using the AM's";
    }
    runner_.setSlots(registered.taskSlots);
  } catch (const std::exception& error) {
    leave(1, std::string("the AM's answer to register is unreadable: ") + error.what(), true);
    return false;
  }
  log_.info() << "registered with the AM: " << runner_.slots() << " task slots, heartbeat every "
              << formatDuration(heartbeatInterval_.count());
  return true;
}

int ExecutorBackend::run() {
  log_.info() << "starting " << settings_.describe();
  if (registerWithAm()) syncUntilLeaving();
  stopTasks();
  std::lock_guard<std::mutex> lock(mutex_);
  return exitStatus_;
}

void ExecutorBackend::syncUntilLeaving() {
  RunnerReport report;
  rest::ExecutorSync sync;  // kept across rounds for the capacity of its lists
  bool syncNow = true;
  SteadyTime lastSent = std::chrono::steady_clock::now();
  while (!leaving()) {
    if (!syncNow) waitForWork(lastSent);
    if (leaving()) break;
    const bool idle = gatherSync(report, sync);
    const size_t reported = sync.updates.size();
    const std::string body = encodeSync(sync);
    lastSent = std::chrono::steady_clock::now();
    const std::optional<rest::ExecutorSyncReply> reply = exchangeSync(body, sync.maxWaitMs);
    if (!reply) break;
    TIDE_LOG(log_, trace) << "sync: reported " << reported << ", got " << reply->launches.size()
                          << " launches, " << reply->kills.size() << " kills";
    if (!applyReply(*reply)) break;
    syncNow = syncAgainAtOnce(idle, *reply, lastSent);
  }
}

size_t ExecutorBackend::batchQueueFloor() const {
  return 2 * static_cast<size_t>(runner_.slots());  // two rounds: the slots cannot run dry
}

Millis ExecutorBackend::updateBatchWindow() const {
  // Never so long that a queued task would be handed back (queuedTaskWait) meanwhile.
  if (queuedTaskWaitMs_ > 0) return std::min(kUpdateBatchWindow, Millis(queuedTaskWaitMs_ / 2));
  return kUpdateBatchWindow;
}

bool ExecutorBackend::batchesUpdates() const {
  return runner_.queuedCount() >= batchQueueFloor() && updateBatchWindow().count() > 0;
}

void ExecutorBackend::waitForWork(SteadyTime lastSent) {
  SteadyTime until = lastSent + heartbeatInterval_;
  // A queued task that cannot start within queuedTaskWaitMs goes back then.
  const std::optional<TimeMs> oldest = runner_.oldestQueuedAtMs();
  if (oldest && queuedTaskWaitMs_ > 0) {
    const int64_t left = std::max<int64_t>(0, *oldest + queuedTaskWaitMs_ - runner_.nowMs());
    until = std::min(until, std::chrono::steady_clock::now() + Millis(left));
  }
  if (!runner_.hasUpdates()) runner_.waitForUpdates(until);
  // The first end came: while the queue is deep, more may join it (batchesUpdates).
  if (runner_.hasUpdates() && batchesUpdates()) {
    runner_.waitForUpdateBatch(std::min(until, lastSent + updateBatchWindow()), kUpdateBatchSize,
                               batchQueueFloor());
  }
}

bool ExecutorBackend::gatherSync(RunnerReport& report, rest::ExecutorSync& sync) {
  // Slots freed since the last round go to queued tasks before the AM hears of it.
  runner_.startQueued();
  if (queuedTaskWaitMs_ > 0 && runner_.queuedCount() > 0) {
    const std::vector<int64_t> stale =
        runner_.takeBackQueuedSince(runner_.nowMs() - queuedTaskWaitMs_);
    handedBack_.insert(handedBack_.end(), stale.begin(), stale.end());
  }
  runner_.collect(report);
  sync.updates.swap(report.updates);
  sync.running.swap(report.running);
  sync.returned.swap(handedBack_);
  handedBack_.clear();
  sync.freeSlots = report.freeSlots;
  if (decommissionRequested_ && !sync.decommissioning) {
    log_.info() << "decommissioning asked (SIGPWR): telling the AM";
  }
  sync.decommissioning = decommissionRequested_;
  sync.migrated.swap(migrated_);
  migrated_.clear();
  const bool idle =
      sync.updates.empty() && !report.holdsWork && sync.migrated.empty() && sync.returned.empty();
  // Only a sync with nothing to report may be held, and only while no task runs, is being
  // started or is queued (one could end during the hold, its end unheard and its slot idle
  // until the hold ends: at the end of a stage, a whole heartbeat). holdsWork is read with
  // the rest of the report: a queued task the runner's thread is starting is in neither the
  // queue nor the running list.
  sync.maxWaitMs = idle ? heartbeatInterval_.count() : 0;
  return idle;
}

std::string ExecutorBackend::encodeSync(rest::ExecutorSync& sync) {
  std::string body = rest::toJson(sync);
  inFlight_ = sync.running;
  for (const auto& update : sync.updates) inFlight_.push_back(update.taskId);
  sync.updates.clear();  // keeps the capacity for the next round
  sync.migrated.clear();
  return body;
}

std::optional<rest::ExecutorSyncReply> ExecutorBackend::exchangeSync(const std::string& body,
                                                                     int64_t maxWaitMs) {
  std::optional<rest::HttpResponse> response = postToAm(syncPath_, body, maxWaitMs);
  if (!response) return std::nullopt;
  if (!response->ok()) {
    leaveOnRefusal("sync", *response);
    return std::nullopt;
  }
  try {
    return rest::executorSyncReplyFromJson(rest::parseJson(response->body));
  } catch (const std::exception& error) {
    leave(1, std::string("the AM's sync reply is unreadable: ") + error.what(), true);
    return std::nullopt;
  }
}

bool ExecutorBackend::applyReply(const rest::ExecutorSyncReply& reply) {
  if (reply.shutdown) {
    leave(0, "the AM released this executor", false);
    return false;
  }
  for (const std::string& prefix : reply.dropBlocks) {
    if (blocks_ == nullptr) continue;
    if (blocks_->drop(prefix)) {
      TIDE_LOG(log_, debug) << "dropped blocks " << prefix;
    } else {
      log_.warn() << "cannot drop blocks '" << prefix << "'";
    }
  }
  for (int64_t taskId : reply.kills) runner_.kill(taskId);
  handedBack_ = runner_.takeBackQueued(reply.takeBack);
  for (const rest::TaskLaunch& launch : reply.launches) runner_.launch(launch);
  // Tasks first, so that they run while this executor fetches a leaving peer's blocks.
  for (const rest::BlockMigration& migration : reply.migrations) {
    migrated_.push_back(
        migrate_ ? migrate_(migration)
                 : rest::BlockMigrationResult{migration.id, false, "this executor cannot migrate"});
  }
  return true;
}

bool ExecutorBackend::syncAgainAtOnce(bool idle, const rest::ExecutorSyncReply& reply,
                                      SteadyTime lastSent) const {
  // e.g. noop tasks, already done, tasks handed back, or migrations: report them at once
  // (updates after a short wait for more while the queue keeps every slot busy)
  if (!handedBack_.empty() || !migrated_.empty()) return true;
  if (runner_.hasUpdates()) {
    return !batchesUpdates() || std::chrono::steady_clock::now() >= lastSent + updateBatchWindow();
  }
  // Running, or being started out of the queue: wait for one to end (or the heartbeat).
  if (runner_.freeSlots() < runner_.slots()) return false;
  // Idle. After a long poll the AM held, poll again at once; after one it answered early
  // with nothing (an AM that does not hold), wait out the interval rather than spin. A sync
  // that reported something was not held, so it is followed by a poll.
  const bool answeredEarly = std::chrono::steady_clock::now() < lastSent + heartbeatInterval_;
  return !(idle && answeredEarly && reply.launches.empty() && reply.kills.empty());
}

void ExecutorBackend::stopTasks() {
  runner_.killAll();
  const int stillRunning = runner_.runningCount();
  if (stillRunning == 0) return;
  log_.info() << "waiting for " << stillRunning << " killed tasks to exit";
  if (!runner_.waitUntilIdle(std::chrono::steady_clock::now() + kExitMargin +
                             Millis(runner_.killGracePeriod()))) {
    log_.warn() << runner_.runningCount() << " tasks still running; leaving them to SIGKILL";
  }
}

}  // namespace tide::executor
