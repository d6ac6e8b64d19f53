#include "deploy/nm/container_records.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/durable_file.h"
#include "deploy/nm/container_exit_file.h"
#include "deploy/nm/process_group.h"
#include "rest/json.h"

namespace tide::nm {
namespace fs = std::filesystem;

namespace {

constexpr char kRecordSuffix[] = ".json";
constexpr char kExitSuffix[] = ".exit";
constexpr char kLegacySuffix[] = ".pgid";

std::string readWholeFile(const fs::path& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `text` to path.tmp, fsyncs it, renames it over `path` and fsyncs the directory, so
// that after a crash the file is the old one or the new one, never a torn one.
std::string writeDurably(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::string error;
  const int fd = createFileDurably(temporary, text, error);
  if (fd < 0) return error;
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return "cannot rename " + temporary + ": " + std::strerror(errno);
  }
  // Best effort: the record is whole under one name or the other either way.
  (void)syncDirectory(fs::path(path).parent_path().string());
  return "";
}

ContainerRecords::Legacy readLegacy(const fs::path& file) {
  std::ifstream in(file);
  ContainerRecords::Legacy legacy;
  legacy.file = file.string();
  long pid = 0;
  if (in >> pid >> legacy.bootId) {
    legacy.pid = static_cast<pid_t>(pid);
    in >> legacy.startTimeTicks;  // absent in the oldest records
  }
  return legacy;
}

}  // namespace

std::string currentBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  return id;
}

std::string formatContainerRecord(const ContainerRecord& record) {
  rest::JsonWriter w;
  w.startObject()
      .field("version", kContainerRecordVersion)
      .field("containerId", record.containerId)
      .field("applicationId", record.applicationId)
      .field("token", record.token)
      .key("resource")
      .startObject()
      .field("memory", record.resource.memoryMb)
      .field("vCores", record.resource.vCores)
      .endObject()
      .field("workDir", record.workDir)
      .field("cgroupPath", record.cgroupPath)
      .field("pid", static_cast<int64_t>(record.pid))
      .field("startTimeTicks", record.startTimeTicks)
      .field("bootId", record.bootId);
  if (record.completion) {
    w.key("completion")
        .startObject()
        .field("exitStatus", record.completion->exitStatus)
        .field("diagnostics", record.completion->diagnostics)
        .endObject();
  }
  w.endObject();
  return w.str() + "\n";
}

ContainerRecord parseContainerRecord(std::string_view text, const std::string& source) {
  const std::string where = source.empty() ? "container record" : "container record " + source;
  try {
    const rapidjson::Document doc = rest::parseJson(text);
    const rest::JsonObjectReader object(doc);
    ContainerRecord record;
    record.version = object.requireInt("version");
    if (record.version > kContainerRecordVersion) {
      throw ContainerRecordError(where + ": format version " + std::to_string(record.version) +
                                 " was written by a newer tide-nm; this one reads version " +
                                 std::to_string(kContainerRecordVersion) +
                                 " (run the newer tide-nm, or remove the file)");
    }
    if (record.version < 1) {
      throw ContainerRecordError(where + ": format version " + std::to_string(record.version) +
                                 " is not one tide-nm ever wrote");
    }
    record.containerId = object.requireString("containerId");
    record.applicationId = object.requireString("applicationId");
    record.token = object.requireString("token");
    const rest::JsonObjectReader resource = object.requireObject("resource");
    record.resource.memoryMb = resource.requireInt64("memory");
    record.resource.vCores = resource.requireInt("vCores");
    record.workDir = object.requireString("workDir");
    record.cgroupPath = object.optionalString("cgroupPath");
    const int64_t pid = object.requireInt64("pid");
    if (pid <= 1 || pid > 0x3fffffff) {
      throw rest::JsonFieldError("pid",
                                 "expected a process id above 1, got " + std::to_string(pid));
    }
    record.pid = static_cast<pid_t>(pid);
    record.startTimeTicks = object.requireUint64("startTimeTicks");
    record.bootId = object.requireString("bootId");
    if (auto completion = object.optionalObject("completion")) {
      record.completion = ContainerRecord::Completion{completion->requireInt("exitStatus"),
                                                      completion->requireString("diagnostics")};
    }
    if (record.containerId.empty()) throw rest::JsonFieldError("containerId", "is empty");
    return record;
  } catch (const ContainerRecordError&) {
    throw;
  } catch (const std::exception& e) {
    throw ContainerRecordError(where + " cannot be read: " + e.what());
  }
}

bool isRecordedProcess(const ContainerRecord& record, const std::string& bootId,
                       const std::optional<ProcessInfo>& process) {
  return process && process->pid == record.pid && process->state != 'Z' &&
         record.startTimeTicks != 0 && process->startTimeTicks == record.startTimeTicks &&
         !record.bootId.empty() && record.bootId == bootId;
}

