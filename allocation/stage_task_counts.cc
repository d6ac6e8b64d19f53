#include "allocation/stage_task_counts.h"

#include <algorithm>
#include <map>

namespace tide::allocation {

int StageTaskCounts::tasksPerExecutor(int executorCores, int taskCpus) {
  return std::max(1, executorCores / std::max(1, taskCpus));
}

double StageTaskCounts::executorsFilled(int executorCores, int defaultTaskCpus,
                                        int profileId) const {
  // Tasks by tasks per executor: a width's tasks share executors (as one Spark profile's do).
  std::map<int, int64_t> tasksByWidth;
  for (const auto& [id, stage] : stages_) {
    if (stage.profileId != profileId) continue;
    const int64_t tasks = stage.pending + stage.pendingSpeculative + stage.running;
    if (tasks <= 0) continue;
    const int cpus = stage.taskCpus > 0 ? stage.taskCpus : defaultTaskCpus;
    tasksByWidth[tasksPerExecutor(executorCores, cpus)] += tasks;
  }
  double filled = 0;
  for (const auto& [perExecutor, tasks] : tasksByWidth) {
    filled += static_cast<double>(tasks) / static_cast<double>(perExecutor);
  }
  return filled;
}

bool StageTaskCounts::speculativePendingOnSharedExecutor(int executorCores, int defaultTaskCpus,
                                                         int profileId) const {
  for (const auto& [id, stage] : stages_) {
    if (stage.profileId != profileId) continue;
    const int cpus = stage.taskCpus > 0 ? stage.taskCpus : defaultTaskCpus;
    if (stage.pendingSpeculative > 0 && tasksPerExecutor(executorCores, cpus) > 1) return true;
  }
  return false;
}

StageTaskCounts::ProfileTasks StageTaskCounts::ofProfile(int profileId) const {
  ProfileTasks tasks;
  for (const auto& [id, stage] : stages_) {
    if (stage.profileId != profileId) continue;
    tasks.pending += stage.pending;
    tasks.pendingSpeculative += stage.pendingSpeculative;
    tasks.running += stage.running;
  }
  return tasks;
}

void StageTaskCounts::onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus,
                                       int profileId) {
  Stage& stage = stages_[stageId];
  stage.active = true;
  stage.profileId = profileId;
  if (taskCpus > 0) stage.taskCpus = taskCpus;
  stage.pending += numTasks;
  pending_ += numTasks;
}

StageTaskCounts::Change StageTaskCounts::onStageCompleted(const std::string& stageId) {
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return Change::kUnknownStage;
  Stage& stage = it->second;
  pending_ -= stage.pending;
  pendingSpeculative_ -= stage.pendingSpeculative;
  stage.pending = 0;
  stage.pendingSpeculative = 0;
  stage.active = false;
  if (stage.running > 0) return Change::kCounted;
  stages_.erase(it);
  return Change::kForgotten;
}

void StageTaskCounts::onTaskStart(const std::string& stageId, bool speculative) {
  Stage& stage = stages_[stageId];
  if (speculative) {
    if (stage.pendingSpeculative > 0) {
      --stage.pendingSpeculative;
      --pendingSpeculative_;
    }
  } else if (stage.pending > 0) {
    --stage.pending;
    --pending_;
  }
  ++stage.running;
  ++running_;
}

StageTaskCounts::Change StageTaskCounts::onTaskEnd(const std::string& stageId, bool retried) {
  auto it = stages_.find(stageId);
  if (it == stages_.end()) return Change::kUnknownStage;
  Stage& stage = it->second;
  if (stage.running > 0) {
    --stage.running;
    --running_;
  }
  if (retried && stage.active) {
    ++stage.pending;
    ++pending_;
  }
  if (stage.active || stage.running > 0) return Change::kCounted;
  stages_.erase(it);
  return Change::kForgotten;
}

void StageTaskCounts::onSpeculativeTaskSubmitted(const std::string& stageId) {
  Stage& stage = stages_[stageId];
  stage.active = true;
  ++stage.pendingSpeculative;
  ++pendingSpeculative_;
}

bool StageTaskCounts::dropPendingSpeculative(const std::string& stageId) {
  auto it = stages_.find(stageId);
  if (it == stages_.end() || it->second.pendingSpeculative == 0) return false;
  --it->second.pendingSpeculative;
  --pendingSpeculative_;
  return true;
}

}  // namespace tide::allocation
