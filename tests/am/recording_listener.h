#pragma once

// A SchedulerListener that writes every event it is told of as one line, so a scheduler test
// can assert the exact sequence. Task starts and ends, and the data events (speculation,
// shuffle outputs, cached blocks), are recorded when asked for: each test file asserts the
// sequences of the kinds it is about.

#include <map>
#include <string>
#include <vector>

#include "am/scheduler/task_scheduler.h"

namespace tide::am::testing {

class RecordingListener : public SchedulerListener {
 public:
  struct Kinds {
    bool tasks = false;  // onTaskStart, onTaskEnd
    bool data = false;   // speculation, shuffle outputs and releases, cached blocks
  };
  explicit RecordingListener(Kinds kinds) : kinds_(kinds) {}

  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int cpus) override {
    events.push_back("submitted " + stageId + " " + std::to_string(numTasks));
    taskCpus[stageId] = cpus;
  }
  void onStageCompleted(const std::string& stageId) override {
    events.push_back("completed " + stageId);
  }
  void onJobEnd(const std::string& jobId, bool succeeded, const std::string& message) override {
    events.push_back("job " + jobId + (succeeded ? " succeeded" : " failed"));
    jobMessages[jobId] = message;
  }
  void onTaskStart(const std::string& stageId, const std::string& executorId) override {
    if (kinds_.tasks) events.push_back("start " + stageId + " " + executorId);
  }
  void onTaskEnd(const std::string& stageId, const std::string& executorId,
                 TaskOutcome outcome) override {
    if (kinds_.tasks) {
      events.push_back("end " + stageId + " " + executorId + " " + taskOutcomeName(outcome));
    }
  }
  void onSpeculativeTaskSubmitted(const std::string& stageId) override {
    data("speculative " + stageId);
  }
  void onSpeculativeTaskStart(const std::string& stageId, const std::string& executor) override {
    data("speculative start " + stageId + " " + executor);
  }
  void onPendingSpeculativeTaskDropped(const std::string& stageId) override {
    data("speculative dropped " + stageId);
  }
  void onShuffleOutput(const std::string& executorId, const std::string& shuffleId) override {
    data("shuffle " + executorId + " " + shuffleId);
  }
  void onShuffleReleased(const std::string& shuffleId) override {
    data("shuffle released " + shuffleId);
  }
  void onBlocksCached(const std::string& executorId, const std::string& dataId) override {
    data("cached " + executorId + " " + dataId);
  }
  void onBlocksUncached(const std::string& dataId) override { data("uncached " + dataId); }

  // The events so far, and none from now on.
  std::vector<std::string> take() {
    std::vector<std::string> taken;
    taken.swap(events);
    return taken;
  }

  std::vector<std::string> events;
  std::map<std::string, std::string> jobMessages;  // each ended job's message
  std::map<std::string, int> taskCpus;  // the cpus per task each submitted stage reported

 private:
  void data(std::string event) {
    if (kinds_.data) events.push_back(std::move(event));
  }

  Kinds kinds_;
};

}  // namespace tide::am::testing