RecoveryDecision decideRecovery(const ContainerRecord& record, const std::string& bootId,
                                const std::optional<ProcessInfo>& process) {
  if (record.completion) {
    return {RecoveryAction::kReportCompleted,
            "it completed before the node manager stopped; the resource manager had not "
            "acknowledged it yet"};
  }
  if (record.bootId != bootId) {
    return {RecoveryAction::kEndedWhileNmDown, "the machine restarted since it was started"};
  }
  if (isRecordedProcess(record, bootId, process)) {
    return {RecoveryAction::kAdopt,
            "its supervisor (pid " + std::to_string(record.pid) + ", same start time) still runs"};
  }
  if (process && process->state != 'Z' && process->startTimeTicks != record.startTimeTicks) {
    return {RecoveryAction::kEndedWhileNmDown,
            "pid " + std::to_string(record.pid) +
                " now belongs to another process (another start time), left alone"};
  }
  return {RecoveryAction::kEndedWhileNmDown,
          "its supervisor (pid " + std::to_string(record.pid) + ") is gone"};
}

bool killRecordedContainer(pid_t pid, uint64_t startTimeTicks, const std::string& recordedBootId,
                           const std::string& bootId) {
  if (pid <= 1 || recordedBootId != bootId || startTimeTicks == 0) return false;
  const auto info = readProcess(pid);
  if (!info || info->state == 'Z' || info->startTimeTicks != startTimeTicks) return false;
  // The supervisor, still the recorded one, holds every process of its container below it,
  // whatever session they moved to. Stopped first, it can neither exit (handing its tree to
  // init) nor act while they are killed.
  ::kill(pid, SIGSTOP);
  killDescendants(pid);
  signalProcessGroup(pid, SIGKILL);
  ::kill(pid, SIGKILL);
  return true;
}

ContainerRecords::ContainerRecords(std::string directory) : directory_(std::move(directory)) {}

void ContainerRecords::ensureDirectory() const {
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (ec) throw std::runtime_error("cannot create " + directory_ + ": " + ec.message());
  // Records hold container tokens.
  ::chmod(directory_.c_str(), 0700);
}

std::string ContainerRecords::pathFor(const std::string& containerId) const {
  return directory_ + "/" + containerId + kRecordSuffix;
}

std::string ContainerRecords::exitFile(const std::string& containerId) const {
  return directory_ + "/" + containerId + kExitSuffix;
}

std::string ContainerRecords::write(const ContainerRecord& record) const {
  return writeDurably(pathFor(record.containerId), formatContainerRecord(record));
}

void ContainerRecords::erase(const std::string& containerId) const {
  std::error_code ignored;
  fs::remove(pathFor(containerId), ignored);
  fs::remove(exitFile(containerId), ignored);
}

std::optional<int> ContainerRecords::readExitStatus(const std::string& containerId) const {
  bool ok = false;
  const std::string text = readWholeFile(exitFile(containerId), &ok);
  if (!ok) return std::nullopt;
  return parseExitFile(text);
}

ContainerRecords::Contents ContainerRecords::load() const {
  Contents contents;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory_, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string extension = file.extension().string();
    if (extension == kRecordSuffix) {
      bool ok = false;
      const std::string text = readWholeFile(file, &ok);
      if (!ok) throw ContainerRecordError("container record " + file.string() + " cannot be read");
      ContainerRecord record = parseContainerRecord(text, file.string());
      if (record.containerId + kRecordSuffix != file.filename().string()) {
        throw ContainerRecordError("container record " + file.string() + " names container '" +
                                   record.containerId + "', not the one of its file name");
      }
      contents.records.push_back(std::move(record));
    } else if (extension == kLegacySuffix) {
      contents.legacy.push_back(readLegacy(file));
    } else if (extension == ".tmp") {
      // A write that never completed: the record before it (if any) is the valid one.
      std::error_code ignored;
      fs::remove(file, ignored);
    }
    // .exit files are read with their record.
  }
  return contents;
}

std::vector<pid_t> ContainerRecords::killLegacy(const std::vector<Legacy>& legacy) const {
  std::vector<pid_t> killed;
  const std::string bootId = currentBootId();
  for (const Legacy& record : legacy) {
    if (killRecordedContainer(record.pid, record.startTimeTicks, record.bootId, bootId)) {
      killed.push_back(record.pid);
    }
    std::error_code ignored;
    fs::remove(record.file, ignored);
  }
  return killed;
}

ContainerRecords::Cleanup ContainerRecords::killAll() const {
  Cleanup cleanup;
  const std::string bootId = currentBootId();
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory_, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  for (const fs::path& file : files) {
    const std::string extension = file.extension().string();
    if (extension == kRecordSuffix) {
      bool ok = false;
      const std::string text = readWholeFile(file, &ok);
      try {
        const ContainerRecord record = parseContainerRecord(text, file.string());
        if (!record.completion &&
            killRecordedContainer(record.pid, record.startTimeTicks, record.bootId, bootId)) {
          cleanup.killed.push_back(record.pid);
        }
      } catch (const ContainerRecordError& e) {
        cleanup.unreadable.push_back(e.what());
      }
    } else if (extension == kLegacySuffix) {
      for (pid_t pid : killLegacy({readLegacy(file)})) cleanup.killed.push_back(pid);
      ++cleanup.recordsRemoved;
      continue;  // killLegacy removed it
    }
    std::error_code ignored;
    if (fs::remove(file, ignored) && extension == kRecordSuffix) ++cleanup.recordsRemoved;
  }
  return cleanup;
}

}  // namespace tide::nm
