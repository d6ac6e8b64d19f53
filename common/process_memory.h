#pragma once

// This process's memory as the kernel and the allocator see it: what is resident (and how much
// of that is its own data rather than mapped files), and how the heap's pages split into what
// the program holds and what glibc's malloc keeps free for later. A resident size that climbs
// while the heap in use stays flat is the allocator holding freed memory, not a leak.

#include <cstdint>

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
// again: blocks of 128 KiB and more get pages of their own, unmapped when freed, and a heap's
// free top over 128 KiB is returned at once. These are glibc's starting values, but glibc raises
// both for good the first time a large block is freed (up to 32 and 64 MiB), after which a
// long-running process holds every transient peak it ever reached. Call before any thread
// starts.
void keepMallocFromHoardingFreedMemory();

}  // namespace tide
