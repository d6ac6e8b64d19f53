#include "tests/support/processes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/child_process.h"
#include "tests/support/files.h"

namespace tide::testing_support {

std::vector<pid_t> processesUnder(const std::filesystem::path& root) {
  std::vector<pid_t> found;
  const std::string prefix = std::filesystem::weakly_canonical(root).string();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code linkError;
    const std::filesystem::path cwd =
        std::filesystem::read_symlink(entry.path() / "cwd", linkError);
    if (linkError) continue;
    const std::string where = cwd.string();
    if (where.compare(0, prefix.size(), prefix) == 0) found.push_back(std::stoi(name));
  }
  return found;
}

bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const size_t afterName = line.rfind(')');
  return afterName != std::string::npos && line.size() > afterName + 2 &&
         line[afterName + 2] == 'Z';
}

pid_t findProcess(const std::string& commandPart, const std::string& variable,
                  const std::string& value) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = readFile(entry.path() / "cmdline");
    // The program itself (argv[0]), not a supervisor or shell naming it in its arguments
    // (every container runs below a tide-container whose arguments hold the command).
    const std::string program = cmdline.substr(0, cmdline.find('\0'));
    if (program.find(commandPart) == std::string::npos) continue;
    const std::string environ = readFile(entry.path() / "environ");
    const std::string wanted = variable + "=" + value;
    size_t start = 0;
    while (start < environ.size()) {
      const size_t end = environ.find('\0', start);
      if (environ.compare(start, (end == std::string::npos ? environ.size() : end) - start,
                          wanted) == 0) {
        return static_cast<pid_t>(std::stol(name));
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return 0;
}

CommandResult runCommand(const std::vector<std::string>& argv, const std::string& logPath,
                         std::chrono::milliseconds timeout, const std::string& workDir) {
  ChildSpec spec;
  spec.argv = argv;
  spec.logPath = logPath;
  spec.workDir = workDir;
  ChildProcess child(spec);
  CommandResult result;
  auto status = child.waitFor(timeout);
  if (!status) {
    child.stop();
    ADD_FAILURE() << argv[0] << " did not finish within " << timeout.count() << "ms";
  }
  result.status = status.value_or(-1);
  result.output = readFile(logPath);
  return result;
}

}  // namespace tide::testing_support
