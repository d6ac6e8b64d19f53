#include "common/daemon.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "tests/support/polling.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using testing_support::eventually;

bool pending(int signal) {
  sigset_t set;
  sigpending(&set);
  return sigismember(&set, signal) == 1;
}

// A daemon's stop signal reaches its handler while the thread exists, and once the thread is
// gone nothing calls into what the handler used (the AM's detached signal thread called into a
// destroyed ApplicationMaster when SIGTERM came after its end).
TEST(SignalThread, HandsSignalsToItsHandlerOnlyWhileItExists) {
  const sigset_t signals = blockSignals({SIGHUP, SIGUSR1});
  std::atomic<int> handled{0};
  {
    const SignalThread thread(signals, SIGUSR1, [&](int signal) {
      EXPECT_EQ(signal, SIGHUP);
      ++handled;
      return true;  // goes on waiting
    });
    kill(getpid(), SIGHUP);
    ASSERT_TRUE(eventually([&] { return handled == 1; }, 10s));
    kill(getpid(), SIGHUP);
    ASSERT_TRUE(eventually([&] { return handled == 2; }, 10s));
  }
  // Gone: a signal now stays pending, taken by no one.
  kill(getpid(), SIGHUP);
  EXPECT_TRUE(pending(SIGHUP));
  EXPECT_EQ(handled, 2);
  EXPECT_FALSE(pending(SIGUSR1)) << "the wake-up signal was taken by the thread";
}

TEST(SignalThread, AHandlerThatSaysStopEndsTheThreadAndTheDestructorStillReturns) {
  const sigset_t signals = blockSignals({SIGTERM, SIGUSR2});
  std::atomic<int> handled{0};
  {
    const SignalThread thread(signals, SIGUSR2, [&](int) {
      ++handled;
      return false;
    });
    kill(getpid(), SIGTERM);
    ASSERT_TRUE(eventually([&] { return handled == 1; }, 10s));
    kill(getpid(), SIGTERM);  // no one waits any more
    ASSERT_TRUE(eventually([&] { return pending(SIGTERM); }, 10s));
  }
  EXPECT_EQ(handled, 1);
}

}  // namespace
}  // namespace tide
