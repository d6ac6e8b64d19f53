#include "am/containers/heartbeat_pacer.h"

#include <gtest/gtest.h>

namespace tide::am {
namespace {

TEST(HeartbeatPacerTest, DoublesFromTheInitialIntervalWhileRequestsAreOutstanding) {
  HeartbeatPacer pacer(3000, 200);
  EXPECT_EQ(pacer.nextDelay(4), 200);
  EXPECT_EQ(pacer.nextDelay(4), 400);
  EXPECT_EQ(pacer.nextDelay(4), 800);
  EXPECT_EQ(pacer.nextDelay(4), 1600);
  EXPECT_EQ(pacer.nextDelay(4), 3000) << "capped at the heartbeat interval";
  EXPECT_EQ(pacer.nextDelay(4), 3000);
}

TEST(HeartbeatPacerTest, NothingOutstandingMeansTheHeartbeatIntervalAndAFreshStart) {
  HeartbeatPacer pacer(3000, 200);
  pacer.nextDelay(1);
  pacer.nextDelay(1);
  EXPECT_EQ(pacer.nextDelay(0), 3000);
  EXPECT_EQ(pacer.nextDelay(2), 200) << "a new wave of requests starts fast again";
}

TEST(HeartbeatPacerTest, ResetStartsOverFromTheInitialInterval) {
  HeartbeatPacer pacer(3000, 200);
  pacer.nextDelay(1);
  pacer.nextDelay(1);
  pacer.reset();
  EXPECT_EQ(pacer.nextDelay(1), 200);
}

}  // namespace
}  // namespace tide::am
