#include "am/scheduler/decommissioner.h"

#include <algorithm>
#include <utility>

#include "common/config.h"

namespace tide::am {
namespace {

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "12 shuffle blocks", "3 cached blocks", "12 shuffle blocks and 3 cached blocks".
std::string blocksPhrase(int64_t shuffle, int64_t cached) {
  std::string phrase;
  if (shuffle > 0) phrase = plural(shuffle, "shuffle block", "shuffle blocks");
  if (cached > 0) {
    if (!phrase.empty()) phrase += " and ";
    phrase += plural(cached, "cached block", "cached blocks");
  }
  return phrase.empty() ? "no blocks" : phrase;
}

std::string joined(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

DecommissionConfig DecommissionConfig::fromProperties(const Properties& props) {
  DecommissionConfig config;
  config.storageEnabled = props.getBool("storage.decommission.enabled");
  config.shuffleBlocks = props.getBool("storage.decommission.shuffleBlocks.enabled");
  config.cachedBlocks = props.getBool("storage.decommission.rddBlocks.enabled");
  config.maxFailuresPerOutput =
      static_cast<int>(props.getInt("storage.decommission.maxReplicationFailuresPerBlock"));
  config.forceKillTimeout = props.getDuration("executor.decommission.forceKillTimeout");
  std::string fallback =
      props.getOptionalString("storage.decommission.fallbackStorage.path").value_or("");
  // The AM and every executor read it, each from its own working directory.
  if (!fallback.empty() && fallback.front() != '/') {
    throw ConfigError(props.describe("storage.decommission.fallbackStorage.path") +
                      ": must be an absolute path (the AM and the executors all reach it)");
  }
  while (fallback.size() > 1 && fallback.back() == '/') fallback.pop_back();
  config.fallbackPath = fallback;
  config.fallbackCleanUp = props.getBool("storage.decommission.fallbackStorage.cleanUp");
  return config;
}

Decommissioner::Decommissioner(DecommissionConfig config, const Clock& clock)
    : config_(config), clock_(clock) {}

std::string Decommissioner::start(const std::string& executorId,
                                  const std::vector<OutputToMigrate>& outputs,
                                  const std::vector<std::string>& peers) {
  if (isDecommissioning(executorId)) return executorId + " is already decommissioning";
  Leaving& leaving = leaving_[executorId];
  leaving.startedAt = clock_.nowMs();
  int64_t shuffle = 0;
  int64_t cached = 0;
  int64_t notMoved = 0;  // blocks the configuration does not migrate
  int64_t noPeer = 0;    // blocks it would, with no peer to take them
  int64_t fallback = 0;  // of which the fallback storage takes
  for (const OutputToMigrate& output : outputs) {
    const int64_t blocks = static_cast<int64_t>(output.blocks.size());
    if (!config_.storageEnabled ||
        !(output.cached ? config_.cachedBlocks : config_.shuffleBlocks)) {
      notMoved += blocks;
      continue;
    }
    Item item;
    item.output = output;
    if (!assignPeer(item, peers)) {
      noPeer += blocks;
      if (!assignFallback(item, executorId)) {
        ++leaving.outputsFailed;
        continue;
      }
      fallback += blocks;
    } else {
      (output.cached ? cached : shuffle) += blocks;
    }
    const int64_t id = nextId_++;
    owners_[id] = executorId;
    leaving.items.emplace(id, std::move(item));
  }
  std::set<std::string> targets;
  for (const auto& [id, item] : leaving.items) {
    if (!item.toFallback) targets.insert(item.peer);
  }
  std::vector<std::string> parts;
  if (!targets.empty()) {
    parts.push_back("migrating " + blocksPhrase(shuffle, cached) + " to " + joined(targets));
  }
  if (fallback > 0) {
    parts.push_back("migrating " + blocksPhrase(fallback, 0) + " to " + kFallbackStorageName +
                    " (no other executor to take them)");
    noPeer -= fallback;
  }
  if (notMoved > 0) {
    const std::string key = !config_.storageEnabled  ? "storage.decommission.enabled"
                            : !config_.shuffleBlocks ? "storage.decommission.shuffleBlocks.enabled"
                                                     : "storage.decommission.rddBlocks.enabled";
    parts.push_back(plural(notMoved, "block", "blocks") + " not migrated (" + key +
                    "=false), made again from lineage where still needed");
  }
  if (noPeer > 0) {
    leaving.lastFailure = "no other executor to take them";
    parts.push_back(plural(noPeer, "block", "blocks") +
                    " not migrated (no other executor to take them), made again from lineage "
                    "where still needed");
  }
  std::string why = executorId + " decommissioning: ";
  if (parts.empty()) why += "no blocks to migrate";
  for (size_t i = 0; i < parts.size(); ++i) why += (i > 0 ? "; " : "") + parts[i];
  finishIfDone(executorId);
  return why;
}

bool Decommissioner::assignPeer(Item& item, const std::vector<std::string>& peers) {
  std::vector<const std::string*> eligible;
  for (const std::string& peer : peers) {
    if (item.triedPeers.count(peer) == 0 && leaving_.count(peer) == 0) eligible.push_back(&peer);
  }
  if (eligible.empty()) return false;
  item.peer = *eligible[nextPeer_++ % eligible.size()];
  item.triedPeers.insert(item.peer);
  item.inFlight = false;
  return true;
}

bool Decommissioner::assignFallback(Item& item, const std::string& executorId) {
  if (config_.fallbackPath.empty() || item.output.cached || item.toFallback) return false;
  item.peer = executorId;  // it copies its own blocks there
  item.toFallback = true;
  item.inFlight = false;
  return true;
}

std::vector<MigrationAssignment> Decommissioner::takeFor(const std::string& peer) {
  std::vector<MigrationAssignment> assignments;
  for (auto& [executorId, leaving] : leaving_) {
    for (auto& [id, item] : leaving.items) {
      if (item.peer != peer || item.inFlight) continue;
      item.inFlight = true;
      assignments.push_back({id, executorId, peer, item.output, item.toFallback});
    }
  }
  return assignments;
}

bool Decommissioner::hasWorkFor(const std::string& peer) const {
  for (const auto& [executorId, leaving] : leaving_) {
    for (const auto& [id, item] : leaving.items) {
      if (item.peer == peer && !item.inFlight) return true;
    }
  }
  return false;
}

std::optional<MigrationAssignment> Decommissioner::onResult(
    const std::string& peer, const rest::BlockMigrationResult& result,
    const std::vector<std::string>& peers) {
  auto owner = owners_.find(result.id);
  if (owner == owners_.end()) return std::nullopt;
  const std::string executorId = owner->second;
  Leaving& leaving = leaving_.at(executorId);
  auto found = leaving.items.find(result.id);
  if (found == leaving.items.end() || found->second.peer != peer || !found->second.inFlight) {
    return std::nullopt;
  }
  const bool toFallback = found->second.toFallback;
  if (!result.ok) {
    fail(executorId, leaving, result.id,
         (toFallback ? std::string(kFallbackStorageName) : "peer " + peer) + ": " + result.reason,
         peers);
    finishIfDone(executorId);
    return std::nullopt;
  }
  MigrationAssignment done{result.id, executorId, peer, std::move(found->second.output),
                           toFallback};
  (done.output.cached ? leaving.cachedBlocksMigrated : leaving.shuffleBlocksMigrated) +=
      static_cast<int64_t>(done.output.blocks.size());
  leaving.peersUsed.insert(toFallback ? kFallbackStorageName : peer);
  leaving.items.erase(found);
  owners_.erase(owner);
  finishIfDone(executorId);
  return done;
}

void Decommissioner::fail(const std::string& executorId, Leaving& leaving, int64_t id,
                          const std::string& reason, const std::vector<std::string>& peers) {
  Item& item = leaving.items.at(id);
  ++item.failures;
  item.lastFailure = reason;
  if (!item.toFallback) {
    // As Spark: shuffle output a peer could not take goes to the fallback storage at once.
    if (assignFallback(item, executorId)) return;
    if (item.failures < config_.maxFailuresPerOutput && assignPeer(item, peers)) return;
  }
  // Given up: the output stays on the leaving executor and goes with it (lineage).
  leaving.lastFailure = reason;
  ++leaving.outputsFailed;
  leaving.items.erase(id);
  owners_.erase(id);
}

void Decommissioner::onExecutorGone(const std::string& executorId,
                                    const std::vector<std::string>& peers) {
  if (isDecommissioning(executorId)) {
    Leaving& leaving = leaving_.at(executorId);
    leaving.lastFailure = executorId + " went before its migrations ended";
    leaving.outputsFailed += static_cast<int64_t>(leaving.items.size());
    for (const auto& [id, item] : leaving.items) owners_.erase(id);
    leaving.items.clear();
    finish(executorId, false);
  }
  for (auto& [leavingId, leaving] : leaving_) {
    std::vector<int64_t> lost;
    for (const auto& [id, item] : leaving.items) {
      if (item.peer == executorId) lost.push_back(id);
    }
    for (int64_t id : lost) {
      fail(leavingId, leaving, id, "peer " + executorId + " is gone", peers);
    }
  }
  std::vector<std::string> done;
  for (const auto& [leavingId, leaving] : leaving_) {
    if (leaving.items.empty()) done.push_back(leavingId);
  }
  for (const std::string& id : done) finishIfDone(id);
}

void Decommissioner::finishIfDone(const std::string& executorId) {
  auto it = leaving_.find(executorId);
  if (it != leaving_.end() && it->second.items.empty()) finish(executorId, false);
}

void Decommissioner::finish(const std::string& executorId, bool forced) {
  auto it = leaving_.find(executorId);
  if (it == leaving_.end()) return;
  Leaving& leaving = it->second;
  FinishedDecommission done;
  done.executorId = executorId;
  const int64_t left = static_cast<int64_t>(leaving.items.size());
  done.finished = !forced && leaving.outputsFailed == 0 && left == 0;
  done.why = executorId + " decommissioned: ";
  const int64_t migrated = leaving.shuffleBlocksMigrated + leaving.cachedBlocksMigrated;
  if (migrated > 0) {
    done.why += blocksPhrase(leaving.shuffleBlocksMigrated, leaving.cachedBlocksMigrated) +
                " migrated to " + joined(leaving.peersUsed);
  } else {
    done.why += "nothing migrated";
  }
  if (forced) {
    done.why += "; forced out after " + formatDuration(config_.forceKillTimeout) +
                " (executor.decommission.forceKillTimeout) with " +
                plural(left, "task output", "task outputs") + " still migrating";
  }
  if (leaving.outputsFailed > 0 && !leaving.lastFailure.empty()) {
    done.why += "; " + plural(leaving.outputsFailed, "task output", "task outputs") +
                " not migrated (" + leaving.lastFailure + "), made again from lineage";
  }
  for (const auto& [id, item] : leaving.items) owners_.erase(id);
  finished_.push_back(std::move(done));
  leaving_.erase(it);
}

std::vector<FinishedDecommission> Decommissioner::takeFinished() {
  const TimeMs now = clock_.nowMs();
  std::vector<std::string> overdue;
  for (const auto& [executorId, leaving] : leaving_) {
    if (now - leaving.startedAt >= config_.forceKillTimeout) overdue.push_back(executorId);
  }
  for (const std::string& executorId : overdue) finish(executorId, true);
  std::vector<FinishedDecommission> done;
  done.swap(finished_);
  return done;
}

std::optional<Decommissioner::Progress> Decommissioner::progressOf(
    const std::string& executorId) const {
  auto it = leaving_.find(executorId);
  if (it == leaving_.end()) return std::nullopt;
  Progress progress;
  progress.startedAt = it->second.startedAt;
  progress.outputsLeft = static_cast<int64_t>(it->second.items.size());
  progress.blocksMigrated = it->second.shuffleBlocksMigrated + it->second.cachedBlocksMigrated;
  progress.outputsFailed = it->second.outputsFailed;
  return progress;
}

}  // namespace tide::am
