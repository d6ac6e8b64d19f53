#pragma once

// The requests an executor sends to its supervisor launcher (`tide-container --serve`, one per
// executor) and the launcher's answers, over a Unix stream socket.
//
// Why a launcher: every command task runs below a tide-container supervisor. Exec'ing one per
// task costs a second exec per task (on a VM, where the dynamic loader's cpuid questions trap
// to the hypervisor, as much as the task's own exec). The launcher is exec'd once and forks a
// supervisor per task instead; the fork runs the same supervisor code (deploy/nm/
// container_main.cc).
//
// Frames: a 4-byte little-endian payload length, then the payload. Descriptors (SCM_RIGHTS)
// ride with the length. Payloads:
//   launch  'L', grace ms (int64), work dir, argv, environment; descriptors: stdout, stderr.
//           Answer: the supervisor's pid (its own process group), or -errno.
//   reap    'R', pid (int64). Answer: the exited supervisor's wait status, or -errno.
// A launched supervisor is not reaped until it is asked for, so its pid (and process group id)
// stays its own until the executor is done signalling it, as for a child of the executor.
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
  int64_t graceMs = 2000;  // after SIGTERM, how long before SIGKILL
};

struct LauncherMessage {
  enum class Kind : char { kLaunch = 'L', kReap = 'R' };
  Kind kind = Kind::kLaunch;
  LaunchRequest launch;  // kLaunch
  pid_t pid = 0;         // kReap
};

std::string encodeLaunch(const LaunchRequest& request);
std::string encodeReap(pid_t pid);
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
