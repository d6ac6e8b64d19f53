#pragma once

// Looking at processes from a test: whether one is gone, finding one by its command line and
// environment, running a command to its end.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace tide::testing_support {

// Gone: no such process, or a zombie nobody reaps (orphans go to a PID 1 that may not reap).
bool processGone(pid_t pid);

// The pid of the process whose command line contains `commandPart` and whose environment has
// `variable`=`value` (e.g. the tide-am of one application), or 0.
pid_t findProcess(const std::string& commandPart, const std::string& variable,
                  const std::string& value);

// Processes whose working directory is inside `root` (containers, tasks, their children): what
// a run under `root` left behind. Found by walking /proc, not by names.
std::vector<pid_t> processesUnder(const std::filesystem::path& root);

// Runs a command to its end (bounded: a test failure and a stopped command when it takes
// longer than `timeout`) and returns its exit status and output (stdout and stderr, which go
// to `logPath`), in `workDir` when given.
struct CommandResult {
  int status = -1;
  std::string output;
};
CommandResult runCommand(const std::vector<std::string>& argv, const std::string& logPath,
                         std::chrono::milliseconds timeout, const std::string& workDir = "");

}  // namespace tide::testing_support
