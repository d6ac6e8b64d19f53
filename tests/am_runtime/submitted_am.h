#pragma once

// For tests that drive a real tide-rm state machine (ClusterState) in process: an application
// submitted with an AM of 512 MB and 1 core, and the launch of that AM's container.

#include <gtest/gtest.h>

#include <string>

#include "deploy/rm/cluster_state.h"

namespace tide::am {

// Fails the calling test (and returns an empty launch) when the AM is not launched at once.
inline rm::AmLaunch submitApplicationAndTakeItsAmLaunch(rm::ClusterState& state) {
  rest::ApplicationSubmission submission;
  submission.applicationId = state.newApplication().applicationId;
  submission.command = "am";
  submission.resource = rest::Resource{512, 1};
  state.submitApplication(submission);
  const rm::Outbox outbox = state.takeOutbox();
  EXPECT_EQ(outbox.launches.size(), 1u);
  return outbox.launches.empty() ? rm::AmLaunch{} : outbox.launches[0];
}

}  // namespace tide::am
