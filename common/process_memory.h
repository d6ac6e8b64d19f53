#pragma once

// This process's memory as the kernel and the allocator see it: what is resident (and how much
// of that is its own data rather than mapped files), and how the heap's pages split into what
// the program holds and what glibc's malloc keeps free for later. A resident size that climbs
// while the heap in use stays flat is the allocator holding freed memory, not a leak.

#include <cstdint>
#include <optional>
#include <string>

namespace tide {

struct ProcessMemory {
  int64_t residentBytes = 0;      // VmRSS
  int64_t residentAnonBytes = 0;  // RssAnon: heap, stacks and other private memory
  int64_t residentFileBytes = 0;  // RssFile: the binary, libraries and mapped files
  int64_t heapInUseBytes = 0;     // allocated and not yet freed, mmapped blocks included
  int64_t heapFreeBytes = 0;      // freed, kept by malloc in its arenas (resident or not)
};

// Reads /proc/self/status and mallinfo2(); a field that cannot be read stays 0. mallinfo2 walks
// every malloc arena under its lock: microseconds, meant for a metrics scrape, not a hot loop.
ProcessMemory readProcessMemory();

// Makes glibc's malloc hand freed memory back rather than keep it for a peak that may not come
// again, and keep it in one place rather than one per thread:
//  - Blocks of 128 KiB and more get pages of their own, unmapped when freed, and a heap's free
//    top over 128 KiB is returned at once. These are glibc's starting values, but glibc raises
//    both for good the first time a large block is freed (up to 32 and 64 MiB), after which a
//    long-running process holds every transient peak it ever reached.
//  - One arena for all threads. By default each thread that allocates gets an arena of its own
//    (up to eight per core), and each keeps its own freed memory and free top: a server whose
//    request threads come and go holds the sum of what each arena once needed.
// Call before any thread starts.
void keepMallocFromHoardingFreedMemory();

// glibc's per-thread caches (tcache) keep up to 7 freed blocks of each size up to 1 KiB on the
// thread that freed them, for that thread's next malloc of the size; malloc counts them as in
// use, and a long-lived thread's cache fills, slowly, with every size it ever freed (up to about
// 240 KiB a thread). Only the GLIBC_TUNABLES variable, read when a program starts, turns them
// off: the GLIBC_TUNABLES value that does so with `current`'s other settings kept (nullptr: it
// was not set), or nullopt when `current` already names a tcache count (the caller's own, or
// what a restart set).
std::optional<std::string> tunablesWithoutThreadCaches(const char* current);

// Runs this program again (its own file, the same pid, name, arguments and environment) with
// GLIBC_TUNABLES turning the per-thread caches off, unless it already names a tcache count.
// Returns only when it did not restart (already set, or the exec failed). Call first in main,
// before any thread starts or any file opens.
void restartWithoutMallocThreadCaches(char** argv);

}  // namespace tide
