#pragma once

// Whether this test binary's malloc is glibc's: under a sanitizer its allocator stands in, and
// what glibc's malloc reports of its heap (mallinfo2, common/process_memory.h) says nothing.

namespace tide::testing_support {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kGlibcMalloc = false;
#else
inline constexpr bool kGlibcMalloc = true;
#endif

}  // namespace tide::testing_support
