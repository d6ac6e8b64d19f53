#include "common/process_memory.h"

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/child_process.h"  // selfExecutable

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
  ::mallopt(M_ARENA_MAX, 1);
}

std::optional<std::string> tunablesWithoutThreadCaches(const char* current) {
  constexpr char kTcacheCount[] = "glibc.malloc.tcache_count";
  constexpr char kOff[] = "glibc.malloc.tcache_count=0";
  if (current == nullptr || *current == '\0') return std::string(kOff);
  const std::string value(current);
  if (value.find(kTcacheCount) != std::string::npos) return std::nullopt;
  return value + ":" + kOff;
}

namespace {

// This program's file by its name, so that the restarted process keeps its name (ps, pgrep and
// /proc/PID/comm name a process after the file it ran: "exe" for /proc/self/exe); /proc/self/exe
// when that name no longer leads to this file (replaced or removed since it started).
std::string ownProgramPath() {
  const std::string path = selfExecutable();
  struct stat byName {};
  struct stat running {};
  if (!path.empty() && ::stat(path.c_str(), &byName) == 0 &&
      ::stat("/proc/self/exe", &running) == 0 && byName.st_dev == running.st_dev &&
      byName.st_ino == running.st_ino) {
    return path;
  }
  return "/proc/self/exe";
}

}  // namespace

void restartWithoutMallocThreadCaches(char** argv) {
  const std::optional<std::string> tunables =
      tunablesWithoutThreadCaches(::getenv("GLIBC_TUNABLES"));
  if (!tunables) return;
  // Marks the restart done whatever glibc makes of the value (a secure-mode process ignores
  // it), so this runs at most once.
  ::setenv("GLIBC_TUNABLES", tunables->c_str(), 1);
  ::execv(ownProgramPath().c_str(), argv);
  // The exec failed (no /proc): run on with the caches on.
}

}  // namespace tide
