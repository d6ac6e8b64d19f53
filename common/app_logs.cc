#include "common/app_logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace tide {
namespace fs = std::filesystem;
namespace {

int64_t modifiedEpochMs(const struct stat& info) {
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000 + info.st_mtim.tv_nsec / 1000000;
}

// Whether `path` or anything below it was modified at or after `sinceEpochMs`; symlinks are not
// followed. It stops at the first such entry: an application still in use answers at once
// (its dir, or the first file looked at, is recent), so a sweep over a log dir of hundreds of
// applications and hundreds of thousands of task logs walks only the ones it removes.
bool modifiedSince(const fs::path& path, int64_t sinceEpochMs) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return false;
  if (modifiedEpochMs(info) >= sinceEpochMs) return true;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (::lstat(it->path().c_str(), &info) == 0 && modifiedEpochMs(info) >= sinceEpochMs) {
      return true;
    }
  }
  return false;
}

Status checkIds(const std::string& appId, const std::string& containerId) {
  if (!isPlainPathComponent(appId)) {
    return Status::invalidArgument("bad application id '" + appId +
                                   "': expected 1-200 letters, digits, '_', '-' or '.'");
  }
  if (!isPlainPathComponent(containerId)) {
    return Status::invalidArgument("bad container id '" + containerId +
                                   "': expected 1-200 letters, digits, '_', '-' or '.'");
  }
  return Status();
}

bool isInside(const fs::path& inner, const fs::path& outer) {
  const std::string prefix = outer.string() + "/";
  return inner.string().rfind(prefix, 0) == 0;
}

}  // namespace

bool isPlainPathComponent(const std::string& name) {
  return !name.empty() && name.size() <= 200 && name.front() != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
         });
}

std::string taskDirName(std::string_view stageId, int64_t index, int attempt) {
  std::string name;
  name.reserve(stageId.size() + 24);
  for (char c : stageId) {
    const bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    name += safe ? c : '_';
  }
  if (name.empty() || name[0] == '.') name.insert(name.begin(), '_');
  name += '-' + std::to_string(index) + '-' + std::to_string(attempt);
  return name;
}

std::string containerLogDir(const std::string& logDir, const std::string& appId,
                            const std::string& containerId) {
  return logDir + "/" + appId + "/" + containerId;
}

Status listApplicationLogs(const std::string& logDir, const std::string& appId,
                           std::vector<ContainerLogs>* containers) {
  containers->clear();
  if (Status ids = checkIds(appId, "x"); !ids.ok()) return ids;
  const fs::path appDir = fs::path(logDir) / appId;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(appDir, ec))) {
    return Status::notFound("no logs of application " + appId + " on this node");
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(appDir, ec)) {
    const std::string containerId = entry.path().filename().string();
    if (!isPlainPathComponent(containerId) || !entry.is_directory(ec) || entry.is_symlink(ec)) {
      continue;
    }
    ContainerLogs logs;
    logs.containerId = containerId;
    std::string executorId;
    if (FILE* file = std::fopen((entry.path() / kExecutorIdFile).c_str(), "r")) {
      char buffer[64] = {};
      const size_t got = std::fread(buffer, 1, sizeof buffer - 1, file);
      std::fclose(file);
      executorId.assign(buffer, got);
      while (!executorId.empty() && std::isspace(static_cast<unsigned char>(executorId.back())))
        executorId.pop_back();
      if (!isPlainPathComponent(executorId)) executorId.clear();
    }
    logs.executorId = executorId;
    std::error_code walk;
    for (fs::recursive_directory_iterator it(entry.path(), walk), end; !walk && it != end;
         it.increment(walk)) {
      const std::string name = it->path().filename().string();
      if (!isPlainPathComponent(name)) {
        if (it->is_directory(walk)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_symlink(walk) || !it->is_regular_file(walk)) continue;
      struct stat info {};
      if (::lstat(it->path().c_str(), &info) != 0) continue;
      logs.files.push_back(
          {fs::relative(it->path(), entry.path()).string(), static_cast<int64_t>(info.st_size)});
    }
    std::sort(logs.files.begin(), logs.files.end(),
              [](const LogFile& a, const LogFile& b) { return a.path < b.path; });
    containers->push_back(std::move(logs));
  }
  std::sort(
      containers->begin(), containers->end(),
      [](const ContainerLogs& a, const ContainerLogs& b) { return a.containerId < b.containerId; });
  return Status();
}

