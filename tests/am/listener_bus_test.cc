// The scheduler's one listener list: every subscriber hears every event, in subscription
// order, with the event's arguments as posted.

#include "am/scheduler/listener_bus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/am/recording_listener.h"

namespace tide::am {
namespace {

using ::testing::ElementsAre;

// Writes "<name>:<event> <args>" into a log shared by all subscribers of a test.
class Recorder : public testing::EventLines {
 public:
  Recorder(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}

 protected:
  void record(Kind, std::string line) override { log_.push_back(name_ + ":" + line); }

 private:
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

  bus.onStageSubmitted("job-1/s", 3, 2, allocation::ResourceProfile{});
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
      ElementsAre("a:submitted job-1/s 3", "b:submitted job-1/s 3", "a:start job-1/s e1",
                  "b:start job-1/s e1", "a:end job-1/s e1 failed", "b:end job-1/s e1 failed",
                  "a:speculative job-1/s", "b:speculative job-1/s",
                  "a:speculative start job-1/s e2", "b:speculative start job-1/s e2",
                  "a:speculative end job-1/s e2 killed", "b:speculative end job-1/s e2 killed",
                  "a:shuffle e1 job-1/s", "b:shuffle e1 job-1/s", "a:cached e1 job-1/s",
                  "b:cached e1 job-1/s", "a:completed job-1/s", "b:completed job-1/s",
                  "a:shuffle released job-1/s", "b:shuffle released job-1/s", "a:uncached job-1/s",
                  "b:uncached job-1/s", "a:job job-1 failed", "b:job job-1 failed"));
  EXPECT_EQ(first.jobMessages.at("job-1"), "boom");
  EXPECT_EQ(second.jobMessages.at("job-1"), "boom");
  EXPECT_EQ(first.taskCpus.at("job-1/s"), 2);
  EXPECT_EQ(second.taskCpus.at("job-1/s"), 2);
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
  EXPECT_THAT(log, ElementsAre("r:cached e1 job-1/s", "r:end job-1/s e1 succeeded",
                               "r:job job-1 succeeded"));
  EXPECT_EQ(recorder.jobMessages.at("job-1"), "");
}

}  // namespace
}  // namespace tide::am
