// The scheduler's one listener list: every subscriber hears every event, in subscription
// order, with the event's arguments as posted.

#include "am/scheduler/listener_bus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tide::am {
namespace {

using ::testing::ElementsAre;

// Writes "<name>:<event> <args>" into a log shared by all subscribers of a test.
class Recorder : public SchedulerListener {
 public:
  Recorder(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  void onStageSubmitted(const std::string& stageId, int64_t numTasks, int taskCpus) override {
    note("submitted " + stageId + " " + std::to_string(numTasks) + " x" + std::to_string(taskCpus));
  }
  void onStageCompleted(const std::string& stageId) override { note("completed " + stageId); }
  void onTaskStart(const std::string& stageId, const std::string& executorId) override {
    note("start " + stageId + " " + executorId);
  }
  void onTaskEnd(const std::string& stageId, const std::string& executorId,
                 TaskOutcome outcome) override {
    note("end " + stageId + " " + executorId + " " + taskOutcomeName(outcome));
  }
  void onJobEnd(const std::string& jobId, bool succeeded, const std::string& message) override {
    note("job " + jobId + (succeeded ? " ok " : " failed ") + message);
  }
  void onSpeculativeTaskSubmitted(const std::string& stageId) override {
    note("speculative " + stageId);
  }
  void onSpeculativeTaskStart(const std::string& stageId, const std::string& executorId) override {
    note("speculative-start " + stageId + " " + executorId);
  }
  void onSpeculativeTaskEnd(const std::string& stageId, const std::string& executorId,
                            TaskOutcome outcome) override {
    note("speculative-end " + stageId + " " + executorId + " " + taskOutcomeName(outcome));
  }
  void onShuffleOutput(const std::string& executorId, const std::string& shuffleId) override {
    note("shuffle " + executorId + " " + shuffleId);
  }
  void onShuffleReleased(const std::string& shuffleId) override {
    note("shuffle-released " + shuffleId);
  }
  void onBlocksCached(const std::string& executorId, const std::string& dataId) override {
    note("cached " + executorId + " " + dataId);
  }
  void onBlocksUncached(const std::string& dataId) override { note("uncached " + dataId); }

 private:
  void note(const std::string& event) { log_.push_back(name_ + ":" + event); }
  std::string name_;
  std::vector<std::string>& log_;
};

// Hears only job ends: every other event keeps SchedulerListener's no-op.
class JobEndsOnly : public SchedulerListener {
 public:
  void onJobEnd(const std::string& jobId, bool, const std::string&) override {
    ended.push_back(jobId);
  }
  std::vector<std::string> ended;
};

TEST(ListenerBusTest, EverySubscriberHearsEveryEventInSubscriptionOrder) {
  std::vector<std::string> log;
  Recorder first("a", log), second("b", log);
  ListenerBus bus;
  bus.subscribe(first);
  bus.subscribe(second);
  EXPECT_EQ(bus.size(), 2u);

  bus.onStageSubmitted("job-1/s", 3, 2);
  bus.onTaskStart("job-1/s", "e1");
  bus.onTaskEnd("job-1/s", "e1", TaskOutcome::kFailed);
  bus.onSpeculativeTaskSubmitted("job-1/s");
  bus.onSpeculativeTaskStart("job-1/s", "e2");
  bus.onSpeculativeTaskEnd("job-1/s", "e2", TaskOutcome::kKilled);
  bus.onShuffleOutput("e1", "job-1/s");
  bus.onBlocksCached("e1", "job-1/s");
  bus.onStageCompleted("job-1/s");
  bus.onShuffleReleased("job-1/s");
  bus.onBlocksUncached("job-1/s");
  bus.onJobEnd("job-1", false, "boom");

  EXPECT_THAT(
      log,
      ElementsAre("a:submitted job-1/s 3 x2", "b:submitted job-1/s 3 x2", "a:start job-1/s e1",
                  "b:start job-1/s e1", "a:end job-1/s e1 failed", "b:end job-1/s e1 failed",
                  "a:speculative job-1/s", "b:speculative job-1/s",
                  "a:speculative-start job-1/s e2", "b:speculative-start job-1/s e2",
                  "a:speculative-end job-1/s e2 killed", "b:speculative-end job-1/s e2 killed",
                  "a:shuffle e1 job-1/s", "b:shuffle e1 job-1/s", "a:cached e1 job-1/s",
                  "b:cached e1 job-1/s", "a:completed job-1/s", "b:completed job-1/s",
                  "a:shuffle-released job-1/s", "b:shuffle-released job-1/s", "a:uncached job-1/s",
                  "b:uncached job-1/s", "a:job job-1 failed boom", "b:job job-1 failed boom"));
}

TEST(ListenerBusTest, SubscribersNeedOnlyTheEventsTheyCareAbout) {
  std::vector<std::string> log;
  Recorder recorder("r", log);
  JobEndsOnly jobs;
  ListenerBus bus;
  bus.subscribe(jobs);
  bus.subscribe(recorder);
  bus.onBlocksCached("e1", "job-1/s");
  bus.onTaskEnd("job-1/s", "e1", TaskOutcome::kSucceeded);
  bus.onJobEnd("job-1", true, "");
  EXPECT_THAT(jobs.ended, ElementsAre("job-1"));
  EXPECT_THAT(log,
              ElementsAre("r:cached e1 job-1/s", "r:end job-1/s e1 succeeded", "r:job job-1 ok "));
}

}  // namespace
}  // namespace tide::am
