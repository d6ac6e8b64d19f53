#include "common/process_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "tests/support/allocator.h"

namespace tide {
namespace {

using testing_support::kGlibcMalloc;

constexpr int64_t kMiB = 1 << 20;

// What a long-running AM does all day: a large buffer comes and goes (a journal compaction's),
// then medium ones (status documents, a sync's batch). Returns how much more malloc then keeps
// free than before (the process may hold free memory already: other tests ran in it).
int64_t heapKeptFreeAfterAPeak() {
  const int64_t before = readProcessMemory().heapFreeBytes;
  { std::vector<char> large(static_cast<size_t>(16 * kMiB), 'x'); }
  for (int i = 0; i < 4; ++i) {
    std::vector<char> medium(static_cast<size_t>(4 * kMiB), 'y');
  }
  return readProcessMemory().heapFreeBytes - before;
}

TEST(ProcessMemoryTest, ReadsThisProcessesResidentSizeAndItsParts) {
  const ProcessMemory memory = readProcessMemory();
  EXPECT_GT(memory.residentBytes, 0);
  EXPECT_GT(memory.residentAnonBytes, 0);
  EXPECT_GT(memory.residentFileBytes, 0);
  EXPECT_LE(memory.residentAnonBytes + memory.residentFileBytes, memory.residentBytes + kMiB);
  if (kGlibcMalloc) {
    EXPECT_GT(memory.heapInUseBytes, 0);
  }
}

// Each case in a new process of its own ("threadsafe" death tests run the binary again rather
// than fork this one): malloc's settings and what it holds are the whole process's, and the
// tests that ran before in this one have moved both.
TEST(ProcessMemoryTest, UntoldGlibcKeepsAFreedPeakThatTheSettingGivesBack) {
  if (!kGlibcMalloc) GTEST_SKIP() << "the sanitizer's allocator is not glibc's malloc";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Untold, glibc raises its thresholds when the large block is freed, and the medium blocks
  // then stay in its heap once freed. This is why the AM sets them.
  EXPECT_EXIT(std::exit(heapKeptFreeAfterAPeak() >= 4 * kMiB ? 0 : 1), ::testing::ExitedWithCode(0),
              "");
  EXPECT_EXIT(
      {
        keepMallocFromHoardingFreedMemory();
        std::exit(heapKeptFreeAfterAPeak() < kMiB ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tide