Status resolveLogFile(const std::string& logDir, const std::string& appId,
                      const std::string& containerId, const std::string& relativePath,
                      std::string* absolutePath) {
  if (Status ids = checkIds(appId, containerId); !ids.ok()) return ids;
  if (relativePath.empty()) return Status::invalidArgument("no file named after the container id");
  if (relativePath.front() == '/') {
    return Status::invalidArgument("bad log path '" + relativePath +
                                   "': must be relative to the container's directory");
  }
  size_t start = 0;
  while (start <= relativePath.size()) {
    const size_t slash = relativePath.find('/', start);
    const std::string component =
        relativePath.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!isPlainPathComponent(component)) {
      return Status::invalidArgument(
          "bad log path '" + relativePath + "': component '" + component +
          "' must be 1-200 letters, digits, '_', '-' or '.' and not start with '.'");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::error_code ec;
  const fs::path root = fs::canonical(fs::path(logDir), ec);
  if (ec) return Status::notFound("no logs of application " + appId + " on this node");
  const fs::path containerDir = fs::canonical(root / appId / containerId, ec);
  if (ec) {
    return Status::notFound("no logs of container " + containerId + " of application " + appId +
                            " on this node");
  }
  // The application's and the container's directories must be real ones, not links elsewhere.
  if (containerDir != root / appId / containerId) {
    return Status::invalidArgument("the log directory of container " + containerId +
                                   " leads outside the node's log directory");
  }
  const fs::path file = fs::canonical(containerDir / relativePath, ec);
  if (ec) {
    return Status::notFound("no file '" + relativePath + "' in the logs of container " +
                            containerId);
  }
  if (!isInside(file, containerDir)) {
    return Status::invalidArgument("log path '" + relativePath +
                                   "' leads outside the container's log directory");
  }
  if (!fs::is_regular_file(file, ec)) {
    return Status::invalidArgument("log path '" + relativePath + "' is not a file");
  }
  *absolutePath = file.string();
  return Status();
}

Status readLogFile(const std::string& path, std::optional<int64_t> tailBytes,
                   std::string* content) {
  content->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Status::notFound("cannot open " + path);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::invalidArgument(path + " is not a file");
  }
  const int64_t size = info.st_size;
  const int64_t length =
      tailBytes ? std::min<int64_t>(std::max<int64_t>(*tailBytes, 0), size) : size;
  content->resize(static_cast<size_t>(length));
  int64_t done = 0;
  while (done < length) {
    const ssize_t got = ::pread(fd, content->data() + done, static_cast<size_t>(length - done),
                                static_cast<off_t>(size - length + done));
    if (got <= 0) break;
    done += got;
  }
  ::close(fd);
  content->resize(static_cast<size_t>(done));
  return Status();
}

std::vector<std::string> removeExpiredApplicationLogs(const std::string& logDir,
                                                      int64_t retentionMs, int64_t nowEpochMs,
                                                      const std::set<std::string>& keep,
                                                      const std::function<bool()>& stopping) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(logDir, ec)) {
    if (stopping && stopping()) break;
    const std::string name = entry.path().filename().string();
    if (!isPlainPathComponent(name) || keep.count(name) != 0 || entry.is_symlink(ec) ||
        !entry.is_directory(ec)) {
      continue;
    }
    if (modifiedSince(entry.path(), nowEpochMs - retentionMs)) continue;
    std::error_code removeError;
    fs::remove_all(entry.path(), removeError);
    if (!removeError) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace tide
