#include "deploy/nm/process_group_records.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/process_tree.h"
#include "deploy/nm/process_group.h"

namespace tide::nm {
namespace fs = std::filesystem;

namespace {
constexpr char kSuffix[] = ".pgid";
}  // namespace

std::string currentBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  return id;
}

ProcessGroupRecords::ProcessGroupRecords(std::string directory)
    : directory_(std::move(directory)) {}

void ProcessGroupRecords::ensureDirectory() const {
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (ec) throw std::runtime_error("cannot create " + directory_ + ": " + ec.message());
}

std::string ProcessGroupRecords::pathFor(const std::string& containerId) const {
  return directory_ + "/" + containerId + kSuffix;
}

std::string ProcessGroupRecords::record(const std::string& containerId, pid_t pgid) const {
  // Written to a temporary name and renamed, so a crash never leaves a half-written record.
  const std::string path = pathFor(containerId);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    const auto info = readProcess(pgid);
    out << pgid << " " << currentBootId() << " " << (info ? info->startTimeTicks : 0) << "\n";
    if (!out.flush()) return "cannot write " + temporary;
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) return "cannot rename " + temporary + ": " + ec.message();
  return "";
}

void ProcessGroupRecords::erase(const std::string& containerId) const {
  std::error_code ignored;
  fs::remove(pathFor(containerId), ignored);
}

ProcessGroupRecords::Cleanup ProcessGroupRecords::killRecordedGroups() const {
  Cleanup cleanup;
  const std::string bootId = currentBootId();
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory_, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  for (const fs::path& file : files) {
    if (file.extension() == kSuffix) {
      std::ifstream in(file);
      long pgid = 0;
      std::string recordedBoot;
      uint64_t startTicks = 0;
      if (in >> pgid >> recordedBoot && pgid > 1 && recordedBoot == bootId) {
        const pid_t leader = static_cast<pid_t>(pgid);
        in >> startTicks;  // absent in records of older versions
        // The supervisor, if it still runs (same start time: not a reused pid), holds every
        // process of its container below it, whatever session they moved to.
        const auto info = readProcess(leader);
        if (info && info->state != 'Z' && startTicks != 0 && info->startTimeTicks == startTicks) {
          killDescendants(leader);
          ::kill(leader, SIGKILL);
          cleanup.killed.push_back(leader);
        }
        if (signalProcessGroup(leader, SIGKILL) &&
            (cleanup.killed.empty() || cleanup.killed.back() != leader)) {
          cleanup.killed.push_back(leader);
        }
      }
    }
    std::error_code ignored;
    if (fs::remove(file, ignored)) ++cleanup.recordsRemoved;
  }
  return cleanup;
}

}  // namespace tide::nm
