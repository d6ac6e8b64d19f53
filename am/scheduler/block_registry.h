#pragma once

// Where every task output block of the application is (Spark's MapOutputTracker): for each
// stage ("<jobId>/<stage>") and each of its task indices, the executor holding that task's
// output and the size of each partition it wrote. The scheduler builds downstream tasks'
// inputs and locality preferences from it, and learns from it which outputs went with a lost
// executor. Pure bookkeeping: no threads, no I/O.
//
// Memory goes by the outputs that hold blocks: a task that wrote nothing (a noop, a final
// stage's task) is one index in its stage's IndexSet of registered outputs, so a stage of 10^9
// such tasks costs a few KiB; an output with blocks keeps its place and partition sizes.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "am/scheduler/index_set.h"
#include "rest/messages/executor.h"

namespace tide::am {

// The holder of outputs copied to the fallback storage by a decommissioning executor (Spark's
// FallbackStorage.FALLBACK_BLOCK_MANAGER_ID, whose executor id is "fallback"): on no executor,
// so no executor's loss takes them; readers fetch them from the fallback directory.
inline constexpr const char* kFallbackStorageId = "fallback";

// One task's output: where it is and what it holds.
struct MapOutput {
  std::string executorId;
  std::string node;                       // the executor's node (its host for locality)
  std::vector<rest::BlockOutput> blocks;  // by partition, ascending

  // The size of one partition, or nullopt when the task wrote none for it.
  std::optional<int64_t> partitionSize(int64_t partition) const;
};

class BlockRegistry {
 public:
  // Records (or replaces: a re-run of a lost task) the output of task `index` of a stage with
  // `numTasks` tasks.
  void registerOutput(const std::string& stageId, int64_t numTasks, int64_t index,
                      MapOutput output);
  // The output of one task, or null when it has none (not run yet, or lost). An output
  // without blocks is not kept: it comes back as an empty MapOutput, its place unknown.
  const MapOutput* output(const std::string& stageId, int64_t index) const;
  // Calls fn(index, output) in ascending index for every task of the stage without an output
  // (output null) or with an output holding blocks; outputs without blocks are skipped. What a
  // reader of the stage has to fetch, in time by those outputs, not by the stage's size.
  void forEachInput(const std::string& stageId,
                    const std::function<void(int64_t, const MapOutput*)>& fn) const;
  bool hasStage(const std::string& stageId) const;
  int64_t numTasks(const std::string& stageId) const;  // 0 for an unknown stage
  // Task indices of a known stage without an output, ascending (at most `limit`).
  std::vector<int64_t> missingOutputs(const std::string& stageId, int64_t limit = INT64_MAX) const;
  int64_t missingCount(const std::string& stageId) const;
  // Bytes of a stage's outputs and the executors that hold (or wrote) any, ascending.
  int64_t stageBytes(const std::string& stageId) const;
  std::vector<std::string> stageExecutors(const std::string& stageId) const;

  // Forgets every output with blocks on the executor; returns the lost task indices by stage.
  std::map<std::string, std::vector<int64_t>> removeExecutor(const std::string& executorId);
  // Forgets every output on the executor of which a block is not in `held` (block paths
  // "<stageId>/<index>/part-<n>", what the executor reports it holds); returns the lost task
  // indices by stage.
  std::map<std::string, std::vector<int64_t>> removeMissingOn(const std::string& executorId,
                                                              const std::set<std::string>& held);
  // Forgets a stage; returns the executors that held any of its outputs.
  std::set<std::string> dropStage(const std::string& stageId);

  // Graceful decommissioning: the output of task `index` now lives on `toExecutor` (a peer took
  // its blocks from `fromExecutor`). False, and nothing changes, when that output is no longer
  // the one on `fromExecutor` (lost or made again meanwhile): the copy is then not used.
  bool moveOutput(const std::string& stageId, int64_t index, const std::string& fromExecutor,
                  const std::string& toExecutor, const std::string& toNode);
  // The outputs holding blocks on the executor, by stage and ascending index.
  std::vector<std::pair<std::string, int64_t>> outputsOn(const std::string& executorId) const;

  // Stages with at least one output on the executor, ascending.
  std::vector<std::string> stagesOn(const std::string& executorId) const;
  // Bytes of `partition` over a stage's outputs, per executor and per node.
  std::map<std::string, int64_t> partitionBytesByExecutor(const std::string& stageId,
                                                          int64_t partition) const {
    return partitionBytesBy(&MapOutput::executorId, stageId, partition);
  }
  std::map<std::string, int64_t> partitionBytesByNode(const std::string& stageId,
                                                      int64_t partition) const {
    return partitionBytesBy(&MapOutput::node, stageId, partition);
  }

 private:
  // Forgets the outputs holding blocks on the executor: all of them without `held`, else those
  // with a block not in it.
  std::map<std::string, std::vector<int64_t>> removeOutputsOn(const std::string& executorId,
                                                              const std::set<std::string>* held);
  // Bytes of `partition` summed by the output's place (its executor or its node).
  std::map<std::string, int64_t> partitionBytesBy(std::string MapOutput::*place,
                                                  const std::string& stageId,
                                                  int64_t partition) const;

  struct StageOutputs {
    IndexSet registered;                      // tasks with an output, blocks or not
    std::map<int64_t, MapOutput> withBlocks;  // the outputs holding blocks, by index
    // Executors that registered an output without blocks: such an output is never lost, so
    // its executor stays one of the stage's (as for stagesOn) until the stage is dropped.
    std::set<std::string> emptyOutputExecutors;
  };

  std::map<std::string, StageOutputs> stages_;
};

}  // namespace tide::am
