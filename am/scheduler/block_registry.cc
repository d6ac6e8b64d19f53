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
  std::vector<std::optional<MapOutput>>& outputs = stages_[stageId];
  if (outputs.size() < static_cast<size_t>(numTasks)) {
    outputs.resize(static_cast<size_t>(numTasks));
  }
  std::sort(output.blocks.begin(), output.blocks.end(),
            [](const rest::BlockOutput& a, const rest::BlockOutput& b) {
              return a.partition < b.partition;
            });
  outputs[static_cast<size_t>(index)] = std::move(output);
}

const MapOutput* BlockRegistry::output(const std::string& stageId, int64_t index) const {
  auto it = stages_.find(stageId);
  if (it == stages_.end() || index < 0 || static_cast<size_t>(index) >= it->second.size()) {
    return nullptr;
  }
  const std::optional<MapOutput>& output = it->second[static_cast<size_t>(index)];
  return output ? &*output : nullptr;
}

bool BlockRegistry::hasStage(const std::string& stageId) const {
  return stages_.count(stageId) != 0;
}

int64_t BlockRegistry::numTasks(const std::string& stageId) const {
  auto it = stages_.find(stageId);
  return it == stages_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

std::vector<int64_t> BlockRegistry::missingOutputs(const std::string& stageId) const {
  std::vector<int64_t> missing;
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return missing;
  for (size_t i = 0; i < it->second.size(); ++i) {
    if (!it->second[i]) missing.push_back(static_cast<int64_t>(i));
  }
  return missing;
}

std::map<std::string, std::vector<int64_t>> BlockRegistry::removeExecutor(
    const std::string& executorId) {
  std::map<std::string, std::vector<int64_t>> lost;
  for (auto& [stageId, outputs] : stages_) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      // An output without blocks (a task that wrote nothing) has nothing to lose.
      if (outputs[i] && outputs[i]->executorId == executorId && !outputs[i]->blocks.empty()) {
        outputs[i].reset();
        lost[stageId].push_back(static_cast<int64_t>(i));
      }
    }
  }
  return lost;
}

std::map<std::string, std::vector<int64_t>> BlockRegistry::removeMissingOn(
    const std::string& executorId, const std::set<std::string>& held) {
  std::map<std::string, std::vector<int64_t>> lost;
  for (auto& [stageId, outputs] : stages_) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i] || outputs[i]->executorId != executorId) continue;
      const std::string task = stageId + "/" + std::to_string(i) + "/part-";
      const bool whole = std::all_of(outputs[i]->blocks.begin(), outputs[i]->blocks.end(),
                                     [&](const rest::BlockOutput& b) {
                                       return held.count(task + std::to_string(b.partition)) != 0;
                                     });
      if (!whole) {
        outputs[i].reset();
        lost[stageId].push_back(static_cast<int64_t>(i));
      }
    }
  }
  return lost;
}

std::set<std::string> BlockRegistry::dropStage(const std::string& stageId) {
  std::set<std::string> holders;
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return holders;
  for (const std::optional<MapOutput>& output : it->second) {
    if (output) holders.insert(output->executorId);
  }
  stages_.erase(it);
  return holders;
}

std::vector<std::string> BlockRegistry::stagesOn(const std::string& executorId) const {
  std::vector<std::string> stages;
  for (const auto& [stageId, outputs] : stages_) {
    for (const std::optional<MapOutput>& output : outputs) {
      if (output && output->executorId == executorId) {
        stages.push_back(stageId);
        break;
      }
    }
  }
  return stages;
}

std::map<std::string, int64_t> BlockRegistry::partitionBytesBy(std::string MapOutput::*place,
                                                               const std::string& stageId,
                                                               int64_t partition) const {
  std::map<std::string, int64_t> bytes;
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return bytes;
  for (const std::optional<MapOutput>& output : it->second) {
    if (!output) continue;
    if (std::optional<int64_t> size = output->partitionSize(partition)) {
      bytes[(*output).*place] += *size;
    }
  }
  return bytes;
}

}  // namespace tide::am
