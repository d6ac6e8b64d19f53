#include "am/containers/container_allocator.h"

#include "am/containers/container_placement.h"

#include <algorithm>
#include <climits>

namespace tide::am {

int defaultMaxNumExecutorFailures(int maxExecutors) {
  const int64_t twice = 2 * static_cast<int64_t>(maxExecutors);
  return static_cast<int>(std::max<int64_t>(3, std::min<int64_t>(twice, INT_MAX)));
}

namespace {

// The exit statuses the resource manager gives a meaning (rest::exit_status); any other is the
// executor's own exit code.
struct KnownExit {
  int status;
  bool executorFailure;
  const char* cause;
  const char* explanation;
};
constexpr KnownExit kKnownExits[] = {
    {rest::exit_status::kSuccess, false, "success", "exited normally"},
    {rest::exit_status::kAborted, false, "released", "released or lost with its node"},
    {rest::exit_status::kPreempted, false, "preempted", "preempted by the resource manager"},
    {rest::exit_status::kKilledByAppMaster, false, "killed", "stopped by the application master"},
    {rest::exit_status::kKilledByResourceManager, false, "killed",
     "killed by the resource manager"},
    {rest::exit_status::kKilledExceededPmem, true, "memory",
     "killed for exceeding its memory limit"},
};

}  // namespace

ExitClassification classifyExit(int exitStatus, const std::string& diagnostics) {
  const std::string detail = diagnostics.empty() ? "" : ": " + diagnostics;
  for (const KnownExit& known : kKnownExits) {
    if (known.status == exitStatus) {
      return {known.executorFailure, known.cause, known.explanation + detail};
    }
  }
  return {true, "exit", "exited with status " + std::to_string(exitStatus) + detail};
}

std::optional<std::string> executorAboveMaximum(const rest::Resource& executor,
                                                const rest::Resource& maximum,
                                                const std::string& memoryKey,
                                                const std::string& coresKey) {
  if (maximum.memoryMb <= 0 || maximum.vCores <= 0) return std::nullopt;
  if (executor.memoryMb > maximum.memoryMb) {
    return memoryKey + ": each executor container asks for " + std::to_string(executor.memoryMb) +
           " MB, above the largest node's " + std::to_string(maximum.memoryMb) +
           " MB (the resource manager's maximum allocation)";
  }
  if (executor.vCores > maximum.vCores) {
    return coresKey + ": each executor container asks for " + std::to_string(executor.vCores) +
           " vCores, above the largest node's " + std::to_string(maximum.vCores) +
           " vCores (the resource manager's maximum allocation)";
  }
  return std::nullopt;
}

ContainerAllocator::ContainerAllocator(ContainerAllocatorConfig config, const Clock& clock)
    : config_(std::move(config)), clock_(clock) {
  ProfileContainers& defaultProfile = profiles_[0];
  defaultProfile.resource = config_.executorResource;
  defaultProfile.priority = config_.priority;
}

void ContainerAllocator::addProfile(int profileId, const rest::Resource& resource) {
  if (profiles_.count(profileId) != 0) return;
  ProfileContainers& profile = profiles_[profileId];
  profile.resource = resource;
  profile.priority = config_.priority + profileId;
}

void ContainerAllocator::setTargets(const std::map<int, int>& targets) {
  for (const auto& [profileId, target] : targets) {
    auto it = profiles_.find(profileId);
    if (it != profiles_.end()) it->second.target = target;
  }
}

int ContainerAllocator::target() const {
  int total = 0;
  for (const auto& [id, profile] : profiles_) total += profile.target;
  return total;
}

int ContainerAllocator::outstandingTotal() const {
  int total = 0;
  for (const auto& [id, profile] : profiles_) total += profile.outstanding;
  return total;
}

int ContainerAllocator::startingTotal() const {
  int total = 0;
  for (const auto& [id, profile] : profiles_) total += profile.starting;
  return total;
}

ContainerAsk ContainerAllocator::nextAsk(std::optional<AskChange>* change) {
  const int totalBefore = outstandingTotal();
  std::string requested, cancelled;
  for (auto& [profileId, profile] : profiles_) {
    const int running = profile.held - profile.starting;
    const int missing = profile.target - profile.outstanding - profile.starting - running;
    const int before = profile.outstanding;
    if (missing > 0) {
      profile.outstanding += missing;
    } else if (missing < 0) {
      profile.outstanding = std::max(0, profile.outstanding + missing);  // only pending go
    }
    if (profile.outstanding == before) continue;
    std::string counts = " (target " + std::to_string(profile.target) + ", " +
                         std::to_string(running) + " running, " + std::to_string(profile.starting) +
                         " starting)";
    if (profileId != 0) {
      counts += " of profile " + std::to_string(profileId) + " (" +
                std::to_string(profile.resource.vCores) + " vCores, " +
                std::to_string(profile.resource.memoryMb) + " MB)";
    }
    if (profile.outstanding > before) {
      requested += std::string(requested.empty() ? "" : "; ") + "requesting " +
                   std::to_string(profile.outstanding - before) + " more containers, " +
                   std::to_string(profile.outstanding) + " pending" + counts;
    } else {
      cancelled += std::string(cancelled.empty() ? "" : "; ") + "cancelling " +
                   std::to_string(before - profile.outstanding) + " pending container requests, " +
                   std::to_string(profile.outstanding) + " still pending" + counts;
    }
  }
  const int outstanding = outstandingTotal();
  if (outstanding > 0 && totalBefore == 0) outstandingSince_ = clock_.nowMs();
  if (outstanding == 0) outstandingSince_ = -1;
  if (change != nullptr && (!requested.empty() || !cancelled.empty())) {
    // One change per heartbeat: more asked when any profile asks more.
    *change = requested.empty()
                  ? AskChange{true, cancelled}
                  : AskChange{false, cancelled.empty() ? requested : requested + "; " + cancelled};
  }
  const ProfileContainers& defaultProfile = profiles_.at(0);
  ContainerAsk ask;
  ask.resource = defaultProfile.resource;
  ask.priority = defaultProfile.priority;
  ask.outstanding = defaultProfile.outstanding;
  ask.hostAsks = hostAsksOf(0, defaultProfile);
  for (const auto& [profileId, profile] : profiles_) {
    if (profileId == 0) continue;
    ask.profileAsks.push_back({profileId, profile.resource, profile.priority, profile.outstanding,
                               hostAsksOf(profileId, profile)});
  }
  ask.releases = std::move(toRelease_);
  toRelease_.clear();
  return ask;
}

std::vector<std::pair<std::string, int>> ContainerAllocator::hostAsksOf(
    int profileId, const ProfileContainers& profile) const {
  // Locality-preferred placement (Spark's LocalityPreferredContainerPlacementStrategy), per
  // resource profile as in Spark's YarnAllocator: the profile's own pending-task locality and
  // tasks per executor, less the profile's own executors on each node. Every heartbeat states
  // all the requests still wanted (they replace the previous ones), so all of `outstanding` is
  // placed afresh and no earlier request counts as pending on a node; the executors already on
  // each node (granted, started or not) are subtracted.
  auto hints = localityHints_.find(profileId);
  if (profile.outstanding <= 0 || hints == localityHints_.end() ||
      hints->second.tasksByHost.empty()) {
    return {};
  }
  PlacementInput placement;
  placement.containers = profile.outstanding;
  placement.localityAwareTasks = hints->second.localityAwareTasks;
  placement.tasksPerExecutor = std::max(1, hints->second.tasksPerExecutor);
  placement.tasksByHost = hints->second.tasksByHost;
  for (const auto& [containerId, held] : held_) {
    if (held.profileId == profileId) ++placement.executorsByHost[held.container.nodeId];
  }
  return hostAsksFor(localityOfRequestedContainers(placement));
}

void ContainerAllocator::onHeartbeatFailed(const ContainerAsk& ask) {
  // Ahead of releases decided since, in their original order; a container whose completion
  // has come in meanwhile needs no release any more.
  std::vector<std::string> again;
  for (const std::string& id : ask.releases) {
    if (releasing_.count(id) != 0) again.push_back(id);
  }
  toRelease_.insert(toRelease_.begin(), again.begin(), again.end());
}

int ContainerAllocator::profileForGrant(const rest::Resource& resource) const {
  std::optional<int> sameSize;
  for (const auto& [profileId, profile] : profiles_) {
    if (profile.resource.memoryMb != resource.memoryMb ||
        profile.resource.vCores != resource.vCores) {
      continue;
    }
    if (profile.outstanding > 0) return profileId;
    if (!sameSize) sameSize = profileId;
  }
  return sameSize.value_or(0);
}

std::optional<int> ContainerAllocator::profileOfResource(const rest::Resource& resource) const {
  for (const auto& [profileId, profile] : profiles_) {
    if (profile.resource.memoryMb == resource.memoryMb &&
        profile.resource.vCores == resource.vCores) {
      return profileId;
    }
  }
  return std::nullopt;
}

void ContainerAllocator::dropHeld(std::map<std::string, Held>::iterator it) {
  ProfileContainers& profile = profiles_[it->second.profileId];
  --profile.held;
  if (!it->second.registered) --profile.starting;
  containerByExecutor_.erase(it->second.executorId);
  held_.erase(it);
}

AllocatorActions ContainerAllocator::onHeartbeat(const HeartbeatResult& result) {
  AllocatorActions actions;
  for (const auto& container : result.granted) {
    // A grant answers a request of its size: Spark's YarnAllocator matches a container to the
    // ResourceProfile of its priority and resource.
    const int profileId = profileForGrant(container.resource);
    ProfileContainers& profile = profiles_[profileId];
    profile.outstanding = std::max(0, profile.outstanding - 1);
    if (profile.held >= profile.target) {
      // Granted after the target dropped (or twice): give it straight back.
      releasing_.insert(container.id);
      toRelease_.push_back(container.id);
      std::string why = "releasing surplus container " + container.id + " on " + container.nodeId +
                        " (target " + std::to_string(profile.target) + " already held";
      if (profileId != 0) why += " for profile " + std::to_string(profileId);
      actions.decisions.push_back(why + ")");
      continue;
    }
    const int number = nextExecutorNumber_++;
    auto named = result.executorIds.find(container.id);  // started by the backend itself
    const std::string executorId =
        named != result.executorIds.end() ? named->second : "e" + std::to_string(number);
    held_[container.id] = Held{executorId, container, false, profileId};
    containerByExecutor_[executorId] = container.id;
    ++profile.held;
    ++profile.starting;
    actions.launches.emplace_back(container, executorId);
  }
  // "Waiting since" counts from the last time the RM gave us anything.
  if (!result.granted.empty()) outstandingSince_ = outstandingTotal() > 0 ? clock_.nowMs() : -1;

  for (const auto& completed : result.completed) {
    if (releasing_.erase(completed.containerId) != 0) continue;  // ours to give back
    auto it = held_.find(completed.containerId);
    if (it == held_.end()) continue;
    LostExecutor lost;
    lost.executorId = it->second.executorId;
    lost.containerId = completed.containerId;
    lost.wasRegistered = it->second.registered;
    lost.exit = classifyExit(completed.exitStatus, completed.diagnostics);
    lost.reason = "executor " + lost.executorId + " (container " + completed.containerId + " on " +
                  it->second.container.nodeId + ") " + lost.exit.explanation;
    dropHeld(it);
    if (lost.exit.executorFailure) {
      if (auto failure = recordFailure(lost.reason)) actions.failApplication = failure;
    }
    actions.decisions.push_back(lost.reason);
    actions.lost.push_back(std::move(lost));
  }
  return actions;
}

std::optional<std::string> ContainerAllocator::recordFailure(const std::string& what) {
  const TimeMs now = clock_.nowMs();
  failureTimes_.push_back(now);
  if (config_.failuresValidityInterval != kInfiniteMs) {
    while (!failureTimes_.empty() &&
           failureTimes_.front() < now - config_.failuresValidityInterval) {
      failureTimes_.pop_front();
    }
  }
  // Spark's ApplicationMaster: failed once the count reaches executor.maxNumFailures.
  if (static_cast<int>(failureTimes_.size()) >= config_.maxNumExecutorFailures) {
    return "Max number of executor failures (" + std::to_string(config_.maxNumExecutorFailures) +
           ") reached; the last: " + what;
  }
  return std::nullopt;
}

bool ContainerAllocator::onExecutorRegistered(const std::string& executorId) {
  auto c = containerByExecutor_.find(executorId);
  if (c == containerByExecutor_.end()) return false;
  Held& held = held_.at(c->second);
  if (!held.registered) {
    held.registered = true;
    --profiles_[held.profileId].starting;
  }
  return true;
}

AllocatorActions ContainerAllocator::onLaunchFailed(const std::string& executorId,
                                                    const std::string& reason) {
  AllocatorActions actions;
  auto c = containerByExecutor_.find(executorId);
  if (c == containerByExecutor_.end()) return actions;
  const std::string containerId = c->second;
  Held& held = held_.at(containerId);
  LostExecutor lost;
  lost.executorId = executorId;
  lost.containerId = containerId;
  // The launch call can fail after the node started the container (its answer was lost: the
  // node manager died mid-call), and the executor may have registered meanwhile: then its
  // tasks are lost with it.
  lost.wasRegistered = held.registered;
  // Not the application's fault (a node manager refusing, unreachable, out of room): as in
  // Spark, neither an executor failure toward executor.maxNumFailures nor a failure of the
  // tasks it may have started.
  lost.exit = {false, "launch", "could not be started: " + reason};
  lost.reason = "executor " + executorId + " (container " + containerId + " on " +
                held.container.nodeId + ") " + lost.exit.explanation;
  dropHeld(held_.find(containerId));
  releasing_.insert(containerId);
  toRelease_.push_back(containerId);
  actions.decisions.push_back(lost.reason);
  actions.lost.push_back(std::move(lost));
  return actions;
}

void ContainerAllocator::adopt(const rest::Container& container, const std::string& executorId,
                               int profileId) {
  if (held_.count(container.id) != 0) return;
  if (profiles_.count(profileId) == 0) addProfile(profileId, container.resource);
  held_[container.id] = Held{executorId, container, false, profileId};
  containerByExecutor_[executorId] = container.id;
  ProfileContainers& profile = profiles_[profileId];
  ++profile.held;
  ++profile.starting;
}

void ContainerAllocator::releaseContainer(const std::string& containerId) {
  if (held_.count(containerId) != 0 || !releasing_.insert(containerId).second) return;
  toRelease_.push_back(containerId);
}

bool ContainerAllocator::release(const std::string& executorId) {
  auto c = containerByExecutor_.find(executorId);
  if (c == containerByExecutor_.end()) return false;
  const std::string containerId = c->second;
  dropHeld(held_.find(containerId));
  releasing_.insert(containerId);
  toRelease_.push_back(containerId);
  return true;
}

std::vector<std::string> ContainerAllocator::releaseAll() {
  std::vector<std::string> all;
  for (const auto& [containerId, held] : held_) {
    all.push_back(containerId);
    releasing_.insert(containerId);
  }
  held_.clear();
  containerByExecutor_.clear();
  for (auto& [id, profile] : profiles_) {
    profile.held = 0;
    profile.starting = 0;
    profile.target = 0;
    profile.outstanding = 0;
  }
  toRelease_.insert(toRelease_.end(), all.begin(), all.end());
  return all;
}

std::optional<std::string> ContainerAllocator::containerOf(const std::string& executorId) const {
  auto c = containerByExecutor_.find(executorId);
  if (c == containerByExecutor_.end()) return std::nullopt;
  return c->second;
}

int ContainerAllocator::profileOf(const std::string& executorId) const {
  auto c = containerByExecutor_.find(executorId);
  return c == containerByExecutor_.end() ? 0 : held_.at(c->second).profileId;
}

AllocatorSnapshot ContainerAllocator::snapshot() const {
  AllocatorSnapshot s;
  s.target = target();
  s.outstanding = outstandingTotal();
  s.starting = startingTotal();
  s.running = static_cast<int>(held_.size()) - s.starting;
  s.profiles = profiles_;
  s.releasing = static_cast<int>(releasing_.size());
  s.recentFailures = static_cast<int>(failureTimes_.size());
  s.outstandingSince = outstandingSince_;
  s.launched = nextExecutorNumber_ - 1;
  return s;
}

}  // namespace tide::am
