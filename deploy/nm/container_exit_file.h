#pragma once

// The exit file a container's supervisor (tide-container --exit-file FILE) writes just before it
// exits: how the container's command ended, for a node manager that is not the supervisor's
// parent (one restarted after a crash cannot wait for it). One line, format version 1:
//   "1 exited <code>\n"  or  "1 signaled <signal>\n"
// Written to FILE.tmp and renamed, so a reader sees all of it or nothing.

#include <sys/wait.h>

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace tide::nm {

inline std::string formatExitFile(int waitStatus) {
  if (WIFSIGNALED(waitStatus)) return "1 signaled " + std::to_string(WTERMSIG(waitStatus)) + "\n";
  return "1 exited " + std::to_string(WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : 255) + "\n";
}

// The wait status an exit file stands for; nullopt when the text is not a version-1 exit file.
inline std::optional<int> parseExitFile(std::string_view text) {
  std::istringstream in{std::string(text)};
  int version = 0;
  std::string how;
  int number = -1;
  std::string extra;
  if (!(in >> version >> how >> number) || version != 1 || (in >> extra)) return std::nullopt;
  if (how == "exited" && number >= 0 && number <= 255) return W_EXITCODE(number, 0);
  if (how == "signaled" && number >= 1 && number < 65) return W_EXITCODE(0, number);
  return std::nullopt;
}

}  // namespace tide::nm
