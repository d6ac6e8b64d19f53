#include "am/scheduler/block_registry.h"

#include <algorithm>

namespace tide::am {

std::optional<int64_t> MapOutput::partitionSize(int64_t partition) const {
  auto it = std::lower_bound(
      blocks.begin(), blocks.end(), partition,
      [](const rest::BlockOutput& block, int64_t wanted) { return block.partition < wanted; });
  if (it == blocks.end() || it->partition != partition) return std::nullopt;
  return it->size;
}

void BlockRegistry::registerOutput(const std::string& stageId, int64_t numTasks, int64_t index,
                                   MapOutput output) {
  if (index < 0 || index >= numTasks) return;
  auto [it, added] = stages_.try_emplace(stageId);
  StageOutputs& stage = it->second;
  if (added) stage.registered = IndexSet(numTasks);
  if (index >= stage.registered.size()) return;
  stage.registered.insert(index);
  if (output.blocks.empty()) {
    stage.withBlocks.erase(index);
    stage.emptyOutputExecutors.insert(output.executorId);
    return;
  }
  std::sort(output.blocks.begin(), output.blocks.end(),
            [](const rest::BlockOutput& a, const rest::BlockOutput& b) {
              return a.partition < b.partition;
            });
  stage.withBlocks[index] = std::move(output);
}

const MapOutput* BlockRegistry::output(const std::string& stageId, int64_t index) const {
  static const MapOutput kWithoutBlocks;
  auto it = stages_.find(stageId);
  if (it == stages_.end() || !it->second.registered.contains(index)) return nullptr;
  auto found = it->second.withBlocks.find(index);
  return found == it->second.withBlocks.end() ? &kWithoutBlocks : &found->second;
}

void BlockRegistry::forEachInput(const std::string& stageId,
                                 const std::function<void(int64_t, const MapOutput*)>& fn) const {
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return;
  const StageOutputs& stage = it->second;
  auto next = stage.withBlocks.begin();
  // Merges the missing runs with the outputs holding blocks, by index.
  const auto blocksBefore = [&](int64_t index) {
    for (; next != stage.withBlocks.end() && next->first < index; ++next) {
      fn(next->first, &next->second);
    }
  };
  stage.registered.forEachAbsentRun([&](int64_t first, int64_t last) {
    blocksBefore(first);
    for (int64_t index = first; index <= last; ++index) fn(index, nullptr);
    return true;
  });
  blocksBefore(INT64_MAX);
}

bool BlockRegistry::hasStage(const std::string& stageId) const {
  return stages_.count(stageId) != 0;
}

int64_t BlockRegistry::numTasks(const std::string& stageId) const {
  auto it = stages_.find(stageId);
  return it == stages_.end() ? 0 : it->second.registered.size();
}

std::vector<int64_t> BlockRegistry::missingOutputs(const std::string& stageId,
                                                   int64_t limit) const {
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return {};
  return it->second.registered.absent(limit);
}

int64_t BlockRegistry::missingCount(const std::string& stageId) const {
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return 0;
  return it->second.registered.size() - it->second.registered.count();
}

int64_t BlockRegistry::stageBytes(const std::string& stageId) const {
  int64_t bytes = 0;
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return bytes;
  for (const auto& [index, output] : it->second.withBlocks) {
    for (const rest::BlockOutput& block : output.blocks) bytes += block.size;
  }
  return bytes;
}

std::vector<std::string> BlockRegistry::stageExecutors(const std::string& stageId) const {
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return {};
  std::set<std::string> executors = it->second.emptyOutputExecutors;
  for (const auto& [index, output] : it->second.withBlocks) executors.insert(output.executorId);
  return std::vector<std::string>(executors.begin(), executors.end());
}

std::map<std::string, std::vector<int64_t>> BlockRegistry::removeExecutor(
    const std::string& executorId) {
  return removeOutputsOn(executorId, nullptr);
}

std::map<std::string, std::vector<int64_t>> BlockRegistry::removeMissingOn(
    const std::string& executorId, const std::set<std::string>& held) {
  return removeOutputsOn(executorId, &held);
}

std::map<std::string, std::vector<int64_t>> BlockRegistry::removeOutputsOn(
    const std::string& executorId, const std::set<std::string>* held) {
  std::map<std::string, std::vector<int64_t>> lost;
  for (auto& [stageId, stage] : stages_) {
    for (auto it = stage.withBlocks.begin(); it != stage.withBlocks.end();) {
      const MapOutput& output = it->second;
      bool whole = false;
      if (output.executorId == executorId && held != nullptr) {
        const std::string task = stageId + "/" + std::to_string(it->first) + "/part-";
        whole = std::all_of(output.blocks.begin(), output.blocks.end(),
                            [&](const rest::BlockOutput& b) {
                              return held->count(task + std::to_string(b.partition)) != 0;
                            });
      }
      if (output.executorId != executorId || whole) {
        ++it;
        continue;
      }
      stage.registered.erase(it->first);
      lost[stageId].push_back(it->first);
      it = stage.withBlocks.erase(it);
    }
  }
  return lost;
}

std::set<std::string> BlockRegistry::dropStage(const std::string& stageId) {
  std::set<std::string> holders;
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return holders;
  const std::vector<std::string> executors = stageExecutors(stageId);
  holders.insert(executors.begin(), executors.end());
  stages_.erase(it);
  return holders;
}

bool BlockRegistry::moveOutput(const std::string& stageId, int64_t index,
                               const std::string& fromExecutor, const std::string& toExecutor,
                               const std::string& toNode) {
  auto stage = stages_.find(stageId);
  if (stage == stages_.end()) return false;
  auto output = stage->second.withBlocks.find(index);
  if (output == stage->second.withBlocks.end() || output->second.executorId != fromExecutor) {
    return false;
  }
  output->second.executorId = toExecutor;
  output->second.node = toNode;
  return true;
}

std::vector<std::pair<std::string, int64_t>> BlockRegistry::outputsOn(
    const std::string& executorId) const {
  std::vector<std::pair<std::string, int64_t>> outputs;
  for (const auto& [stageId, stage] : stages_) {
    for (const auto& [index, output] : stage.withBlocks) {
      if (output.executorId == executorId) outputs.emplace_back(stageId, index);
    }
  }
  return outputs;
}

std::vector<std::string> BlockRegistry::stagesOn(const std::string& executorId) const {
  std::vector<std::string> stages;
  for (const auto& [stageId, stage] : stages_) {
    const bool holds =
        stage.emptyOutputExecutors.count(executorId) != 0 ||
        std::any_of(stage.withBlocks.begin(), stage.withBlocks.end(),
                    [&](const auto& entry) { return entry.second.executorId == executorId; });
    if (holds) stages.push_back(stageId);
  }
  return stages;
}

std::map<std::string, int64_t> BlockRegistry::partitionBytesBy(std::string MapOutput::*place,
                                                               const std::string& stageId,
                                                               int64_t partition) const {
  std::map<std::string, int64_t> bytes;
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return bytes;
  for (const auto& [index, output] : it->second.withBlocks) {
    if (std::optional<int64_t> size = output.partitionSize(partition)) {
      bytes[output.*place] += *size;
    }
  }
  return bytes;
}

}  // namespace tide::am
