#include "am/containers/container_allocator.h"

#include "am/containers/container_placement.h"

#include <algorithm>
#include <climits>

namespace tide::am {

int defaultMaxNumExecutorFailures(int maxExecutors) {
  const int64_t twice = 2 * static_cast<int64_t>(maxExecutors);
  return static_cast<int>(std::max<int64_t>(3, std::min<int64_t>(twice, INT_MAX)));
}

ExitClassification classifyExit(int exitStatus, const std::string& diagnostics) {
  namespace es = rest::exit_status;
  const std::string detail = diagnostics.empty() ? "" : ": " + diagnostics;
  switch (exitStatus) {
    case es::kSuccess:
      return {false, "success", "exited normally" + detail};
    case es::kAborted:
      return {false, "released", "released or lost with its node" + detail};
    case es::kPreempted:
      return {false, "preempted", "preempted by the resource manager" + detail};
    case es::kKilledByAppMaster:
      return {false, "killed", "stopped by the application master" + detail};
    case es::kKilledByResourceManager:
      return {false, "killed", "killed by the resource manager" + detail};
    case es::kKilledExceededPmem:
      return {true, "memory", "killed for exceeding its memory limit" + detail};
    default:
      return {true, "exit", "exited with status " + std::to_string(exitStatus) + detail};
  }
}

std::optional<std::string> executorAboveMaximum(const rest::Resource& executor,
                                                const rest::Resource& maximum) {
  if (maximum.memoryMb <= 0 || maximum.vCores <= 0) return std::nullopt;
  if (executor.memoryMb > maximum.memoryMb) {
    return "executor.memory: each executor container asks for " +
           std::to_string(executor.memoryMb) + " MB, above the largest node's " +
           std::to_string(maximum.memoryMb) + " MB (the resource manager's maximum allocation)";
  }
  if (executor.vCores > maximum.vCores) {
    return "executor.cores: each executor container asks for " + std::to_string(executor.vCores) +
           " vCores, above the largest node's " + std::to_string(maximum.vCores) +
           " vCores (the resource manager's maximum allocation)";
  }
  return std::nullopt;
}

ContainerAllocator::ContainerAllocator(ContainerAllocatorConfig config, const Clock& clock)
    : config_(std::move(config)), clock_(clock) {}

ContainerAsk ContainerAllocator::nextAsk(std::optional<AskChange>* change) {
  const int running = static_cast<int>(held_.size()) - starting_;
  const int missing = target_ - outstanding_ - starting_ - running;
  const int before = outstanding_;
  if (missing > 0) {
    outstanding_ += missing;
  } else if (missing < 0) {
    outstanding_ = std::max(0, outstanding_ + missing);  // only pending requests go
  }
  if (outstanding_ > 0 && before == 0) outstandingSince_ = clock_.nowMs();
  if (outstanding_ == 0) outstandingSince_ = -1;
  if (change != nullptr && outstanding_ != before) {
    const std::string counts = " (target " + std::to_string(target_) + ", " +
                               std::to_string(running) + " running, " + std::to_string(starting_) +
                               " starting)";
    if (outstanding_ > before) {
      *change = AskChange{false, "requesting " + std::to_string(outstanding_ - before) +
                                     " more containers, " + std::to_string(outstanding_) +
                                     " pending" + counts};
    } else {
      *change = AskChange{true, "cancelling " + std::to_string(before - outstanding_) +
                                    " pending container requests, " + std::to_string(outstanding_) +
                                    " still pending" + counts};
    }
  }
  ContainerAsk ask;
  ask.resource = config_.executorResource;
  ask.priority = config_.priority;
  ask.outstanding = outstanding_;
  // Locality-preferred placement (Spark's LocalityPreferredContainerPlacementStrategy). Every
  // heartbeat states all the requests still wanted (they replace the previous ones), so all of
  // `outstanding` is placed afresh and no earlier request counts as pending on a node; the
  // executors already on each node (granted, started or not) are subtracted.
  if (outstanding_ > 0 && !localityHints_.empty()) {
    PlacementInput placement;
    placement.containers = outstanding_;
    placement.localityAwareTasks = localityAwareTasks_;
    placement.tasksPerExecutor = slotsPerExecutor_;
    placement.tasksByHost = localityHints_;
    for (const auto& [containerId, held] : held_)
      ++placement.executorsByHost[held.container.nodeId];
    ask.hostAsks = hostAsksFor(localityOfRequestedContainers(placement));
  }
  ask.releases = std::move(toRelease_);
  toRelease_.clear();
  return ask;
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

AllocatorActions ContainerAllocator::onHeartbeat(const HeartbeatResult& result) {
  AllocatorActions actions;
  for (const auto& container : result.granted) {
    outstanding_ = std::max(0, outstanding_ - 1);
    if (static_cast<int>(held_.size()) >= target_) {
      // Granted after the target dropped (or twice): give it straight back.
      releasing_.insert(container.id);
      toRelease_.push_back(container.id);
      actions.decisions.push_back("releasing surplus container " + container.id + " on " +
                                  container.nodeId + " (target " + std::to_string(target_) +
                                  " already held)");
      continue;
    }
    const int number = nextExecutorNumber_++;
    auto named = result.executorIds.find(container.id);  // started by the backend itself
    const std::string executorId =
        named != result.executorIds.end() ? named->second : "e" + std::to_string(number);
    held_[container.id] = Held{executorId, container, false};
    containerByExecutor_[executorId] = container.id;
    ++starting_;
    actions.launches.emplace_back(container, executorId);
  }
  // "Waiting since" counts from the last time the RM gave us anything.
  if (!result.granted.empty()) outstandingSince_ = outstanding_ > 0 ? clock_.nowMs() : -1;

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
    if (!it->second.registered) --starting_;
    containerByExecutor_.erase(it->second.executorId);
    held_.erase(it);
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
    --starting_;
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
  if (!held.registered) --starting_;
  held_.erase(containerId);
  containerByExecutor_.erase(c);
  releasing_.insert(containerId);
  toRelease_.push_back(containerId);
  actions.decisions.push_back(lost.reason);
  actions.lost.push_back(std::move(lost));
  return actions;
}

void ContainerAllocator::adopt(const rest::Container& container, const std::string& executorId) {
  if (held_.count(container.id) != 0) return;
  held_[container.id] = Held{executorId, container, false};
  containerByExecutor_[executorId] = container.id;
  ++starting_;
}

void ContainerAllocator::releaseContainer(const std::string& containerId) {
  if (held_.count(containerId) != 0 || !releasing_.insert(containerId).second) return;
  toRelease_.push_back(containerId);
}

bool ContainerAllocator::release(const std::string& executorId) {
  auto c = containerByExecutor_.find(executorId);
  if (c == containerByExecutor_.end()) return false;
  const std::string containerId = c->second;
  if (!held_.at(containerId).registered) --starting_;
  held_.erase(containerId);
  containerByExecutor_.erase(c);
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
  starting_ = 0;
  target_ = 0;
  outstanding_ = 0;
  toRelease_.insert(toRelease_.end(), all.begin(), all.end());
  return all;
}

std::optional<std::string> ContainerAllocator::containerOf(const std::string& executorId) const {
  auto c = containerByExecutor_.find(executorId);
  if (c == containerByExecutor_.end()) return std::nullopt;
  return c->second;
}

AllocatorSnapshot ContainerAllocator::snapshot() const {
  AllocatorSnapshot s;
  s.target = target_;
  s.outstanding = outstanding_;
  s.starting = starting_;
  s.running = static_cast<int>(held_.size()) - starting_;
  s.releasing = static_cast<int>(releasing_.size());
  s.recentFailures = static_cast<int>(failureTimes_.size());
  s.outstandingSince = outstandingSince_;
  s.launched = nextExecutorNumber_ - 1;
  return s;
}

}  // namespace tide::am
