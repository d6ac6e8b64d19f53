#pragma once

// The requests an executor sends to its supervisor launcher (`tide-container --serve`, one per
// executor) and the launcher's answers, over a Unix stream socket.
//
// Why a launcher: every command task runs below a tide-container supervisor, a child subreaper
// that keeps whatever the task starts below it and kills it all when the task ends. Exec'ing a
// supervisor per task costs a second exec per task (on a VM, where the dynamic loader's cpuid
// questions trap to the hypervisor, as much as the task's own exec), and forking one per task
// still costs a fork and an exit. So the launcher is exec'd once per executor and forks slot
// supervisors, each on its own socket to the executor; a slot supervisor runs one task at a
// time and is reused for the next (deploy/nm/container_main.cc). Since it runs one task at a
// time, whatever is orphaned below it came from its current task.
//
// Frames: a 4-byte little-endian payload length, then the payload. Descriptors (SCM_RIGHTS)
// ride with the length. Payloads:
//   slot    'S', to the launcher. Answer: a new slot supervisor's pid, with the executor's end
//           of its socket attached, or -errno. The slot supervisor ends, killing what it runs,
//           when that socket closes (the executor closed it or died).
//   launch  'L', to a slot supervisor: work dir, argv, environment; descriptors: stdout,
//           stderr. Answer: the task's pid (it leads its own process group), or -errno.
//   stop    'T', to the slot supervisor that runs it: pid (int64). SIGTERM to the task and to
//           everything below the slot supervisor (what the task orphaned too). Answer: 0 or
//           -errno.
//   reap    'R', to the slot supervisor that runs it: pid (int64). Answer: the exited task's
//           wait status, or -errno. Whatever the task left running is killed before the answer.
// A task is not reaped until it is asked for, so its pid (and process group id) stays its own
// until the executor is done signalling it, as for a child of the executor.
// Strings are a 4-byte length and the bytes; lists a 4-byte count and the strings; integers 8
// bytes little-endian. A malformed payload is refused with a message naming what is wrong.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tide {

struct LaunchRequest {
  std::vector<std::string> argv;         // argv[0]: a path to the program
  std::vector<std::string> environment;  // "NAME=value": exactly the program's environment
  std::string workDir;
};

struct LauncherMessage {
  enum class Kind : char { kSlot = 'S', kLaunch = 'L', kStop = 'T', kReap = 'R' };
  Kind kind = Kind::kLaunch;
  LaunchRequest launch;  // kLaunch
  pid_t pid = 0;         // kStop, kReap
};

std::string encodeLaunch(const LaunchRequest& request);
std::string encodeReap(pid_t pid);
std::string encodeStop(pid_t pid);
std::string encodeNewSlot();
std::string encodeAnswer(int64_t value);
// Throw std::runtime_error naming what is malformed.
LauncherMessage decodeLauncherMessage(std::string_view payload);
int64_t decodeAnswer(std::string_view payload);

// The largest payload either side accepts: far above any argv and environment a kernel execs.
inline constexpr uint32_t kMaxLauncherFrame = 64u << 20;

// Sends one frame, with `descriptors` attached. False (errno set) when the peer is gone.
bool sendFrame(int socket, std::string_view payload, const std::vector<int>& descriptors = {});
// Receives one frame and the descriptors that came with it (the caller owns them). False at
// end of stream, on an error (errno set) or a frame over kMaxLauncherFrame (EMSGSIZE); any
// descriptors received are closed then.
bool receiveFrame(int socket, std::string& payload, std::vector<int>& descriptors);

}  // namespace tide
