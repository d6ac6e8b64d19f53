// Locality-preferred container requests: of the containers still wanted, some are asked for on
// the nodes where pending tasks' data is.

#include <gtest/gtest.h>

#include "am/containers/container_allocator.h"

namespace tide::am {
namespace {

using HostAsks = std::vector<std::pair<std::string, int>>;

class ContainerLocalityTest : public ::testing::Test {
 protected:
  ManualClock clock;
  ContainerAllocator allocator{ContainerAllocatorConfig{}, clock};
};

TEST_F(ContainerLocalityTest, MissingContainersGoWhereTheTasksData) {
  allocator.setTarget(5);
  // 5 tasks on n1 at 2 slots per executor: 3 containers there; 1 task on n2: 1 there.
  allocator.setLocalityHints({{"n1", 5}, {"n2", 1}}, 2);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 5);
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 3}, {"n2", 1}}));
}

TEST_F(ContainerLocalityTest, NeverMoreOnHostsThanAreWanted) {
  allocator.setTarget(2);
  allocator.setLocalityHints({{"n1", 10}, {"n2", 10}}, 1);
  ContainerAsk ask = allocator.nextAsk();
  EXPECT_EQ(ask.outstanding, 2);
  EXPECT_EQ(ask.hostAsks, (HostAsks{{"n1", 2}}));
  // Without hints, everything may go anywhere.
  allocator.setLocalityHints({}, 1);
  EXPECT_TRUE(allocator.nextAsk().hostAsks.empty());
}

}  // namespace
}  // namespace tide::am
