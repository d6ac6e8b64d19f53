#pragma once

#include <algorithm>

#include "common/clock.h"

namespace tide::am {

// When the AM next heartbeats the resource manager, as Spark's ApplicationMaster does: every
// `heartbeatInterval`, but while container requests are outstanding every
// `initialAllocationInterval`, doubling each time up to the heartbeat interval, so that
// granted containers are picked up quickly without hammering the RM.
class HeartbeatPacer {
 public:
  HeartbeatPacer(DurationMs heartbeatInterval, DurationMs initialAllocationInterval)
      : heartbeatInterval_(heartbeatInterval),
        initialAllocationInterval_(std::min(initialAllocationInterval, heartbeatInterval)),
        nextAllocationInterval_(initialAllocationInterval_) {}

  // The wait before the next heartbeat, given how many containers are still outstanding.
  DurationMs nextDelay(int outstandingContainers) {
    if (outstandingContainers <= 0) {
      nextAllocationInterval_ = initialAllocationInterval_;
      return heartbeatInterval_;
    }
    const DurationMs delay = std::min(heartbeatInterval_, nextAllocationInterval_);
    nextAllocationInterval_ = std::min(heartbeatInterval_, nextAllocationInterval_ * 2);
    return delay;
  }

  // The target changed: the next outstanding wait starts again from the initial interval.
  void reset() { nextAllocationInterval_ = initialAllocationInterval_; }

 private:
  DurationMs heartbeatInterval_;
  DurationMs initialAllocationInterval_;
  DurationMs nextAllocationInterval_;
};

}  // namespace tide::am
