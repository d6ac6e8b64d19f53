#pragma once

// Where every task output block of the application is (Spark's MapOutputTracker): for each
// stage ("<jobId>/<stage>") and each of its task indices, the executor holding that task's
// output and the size of each partition it wrote. The scheduler builds downstream tasks'
// inputs and locality preferences from it, and learns from it which outputs went with a lost
// executor. Pure bookkeeping: no threads, no I/O.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rest/messages/executor.h"

namespace tide::am {

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
  // The output of one task, or null when it has none (not run yet, or lost).
  const MapOutput* output(const std::string& stageId, int64_t index) const;
  bool hasStage(const std::string& stageId) const;
  int64_t numTasks(const std::string& stageId) const;  // 0 for an unknown stage
  // Task indices of a known stage without an output, ascending.
  std::vector<int64_t> missingOutputs(const std::string& stageId) const;

  // Forgets every output with blocks on the executor; returns the lost task indices by stage.
  std::map<std::string, std::vector<int64_t>> removeExecutor(const std::string& executorId);
  // Forgets every output on the executor of which a block is not in `held` (block paths
  // "<stageId>/<index>/part-<n>", what the executor reports it holds); returns the lost task
  // indices by stage.
  std::map<std::string, std::vector<int64_t>> removeMissingOn(const std::string& executorId,
                                                              const std::set<std::string>& held);
  // Forgets a stage; returns the executors that held any of its outputs.
  std::set<std::string> dropStage(const std::string& stageId);

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
  // Bytes of `partition` summed by the output's place (its executor or its node).
  std::map<std::string, int64_t> partitionBytesBy(std::string MapOutput::*place,
                                                  const std::string& stageId,
                                                  int64_t partition) const;

  std::map<std::string, std::vector<std::optional<MapOutput>>> stages_;
};

}  // namespace tide::am
