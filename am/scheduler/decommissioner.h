#pragma once

// Graceful decommissioning of executors, as the AM runs it (Spark's decommissionExecutors and
// BlockManagerDecommissioner): an executor the allocation policy lets go with
// decommission.enabled first stops taking tasks, then hands its task outputs (shuffle output a
// later stage reads, a persisted stage's cached blocks) to peers, each peer fetching one task
// output at a time from the leaving executor's block server; the AM's block registry then
// places the output on the peer, and the executor exits once nothing is left to move.
//
// Nothing waits forever and nothing is lost: a migration that fails (the peer could not fetch,
// the peer died) goes to another peer, at most storage.decommission.maxReplicationFailuresPerBlock
// times; an output no peer took stays where it is and goes with the executor, to be made again
// from lineage where still needed; and a decommissioning is over after
// executor.decommission.forceKillTimeout whatever is still in flight.
//
// With a fallback storage (storage.decommission.fallbackStorage.path), as Spark's FallbackStorage:
// shuffle output that no peer can take (there is none) or whose migration to a peer failed is
// copied there by the leaving executor itself, and readers fetch it from there; only a failed
// copy to the fallback storage leaves it to lineage. Cached blocks never go there (Spark's
// fallback storage holds shuffle blocks only).
//
// Pure bookkeeping: no threads, no I/O, time from the injected Clock; the caller serialises
// calls and carries out what it says (replies to peers, registry moves, releases).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rest/messages/executor.h"

namespace tide {
class Properties;
}

namespace tide::am {

struct DecommissionConfig {
  bool storageEnabled = false;           // storage.decommission.enabled
  bool shuffleBlocks = true;             // storage.decommission.shuffleBlocks.enabled
  bool cachedBlocks = true;              // storage.decommission.rddBlocks.enabled
  int maxFailuresPerOutput = 3;          // storage.decommission.maxReplicationFailuresPerBlock
  DurationMs forceKillTimeout = 120000;  // executor.decommission.forceKillTimeout
  // storage.decommission.fallbackStorage.path, absolute and without a trailing '/'; "": none.
  std::string fallbackPath;
  bool fallbackCleanUp = false;  // storage.decommission.fallbackStorage.cleanUp

  // Throws ConfigError naming the key for a bad value.
  static DecommissionConfig fromProperties(const Properties& props);
};

// One task output on a leaving executor.
struct OutputToMigrate {
  std::string stageId;  // "<jobId>/<stage>", as the block registry names it
  int64_t index = 0;
  bool cached = false;              // a persisted stage's; else shuffle output a stage reads
  std::vector<std::string> blocks;  // its block paths, "<jobId>/<stage>/<index>/part-<n>"
};

// A migration handed to a peer, or to the leaving executor itself to copy into the fallback
// storage (`toFallback`; `peer` is then `fromExecutor`).
struct MigrationAssignment {
  int64_t id = 0;
  std::string fromExecutor;
  std::string peer;
  OutputToMigrate output;
  bool toFallback = false;
};

// How the decision log names the fallback storage as a place blocks went.
inline constexpr const char* kFallbackStorageName = "the fallback storage";

// A decommissioning that is over: the executor may go.
struct FinishedDecommission {
  std::string executorId;
  bool finished = false;  // every output it was to hand over was (Spark's decommissionFinished)
  std::string why;        // "e3 decommissioned: 12 shuffle blocks migrated to e1"
};

class Decommissioner {
 public:
  Decommissioner(DecommissionConfig config, const Clock& clock);

  const DecommissionConfig& config() const { return config_; }

  // Starts decommissioning `executorId`, which holds `outputs`; those the configuration migrates
  // go to `peers` (live executors that are not leaving), spread round robin, or with no peer
  // (shuffle output, with a fallback storage) to the fallback storage. Returns the sentence for
  // the decision log ("e3 decommissioning: migrating 12 shuffle blocks to e1"). With nothing to
  // migrate, or nowhere to put it, the decommissioning is over at once (takeFinished).
  std::string start(const std::string& executorId, const std::vector<OutputToMigrate>& outputs,
                    const std::vector<std::string>& peers);
  bool isDecommissioning(const std::string& executorId) const {
    return leaving_.count(executorId) != 0;
  }

  // The migrations `peer` has not been handed yet (for a leaving executor: its copies to the
  // fallback storage); from now on they are in flight.
  std::vector<MigrationAssignment> takeFor(const std::string& peer);
  bool hasWorkFor(const std::string& peer) const;
  // What `peer` reports of a migration. Returns the assignment when it succeeded (the caller
  // moves the output to the peer, or to the fallback storage, in its registry). A failed one
  // goes to the fallback storage when there is one and it is shuffle output (as Spark's
  // ShuffleMigrationRunnable on an IOException), else to another of `peers` it has not failed
  // on, up to maxFailuresPerOutput failures; a failed copy to the fallback storage, or the last
  // failure, leaves it to lineage. Reports of unknown ids (their decommissioning is over) or from
  // another peer change nothing.
  std::optional<MigrationAssignment> onResult(const std::string& peer,
                                              const rest::BlockMigrationResult& result,
                                              const std::vector<std::string>& peers);
  // An executor is gone. A leaving one: its decommissioning ends, unfinished (what it still
  // held went with it). A peer: its migrations fail and go to other `peers`.
  void onExecutorGone(const std::string& executorId, const std::vector<std::string>& peers);
  // Decommissionings that are over (everything migrated or given up, or past forceKillTimeout),
  // each once.
  std::vector<FinishedDecommission> takeFinished();

  // For the status documents: how far an executor's decommissioning is.
  struct Progress {
    TimeMs startedAt = 0;
    int64_t outputsLeft = 0;  // pending or in flight
    int64_t blocksMigrated = 0;
    int64_t outputsFailed = 0;  // left to lineage
  };
  std::optional<Progress> progressOf(const std::string& executorId) const;

 private:
  struct Item {
    OutputToMigrate output;
    std::string peer;  // "" while no peer is chosen; the leaving executor for `toFallback`
    bool toFallback = false;
    bool inFlight = false;
    int failures = 0;
    std::set<std::string> triedPeers;
    std::string lastFailure;
  };
  struct Leaving {
    TimeMs startedAt = 0;
    std::map<int64_t, Item> items;  // by id: pending or in flight
    int64_t shuffleBlocksMigrated = 0;
    int64_t cachedBlocksMigrated = 0;
    std::set<std::string> peersUsed;
    int64_t outputsFailed = 0;
    std::string lastFailure;
  };

  // Gives the item a peer it has not failed on, or gives it up (false).
  bool assignPeer(Item& item, const std::vector<std::string>& peers);
  // Hands the item of leaving executor `executorId` to the fallback storage; false when there
  // is none or the item may not go there (cached blocks, or it failed there already).
  bool assignFallback(Item& item, const std::string& executorId);
  void fail(const std::string& executorId, Leaving& leaving, int64_t id, const std::string& reason,
            const std::vector<std::string>& peers);
  // Ends the decommissioning once nothing is left to move.
  void finishIfDone(const std::string& executorId);
  void finish(const std::string& executorId, bool forced);

  DecommissionConfig config_;
  const Clock& clock_;
  std::map<std::string, Leaving> leaving_;
  std::map<int64_t, std::string> owners_;  // migration id -> the leaving executor
  int64_t nextId_ = 1;
  uint64_t nextPeer_ = 0;  // round robin over the peers
  std::vector<FinishedDecommission> finished_;
};

}  // namespace tide::am
