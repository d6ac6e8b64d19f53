#include "common/process_memory.h"

#include <malloc.h>

#include <fstream>
#include <string>

namespace tide {
namespace {

// "VmRSS:	   26544 kB" -> bytes, for the line starting with `name`.
bool readKibField(const std::string& line, const char* name, int64_t& bytes) {
  const std::string prefix = std::string(name) + ":";
  if (line.rfind(prefix, 0) != 0) return false;
  try {
    bytes = std::stoll(line.substr(prefix.size())) * 1024;
  } catch (const std::exception&) {
    bytes = 0;
  }
  return true;
}

}  // namespace

ProcessMemory readProcessMemory() {
  ProcessMemory memory;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    readKibField(line, "VmRSS", memory.residentBytes) ||
        readKibField(line, "RssAnon", memory.residentAnonBytes) ||
        readKibField(line, "RssFile", memory.residentFileBytes);
  }
  const struct mallinfo2 info = ::mallinfo2();
  memory.heapInUseBytes = static_cast<int64_t>(info.uordblks + info.hblkhd);
  memory.heapFreeBytes = static_cast<int64_t>(info.fordblks);
  return memory;
}

void keepMallocFromHoardingFreedMemory() {
  constexpr int kThreshold = 128 * 1024;
  // Setting either turns off glibc's raising of both (mallopt(3), "M_MMAP_THRESHOLD").
  ::mallopt(M_MMAP_THRESHOLD, kThreshold);
  ::mallopt(M_TRIM_THRESHOLD, kThreshold);
}

}  // namespace tide
