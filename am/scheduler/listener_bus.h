#pragma once

// The one list of the task scheduler's listeners (Spark's LiveListenerBus, synchronous): the
// scheduler posts each event once, to the bus, and the bus hands it to every subscriber in
// the order they subscribed. Subscribers (the allocation policy's adapter, the AM's metrics and
// job bookkeeping, a test's recorder) know nothing of each other nor of the bus; nobody
// forwards events by hand. Delivery happens on the poster's thread under the poster's lock
// (the AM's mutex), so a subscriber must not call back into the scheduler.

#include <cstdint>
#include <string>
#include <vector>

#include "am/scheduler/scheduler_listener.h"

namespace tide::am {

class ListenerBus : public SchedulerListener {
 public:
  // The listener must outlive the bus. Subscribe before the first event.
  void subscribe(SchedulerListener& listener) { listeners_.push_back(&listener); }
  size_t size() const { return listeners_.size(); }

  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus,
                        const allocation::ResourceProfile& profile) override {
    post(&SchedulerListener::onStageSubmitted, stageId, numTasks, taskCpus, profile);
  }
  void onStageCompleted(const std::string& stageId) override {
    post(&SchedulerListener::onStageCompleted, stageId);
  }
  void onTaskStart(const std::string& stageId, const std::string& executorId) override {
    post(&SchedulerListener::onTaskStart, stageId, executorId);
  }
  void onTaskEnd(const std::string& stageId, const std::string& executorId,
                 TaskOutcome outcome) override {
    post(&SchedulerListener::onTaskEnd, stageId, executorId, outcome);
  }
  void onJobEnd(const std::string& jobId, bool succeeded, const std::string& message) override {
    post(&SchedulerListener::onJobEnd, jobId, succeeded, message);
  }
  void onSpeculativeTaskSubmitted(const std::string& stageId) override {
    post(&SchedulerListener::onSpeculativeTaskSubmitted, stageId);
  }
  void onSpeculativeTaskStart(const std::string& stageId, const std::string& executorId) override {
    post(&SchedulerListener::onSpeculativeTaskStart, stageId, executorId);
  }
  void onSpeculativeTaskEnd(const std::string& stageId, const std::string& executorId,
                            TaskOutcome outcome) override {
    post(&SchedulerListener::onSpeculativeTaskEnd, stageId, executorId, outcome);
  }
  void onPendingSpeculativeTaskDropped(const std::string& stageId) override {
    post(&SchedulerListener::onPendingSpeculativeTaskDropped, stageId);
  }
  void onUnschedulableTaskSetAdded(const std::string& stageId) override {
    post(&SchedulerListener::onUnschedulableTaskSetAdded, stageId);
  }
  void onUnschedulableTaskSetRemoved(const std::string& stageId) override {
    post(&SchedulerListener::onUnschedulableTaskSetRemoved, stageId);
  }
  void onShuffleOutput(const std::string& executorId, const std::string& shuffleId) override {
    post(&SchedulerListener::onShuffleOutput, executorId, shuffleId);
  }
  void onShuffleReleased(const std::string& shuffleId) override {
    post(&SchedulerListener::onShuffleReleased, shuffleId);
  }
  void onBlocksCached(const std::string& executorId, const std::string& dataId) override {
    post(&SchedulerListener::onBlocksCached, executorId, dataId);
  }
  void onBlocksUncached(const std::string& dataId) override {
    post(&SchedulerListener::onBlocksUncached, dataId);
  }

 private:
  template <typename Event, typename... Args>
  void post(Event event, const Args&... args) {
    for (SchedulerListener* listener : listeners_) (listener->*event)(args...);
  }

  std::vector<SchedulerListener*> listeners_;
};

}  // namespace tide::am
