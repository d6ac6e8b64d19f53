#pragma once

// What the tests of both allocation policies share: a config to adjust before the policy is
// built (on first use), a manual clock, and ticking at a given time.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "allocation/allocation_config.h"
#include "allocation/allocation_policy.h"
#include "common/clock.h"

namespace tide::allocation::policy_testing {

template <typename Policy>
class PolicyTest : public ::testing::Test {
 protected:
  // The policy, built from `config` on first use.
  Policy& policy() {
    if (!policy_) policy_ = std::make_unique<Policy>(config, clock);
    return *policy_;
  }

  TickResult tickAt(TimeMs t) {
    clock.set(t);
    return policy().tick();
  }

  // The first decision of `action` in the tick, or nullptr.
  static const Decision* find(const TickResult& result, Decision::Action action) {
    for (const Decision& d : result.decisions) {
      if (d.action == action) return &d;
    }
    return nullptr;
  }

  // Why the tick made its first decision of `action`; a test failure and "" when it made none.
  static std::string whyOf(const TickResult& result, Decision::Action action) {
    const Decision* decision = find(result, action);
    if (decision == nullptr) {
      ADD_FAILURE() << "no decision of action " << static_cast<int>(action);
      return "";
    }
    return decision->why;
  }

  // Expects the tick to end at `target` with a first decision of `action` said as `why`.
  static void expectDecision(const TickResult& result, int target, Decision::Action action,
                             const std::string& why) {
    EXPECT_EQ(result.target, target);
    EXPECT_EQ(whyOf(result, action), why);
  }

  AllocationConfig config;
  ManualClock clock{0};

 private:
  std::unique_ptr<Policy> policy_;
};

}  // namespace tide::allocation::policy_testing
