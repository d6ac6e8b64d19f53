#pragma once

// SchedulerListeners that write every event they are told of as one line, so a test can assert
// the exact sequence. EventLines formats the events; RecordingListener keeps the kinds a
// scheduler test asks for: task starts and ends, and the data events (speculation, shuffle
// outputs, cached blocks), are recorded when asked for, as each test file asserts the sequences
// of the kinds it is about.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "am/scheduler/task_scheduler.h"

namespace tide::am::testing {

// Every event as one line ("submitted <stage> <tasks>", "start <stage> <executor>", ...),
// handed to record() with its kind; each ended job's message is kept in jobMessages and each
// submitted stage's cpus per task in taskCpus.
class EventLines : public SchedulerListener {
 public:
  enum class Kind {
    kStage,           // onStageSubmitted, onStageCompleted, onUnschedulableTaskSet*
    kJob,             // onJobEnd
    kTask,            // onTaskStart, onTaskEnd
    kData,            // speculation (but its ends), shuffle outputs and releases, cached blocks
    kSpeculativeEnd,  // onSpeculativeTaskEnd
  };

  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int cpus,
                        const allocation::ResourceProfile& profile) override {
    taskCpus[stageId] = cpus;
    profiles[stageId] = profile;
    record(Kind::kStage, "submitted " + stageId + " " + std::to_string(numTasks));
  }
  void onStageCompleted(const std::string& stageId) override {
    record(Kind::kStage, "completed " + stageId);
  }
  void onJobEnd(const std::string& jobId, bool succeeded, const std::string& message) override {
    jobMessages[jobId] = message;
    record(Kind::kJob, "job " + jobId + (succeeded ? " succeeded" : " failed"));
  }
  void onTaskStart(const std::string& stageId, const std::string& executorId) override {
    record(Kind::kTask, "start " + stageId + " " + executorId);
  }
  void onTaskEnd(const std::string& stageId, const std::string& executorId,
                 TaskOutcome outcome) override {
    record(Kind::kTask, "end " + stageId + " " + executorId + " " + taskOutcomeName(outcome));
  }
  void onSpeculativeTaskSubmitted(const std::string& stageId) override {
    record(Kind::kData, "speculative " + stageId);
  }
  void onSpeculativeTaskStart(const std::string& stageId, const std::string& executor) override {
    record(Kind::kData, "speculative start " + stageId + " " + executor);
  }
  void onSpeculativeTaskEnd(const std::string& stageId, const std::string& executor,
                            TaskOutcome outcome) override {
    record(Kind::kSpeculativeEnd,
           "speculative end " + stageId + " " + executor + " " + taskOutcomeName(outcome));
  }
  void onPendingSpeculativeTaskDropped(const std::string& stageId) override {
    record(Kind::kData, "speculative dropped " + stageId);
  }
  void onUnschedulableTaskSetAdded(const std::string& stageId) override {
    record(Kind::kStage, "unschedulable " + stageId);
  }
  void onUnschedulableTaskSetRemoved(const std::string& stageId) override {
    record(Kind::kStage, "schedulable " + stageId);
  }
  void onShuffleOutput(const std::string& executorId, const std::string& shuffleId) override {
    record(Kind::kData, "shuffle " + executorId + " " + shuffleId);
  }
  void onShuffleReleased(const std::string& shuffleId) override {
    record(Kind::kData, "shuffle released " + shuffleId);
  }
  void onBlocksCached(const std::string& executorId, const std::string& dataId) override {
    record(Kind::kData, "cached " + executorId + " " + dataId);
  }
  void onBlocksUncached(const std::string& dataId) override {
    record(Kind::kData, "uncached " + dataId);
  }

  std::map<std::string, std::string> jobMessages;  // each ended job's message
  std::map<std::string, int> taskCpus;
  std::map<std::string, allocation::ResourceProfile>
      profiles;  // of each submitted stage             // each submitted stage's cpus per task

 protected:
  virtual void record(Kind kind, std::string line) = 0;
};

// Keeps the lines of stage and job events, and of task and data events when asked for.
class RecordingListener : public EventLines {
 public:
  struct Kinds {
    bool tasks = false;  // onTaskStart, onTaskEnd
    bool data = false;   // speculation, shuffle outputs and releases, cached blocks
  };
  explicit RecordingListener(Kinds kinds) : kinds_(kinds) {}

  // The events so far, and none from now on.
  std::vector<std::string> take() {
    std::vector<std::string> taken;
    taken.swap(events);
    return taken;
  }

  std::vector<std::string> events;

 protected:
  void record(Kind kind, std::string line) override {
    const bool wanted = kind == Kind::kStage || kind == Kind::kJob ||
                        (kind == Kind::kTask && kinds_.tasks) ||
                        (kind == Kind::kData && kinds_.data);
    if (wanted) events.push_back(std::move(line));
  }

 private:
  Kinds kinds_;
};

}  // namespace tide::am::testing
