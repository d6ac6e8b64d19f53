// common/host_unique_name.h with real processes: a name is held by one live process at a time,
// whoever holds it and however it ends, and a child the holder starts does not keep it.

#include "common/host_unique_name.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "common/child_process.h"

namespace tide {
namespace {

// A name no other test run uses.
std::string testName(const std::string& what) {
  return "tide-test-" + what + "-" + std::to_string(::getpid());
}

TEST(HostUniqueNameTest, AHeldNameIsRefusedUntilItsHolderLetsItGo) {
  const std::string name = testName("held");
  std::optional<HostUniqueName> first = HostUniqueName::claim(name);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->name(), name);
  EXPECT_FALSE(HostUniqueName::claim(name).has_value());
  EXPECT_TRUE(HostUniqueName::claim(name + "-other").has_value());

  HostUniqueName moved = std::move(*first);
  first.reset();  // the moved-from object holds nothing
  EXPECT_FALSE(HostUniqueName::claim(name).has_value());
  moved = *HostUniqueName::claim(name + "-third");  // assigning lets the old name go
  EXPECT_TRUE(HostUniqueName::claim(name).has_value());
}

TEST(HostUniqueNameTest, AHolderKilledBySigkillLeavesTheNameFree) {
  const std::string name = testName("killed");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    std::optional<HostUniqueName> held = HostUniqueName::claim(name);
    const char byte = held ? '1' : '0';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(byte, '1') << "the child could not claim the name";
  EXPECT_FALSE(HostUniqueName::claim(name).has_value()) << "a live process holds it";
  ASSERT_EQ(::kill(holder, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  EXPECT_TRUE(HostUniqueName::claim(name).has_value()) << "the dead holder still blocks it";
}

TEST(HostUniqueNameTest, AChildOfTheHolderDoesNotKeepTheName) {
  const std::string name = testName("child");
  std::optional<HostUniqueName> held = HostUniqueName::claim(name);
  ASSERT_TRUE(held.has_value());
  ChildSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  ChildProcess child(spec);
  held.reset();
  EXPECT_TRUE(HostUniqueName::claim(name).has_value()) << "the child inherited the socket";
  child.stop();
}

TEST(HostUniqueNameTest, AnEmptyOrOverlongNameIsRefused) {
  EXPECT_THROW(HostUniqueName::claim(""), std::invalid_argument);
  EXPECT_THROW(HostUniqueName::claim(std::string(HostUniqueName::kMaxLength + 1, 'x')),
               std::invalid_argument);
  EXPECT_TRUE(HostUniqueName::claim(testName("x") + std::string(80, 'x')).has_value());
}

}  // namespace
}  // namespace tide
