#pragma once

// Turns the allocation target into container requests and granted containers into executors
// (Spark's YarnAllocator). Pure: the AM's heartbeat loop feeds it the RM's answers and carries
// out what it returns; time comes from the injected clock.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "am/containers/container_placement.h"
#include "am/containers/resource_manager_client.h"
#include "common/clock.h"

namespace tide::am {

struct ContainerAllocatorConfig {
  rest::Resource executorResource{1024, 1};
  int priority = 1;
  int maxNumExecutorFailures = 3;
  DurationMs failuresValidityInterval = kInfiniteMs;  // failures older than this are forgotten
};

// Spark's default for executor.maxNumFailures: twice the executors it may have, at least 3.
int defaultMaxNumExecutorFailures(int maxExecutors);

// Whether a completed container's exit says the application (or its executor) failed, and how
// to say why. Released, preempted, lost-with-node and RM/AM kills are not the app's fault.
// An exit that is (Spark's exitCausedByApp: killed for memory, a non-zero exit) counts toward
// executor.maxNumFailures and fails the tasks that were running in it (task.maxFailures).
struct ExitClassification {
  bool executorFailure = false;
  std::string cause;  // "memory", "exit", "released", "preempted", "node_lost", "killed", "success"
  std::string explanation;
};
ExitClassification classifyExit(int exitStatus, const std::string& diagnostics);

// Fail fast (Spark's "Required executor memory ... is above the max threshold"): why an
// executor container of `executor` can never be granted by a resource manager whose largest
// node is `maximum` (from registration), naming the key, the value asked and the largest
// available; nullopt when it fits or the maximum is unknown (zero).
// `memoryKey` and `coresKey` name what asked for them (a stage's "executor" shape says its own).
std::optional<std::string> executorAboveMaximum(const rest::Resource& executor,
                                                const rest::Resource& maximum,
                                                const std::string& memoryKey = "executor.memory",
                                                const std::string& coresKey = "executor.cores");

// An executor that went away with its container.
struct LostExecutor {
  std::string executorId;
  std::string containerId;
  bool wasRegistered = false;
  ExitClassification exit;
  std::string reason;  // for logs and the task scheduler
};

struct AllocatorActions {
  std::vector<std::pair<rest::Container, std::string>> launches;  // container, executor id
  std::vector<LostExecutor> lost;
  std::vector<std::string> decisions;          // what it did and why, for the decision log
  std::optional<std::string> failApplication;  // too many executor failures: the diagnostics
};

// What nextAsk changed, for the decision log ("request" or "cancel_requests") and the log.
struct AskChange {
  bool cancelled = false;  // pending requests cancelled (else more requested)
  std::string why;
};

// One resource profile's containers (the default profile is id 0: executor.cores and
// executor.memory).
struct ProfileContainers {
  rest::Resource resource;  // of each of its containers
  int priority = 1;         // of its asks: the allocator's priority + the profile id
  int target = 0;
  int outstanding = 0;  // requested, not yet granted
  int starting = 0;     // granted, executor not yet registered
  int held = 0;         // granted and kept (starting or running)
};

struct AllocatorSnapshot {
  int target = 0;
  int outstanding = 0;  // requested, not yet granted
  int starting = 0;     // granted, executor not yet registered
  int running = 0;      // registered executors
  int releasing = 0;
  int recentFailures = 0;
  TimeMs outstandingSince = -1;               // when the oldest unanswered request was made
  int launched = 0;                           // executors started over the application's life
  std::map<int, ProfileContainers> profiles;  // the totals above, per resource profile
};

class ContainerAllocator {
 public:
  ContainerAllocator(ContainerAllocatorConfig config, const Clock& clock);

