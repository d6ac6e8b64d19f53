#pragma once

// The ApplicationMaster process's core: registers with the resource manager, runs the
// allocation loop (the policy's tick every dynamicAllocation.interval) and the RM heartbeat
// (containers asked for, granted, released), starts executors in granted containers, hands
// tasks to executors over their sync requests, and serves its status. One mutex guards the
// policy, the scheduler and the allocator; the loops only gather inputs, call them and carry
// out what they decide.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "allocation/allocation_policy.h"
#include "am/allocation_listener.h"
#include "am/config.h"
#include "am/containers/container_allocator.h"
#include "am/containers/heartbeat_pacer.h"
#include "am/containers/resource_manager_client.h"
#include "am/control_thread.h"
#include "am/scheduler/task_scheduler.h"
#include "am/status/allocation_history.h"
#include "am/status/decision_log.h"
#include "am/status/metrics.h"
#include "am/status/status_snapshot.h"
#include "common/clock.h"
#include "common/logging.h"
#include "rest/http_server.h"
#include "rest/messages/executor.h"

namespace tide::am {

struct AmIdentity {
  std::string applicationId;
  std::string attemptId;
  std::string appSecret;       // shared with executors; never logged
  std::string executorBinary;  // path of tide-executor
};

// How the application ended.
struct AmOutcome {
  std::string finalStatus;  // SUCCEEDED, FAILED or KILLED
  std::string diagnostics;
};

class ApplicationMaster {
 public:
  ApplicationMaster(AmConfig config, AmIdentity identity,
                    std::unique_ptr<ResourceManagerClient> rm);
  ~ApplicationMaster();

  // Serves the status port, registers with the RM and starts the loops. Returns the port.
  int start();
  // Submits a job (throws JobError for a job that cannot run). Thread-safe.
  std::string submitJob(Job job);
  // Waits until every job is done (not in session mode) or stop is requested, then releases
  // every container and unregisters. Returns how it ended.
  AmOutcome run();
  // Ends the application (SIGTERM: KILLED; too many executor failures: FAILED).
  void requestStop(const std::string& finalStatus, const std::string& diagnostics);
  // The run's summary for `tide run --report`.
  std::string reportJson();
  int port() const { return port_; }
  std::string trackingUrl() const;
  // Changes the executor bounds of the running application (PUT /api/v1/allocation/bounds,
  // SIGHUP): the values given replace the current ones, validated like the config. Returns ""
  // when applied (the policy clips its target at once; the RM hears of it at the next tick),
  // else the error naming the field. `applied` receives the bounds now in force.
  std::string changeBounds(std::optional<int> minExecutors, std::optional<int> initialExecutors,
                           std::optional<int> maxExecutors, const std::string& source,
                           allocation::Bounds* applied = nullptr);
  // Notes in the decision log a bounds change that was refused (e.g. a SIGHUP with an invalid
  // file), so that "why did my change not apply?" is answered there too.
  void recordRejectedBoundsChange(const std::string& source, const std::string& error);

 private:
  struct Executor {
    std::string id;
    std::string host;
    std::string containerId;
    int64_t pid = 0;
    int slots = 1;
    TimeMs registeredAt = 0;
    TimeMs lastSeen = 0;
    std::vector<int64_t> kills;
    std::string node;                     // its node manager's node: the unit of locality
    std::string blockUrl;                 // where it serves its blocks ("" for none)
    std::vector<std::string> blockDrops;  // block prefixes to delete, sent at its next sync
  };

