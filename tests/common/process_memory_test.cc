#include "common/process_memory.h"

#include "common/child_process.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/allocator.h"
#include "tests/support/files.h"

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

// How many arenas glibc's malloc has made in this process (malloc_info(3) writes a <heap> for
// each).
int mallocArenas() {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = ::open_memstream(&text, &size);
  ::malloc_info(0, out);
  std::fclose(out);
  const std::string info(text, size);
  std::free(text);
  int arenas = 0;
  for (size_t at = info.find("<heap nr="); at != std::string::npos;
       at = info.find("<heap nr=", at + 1)) {
    ++arenas;
  }
  return arenas;
}

// Four threads that each allocate while the others live, as a server's request threads do.
int arenasAfterFourThreadsAllocate() {
  constexpr int kThreads = 4;
  std::mutex mutex;
  std::condition_variable allocatedChanged;
  int allocated = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      std::vector<char> buffer(4096, 'x');
      std::unique_lock<std::mutex> lock(mutex);
      ++allocated;
      allocatedChanged.notify_all();
      allocatedChanged.wait(lock, [&] { return allocated == kThreads; });
    });
  }
  for (std::thread& thread : threads) thread.join();
  return mallocArenas();
}

// Whether small blocks freed on this thread count as free at once, rather than as still in use
// while this thread's cache (tcache) holds them for its next malloc of their size.
bool freedSmallBlocksCountFree() {
  constexpr int kBlocks = 7;
  void* blocks[kBlocks];
  for (void*& block : blocks) {
    block = std::malloc(200);
    asm volatile("" : : "g"(block) : "memory");  // the allocation must happen
  }
  const size_t inUse = ::mallinfo2().uordblks;
  for (void* block : blocks) std::free(block);
  return ::mallinfo2().uordblks + kBlocks * 200 <= inUse;
}

// This process's own arguments, as /proc/self/cmdline has them, for restarting it.
std::vector<std::string> ownArguments() {
  const std::string text = testing_support::readFile("/proc/self/cmdline");
  std::vector<std::string> arguments;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\0', start);
    arguments.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return arguments;
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

// A long-running AM's threads come and go (HTTP workers beyond the warm ones); each new one gets
// an arena of its own, with free memory of its own, unless malloc is told otherwise.
TEST(ProcessMemoryTest, ThreadsShareOneArenaWithTheSetting) {
  if (!kGlibcMalloc) GTEST_SKIP() << "the sanitizer's allocator is not glibc's malloc";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(arenasAfterFourThreadsAllocate() > 1 ? 0 : 1), ::testing::ExitedWithCode(0),
              "");
  EXPECT_EXIT(
      {
        keepMallocFromHoardingFreedMemory();
        std::exit(arenasAfterFourThreadsAllocate() == 1 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(ProcessMemoryTest, TunablesTurnThreadCachesOffKeepingTheCallersOwnSettings) {
  EXPECT_EQ(tunablesWithoutThreadCaches(nullptr), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(tunablesWithoutThreadCaches(""), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(tunablesWithoutThreadCaches("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0");
  // Named already: the caller's own choice, or the restart's mark that it has run.
  EXPECT_EQ(tunablesWithoutThreadCaches("glibc.malloc.tcache_count=7"), std::nullopt);
  EXPECT_EQ(tunablesWithoutThreadCaches("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0"),
            std::nullopt);
}

// The restart runs the same test again (the death test's own arguments), this time with the
// caches off: a freed small block then counts free at once. Untold, this thread's cache holds it.
TEST(ProcessMemoryTest, RestartedWithoutThreadCachesFreedSmallBlocksCountFree) {
  if (!kGlibcMalloc) GTEST_SKIP() << "the sanitizer's allocator is not glibc's malloc";
  // Nothing here outside the statements may depend on GLIBC_TUNABLES: the restart runs this
  // test's body again with it set, to run the second statement in the restarted process.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      std::exit(::getenv("GLIBC_TUNABLES") != nullptr || !freedSmallBlocksCountFree() ? 0 : 1),
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        std::vector<std::string> arguments = ownArguments();
        std::vector<char*> argv;
        for (std::string& argument : arguments) argv.push_back(argument.data());
        argv.push_back(nullptr);
        restartWithoutMallocThreadCaches(argv.data());
        const char* tunables = ::getenv("GLIBC_TUNABLES");
        // Under its own name still (ps and pgrep go by /proc/PID/comm), not "exe".
        const std::string name = std::filesystem::path(selfExecutable()).filename();
        const bool named = testing_support::readFile("/proc/self/comm") ==
                           name.substr(0, 15) + "\n";  // the kernel keeps 15 characters
        std::exit(tunables != nullptr && named && freedSmallBlocksCountFree() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tide