  // The default profile's target (the only one when no stage asks for its own shape).
  void setTarget(int target) { profiles_[0].target = target; }
  // A resource profile's executor shape, before its first target (stage-level executor shapes).
  // Its containers are asked at priority + profile id; adding it again changes nothing.
  void addProfile(int profileId, const rest::Resource& resource);
  // Every profile's target, by profile id (as the allocation policy's tick reports them).
  void setTargets(const std::map<int, int>& targets);
  // Each resource profile's pending-task locality (by profile id; a profile left out has
  // none): nextAsk places each profile's containers still wanted with Spark's
  // locality-preferred strategy (container_placement.h), from that profile's tasks and less
  // that profile's executors already on each node, as Spark's YarnAllocator does per
  // ResourceProfile.
  void setLocalityHints(std::map<int, LocalityHints> hintsByProfile) {
    localityHints_ = std::move(hintsByProfile);
  }
  // The default profile's alone (the only one when no stage asks for its own shape): its
  // tasks by the node they prefer (a task preferring two nodes counts on both), how many
  // prefer some node, and its tasks per executor.
  void setLocalityHints(std::map<std::string, int64_t> pendingTasksByNode,
                        int64_t localityAwareTasks, int slotsPerExecutor) {
    localityHints_[0] = {std::move(pendingTasksByNode), localityAwareTasks,
                         std::max(1, slotsPerExecutor)};
  }
  // The targets of all profiles, summed.
  int target() const;

  // The ask for the next heartbeat: missing = target - outstanding - starting - running; more
  // are requested when positive, pending requests cancelled when negative (never an executor).
  ContainerAsk nextAsk(std::optional<AskChange>* change = nullptr);
  // The heartbeat carrying `ask` failed (the RM may or may not have seen it): its releases go
  // out again with the next one, and every one after, until the RM acknowledges them. (Its
  // asks need nothing: each ask states the total still wanted.)
  void onHeartbeatFailed(const ContainerAsk& ask);
  // What the RM answered: grants become executors (or surplus is released), completions
  // become lost executors, classified.
  AllocatorActions onHeartbeat(const HeartbeatResult& result);
  // The executor in this container started and registered with the AM.
  bool onExecutorRegistered(const std::string& executorId);
  // Starting the executor failed (e.g. its node manager refused): the container is released.
  // Not counted as an executor failure (the cluster's fault, not the application's).
  AllocatorActions onLaunchFailed(const std::string& executorId, const std::string& reason);
  // Gives an idle executor's container back (idle removal). Returns false if unknown.
  bool release(const std::string& executorId);
  // Every container still held, for shutting down.
  std::vector<std::string> releaseAll();

  // Recovery: a container of the previous AM attempt whose executor survived (it registers
  // again with this attempt; until then it counts as starting).
  // It keeps the resource profile it was started for.
  void adopt(const rest::Container& container, const std::string& executorId, int profileId = 0);
  // Recovery: a container of the previous attempt with no known executor, given back.
  void releaseContainer(const std::string& containerId);
  // Recovery: executor numbers continue above the previous attempts' ("e<N>").
  void continueExecutorNumbersAfter(int highest) {
    nextExecutorNumber_ = std::max(nextExecutorNumber_, highest + 1);
  }

  std::optional<std::string> containerOf(const std::string& executorId) const;
  // The resource profile the executor's container was asked for (0 when unknown).
  int profileOf(const std::string& executorId) const;
  // The resource profile a container of this size was asked for, if any (recovery: a
  // previous attempt's container).
  std::optional<int> profileOfResource(const rest::Resource& resource) const;
  AllocatorSnapshot snapshot() const;

 private:
  struct Held {
    std::string executorId;
    rest::Container container;
    bool registered = false;
    int profileId = 0;
  };
  std::optional<std::string> recordFailure(const std::string& what);
  // The profile a granted container is for: the one of its size with requests outstanding,
  // else any of its size, else the default.
  int profileForGrant(const rest::Resource& resource) const;
  // Forgets a held container (lost, released, failed to launch).
  void dropHeld(std::map<std::string, Held>::iterator it);
  // Where a profile's outstanding requests should go (container_placement.h's host asks).
  std::vector<std::pair<std::string, int>> hostAsksOf(int profileId,
                                                      const ProfileContainers& profile) const;
  int outstandingTotal() const;
  int startingTotal() const;

  ContainerAllocatorConfig config_;
  const Clock& clock_;
  std::map<int, ProfileContainers> profiles_;  // by resource profile id; 0 always
  TimeMs outstandingSince_ = -1;
  std::map<std::string, Held> held_;  // container id -> executor
  std::map<std::string, std::string> containerByExecutor_;
  std::set<std::string> releasing_;     // released, completion not yet seen
  std::vector<std::string> toRelease_;  // to send with the next heartbeat
  std::deque<TimeMs> failureTimes_;
  int nextExecutorNumber_ = 1;
  std::map<int, LocalityHints> localityHints_;  // by resource profile id
};

}  // namespace tide::am