  // Loops.
  void allocationLoop();
  void heartbeatLoop();
  void launchLoop();
  // Under mu_.
  void applyTick(const allocation::TickResult& result, TimeMs now);
  // After a tick: the history point, the gauges, the allocator's waiting state, the status.
  void observeTick(TimeMs now, double tickSeconds);
  // Copies what the status endpoints show into statusSnapshot_. `wait`: even if a reader
  // holds it (else skipped then, for the next tick).
  void publishStatusSnapshot(TimeMs now, bool wait = true);
  void applyAllocatorActions(AllocatorActions& actions, TimeMs now);
  void releaseExecutor(const std::string& executorId, const std::string& why, TimeMs now);
  void forgetExecutor(const std::string& executorId, TimeMs now);
  void detectSilentExecutors(TimeMs now);
  void routeKills();
  void recordDecision(const std::string& source, const std::string& action, int target,
                      const std::string& why, const std::string& key);
  ExecutorTemplate executorTemplate() const;
  ExecutorLaunch executorLaunchFor(const std::string& executorId, const std::string& containerId);

  // HTTP.
  void registerRoutes();
  void handleExecutorRegister(const httplib::Request& req, httplib::Response& res);
  void handleExecutorSync(const httplib::Request& req, httplib::Response& res);
  // The output commit protocol: may this task attempt commit (TaskScheduler::canCommit)?
  void handleExecutorCommit(const httplib::Request& req, httplib::Response& res);
  std::shared_ptr<const StatusSnapshot> currentStatus();
  std::string statusJson();
  std::string executorsJson();
  std::string jobsJson(const std::optional<std::string>& jobId);
  std::string decisionsJson(size_t limit);
  std::string historyJson(TimeMs sinceMs);
  void handleBoundsUpdate(const httplib::Request& req, httplib::Response& res);

  AmConfig config_;
  AmIdentity identity_;
  AmMetrics metrics_;  // before rm_, which reports its calls into it
  std::unique_ptr<ResourceManagerClient> rm_;
  SteadyClock clock_;
  TimeMs startedAt_;
  Logger log_{"am"};

  std::mutex mu_;
  std::condition_variable workAvailable_;  // wakes executors' long polls
  std::condition_variable heartbeatWake_;  // the target changed: heartbeat now
  std::condition_variable stateChanged_;   // jobs ended or stop requested
  std::unique_ptr<allocation::AllocationPolicy> allocationPolicy_;  // dynamicAllocation.policy
  allocation::AllocationPolicy& allocation_;
  AllocationListener allocationListener_;
  class JobEndListener;
  std::unique_ptr<SchedulerListener> schedulerListener_;
  std::unique_ptr<TaskScheduler> scheduler_;
  ContainerAllocator allocator_;
  DecisionLog decisions_;
  AllocationHistory history_;  // own mutex: read without mu_
  StatusSnapshotBox statusSnapshot_;
  bool jobEndedSincePublish_ = false;  // publish at once: "job done" and the status agree
  TimeMs waitingSince_ = -1;           // outstanding requests reported as waiting since then
  std::map<std::string, Executor> executors_;  // registered and not released
  std::set<std::string> releasedExecutors_;    // told to shut down at their next sync
  std::set<std::string> startingExecutors_;    // started by the backend, not yet granted
  std::deque<std::pair<rest::Container, std::string>> launchQueue_;
  std::condition_variable launchWake_;
  bool heartbeatRequested_ = false;
  std::optional<AmOutcome> stopOutcome_;
  bool stopping_ = false;
  int jobsSubmitted_ = 0;
  std::vector<std::string> failedJobMessages_;
  int peakExecutors_ = 0;
  DurationMs executorMsClosed_ = 0;  // lifetimes of executors already gone
  std::string lastTickWhy_;

  std::unique_ptr<rest::HttpServer> server_;  // the status port (ui.port): people and tools
  int port_ = 0;
  // Executors' register and sync have a server of their own: a crowd of status readers (a
  // dashboard, a load test) can then never hold the worker threads executors need.
  std::unique_ptr<rest::HttpServer> executorServer_;
  int executorPort_ = 0;
  // Runs the status port's requests that take mu_ (its own threads serve at idle priority).
  ControlThread control_;
  std::vector<std::thread> threads_;
};

}  // namespace tide::am
