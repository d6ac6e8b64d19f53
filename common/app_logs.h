#pragma once

// An application's kept logs on one node: the layout tide-nm writes, serves and expires, and
// that `tide logs` reads when it has the directory itself (a finished `tide run`).
//
//   <logDir>/<appId>/<containerId>/stdout, stderr             the container's own output
//   <logDir>/<appId>/<containerId>/tasks/<stage>-<index>-<attempt>/stdout, stderr
//                                                             each task attempt its executor ran
//   <logDir>/<appId>/<containerId>/.executor-id                the executor id (e3), if any
//
// Files are written there directly by the processes (never copied at the end), so nothing is
// lost when a container or task is killed. Every name a caller gives is checked to be a plain
// path component and every file read to lie inside the container's directory, symlinks
// resolved: a request can never reach outside it.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tide {

struct LogFile {
  std::string path;  // relative to the container's directory: "stderr", "tasks/s-0-1/stdout"
  int64_t size = 0;
};

struct ContainerLogs {
  std::string containerId;
  std::string executorId;  // "" for a container that is not an executor (the AM)
  std::vector<LogFile> files;
};

// The name of the file where the executor id is kept (hidden: never listed or served).
inline constexpr char kExecutorIdFile[] = ".executor-id";

// Whether `name` may be an application or container id or one component of a log path:
// 1-200 letters, digits, '_', '-' or '.', not starting with '.'.
bool isPlainPathComponent(const std::string& name);

// The folder of one task attempt below a container's work or log dir, without "tasks/":
// "<stage>-<index>-<attempt>", with characters other than [A-Za-z0-9._-] of the stage id made
// '_' (and a leading '_' before a '.' or an empty id), so that no id climbs out of tasks/ or
// names a hidden file.
std::string taskDirName(std::string_view stageId, int64_t index, int attempt);

// <logDir>/<appId>/<containerId>; the ids are not checked here.
std::string containerLogDir(const std::string& logDir, const std::string& appId,
                            const std::string& containerId);

// Every container of the application with its files (sorted by container id, then path).
// INVALID_ARGUMENT for a bad id, NOT_FOUND when the node has no logs of it.
Status listApplicationLogs(const std::string& logDir, const std::string& appId,
                           std::vector<ContainerLogs>* containers);

// The file `relativePath` ("stderr", "tasks/s-0-0/stdout") of the container, resolved to an
// absolute path inside its directory. INVALID_ARGUMENT for a bad id, a path component that is
// empty, "..", hidden or has other characters, an absolute path, or a file that resolves
// outside the container's directory (a symlink); NOT_FOUND for a missing file.
Status resolveLogFile(const std::string& logDir, const std::string& appId,
                      const std::string& containerId, const std::string& relativePath,
                      std::string* absolutePath);

// The file's content; with `tailBytes`, at most its last that many bytes.
Status readLogFile(const std::string& path, std::optional<int64_t> tailBytes, std::string* content);

// Deletes the application directories under `logDir` whose newest modification (of the
// directory, its containers' directories and their files) is older than `nowEpochMs -
// retentionMs`, except those of the applications in `keep` (still running here). Returns the
// ids removed; a missing logDir is none. An application still written to is seen at its first
// recent entry, so the sweep walks only what it removes. `stopping`, when given, is asked
// before each application: true ends the sweep there.
std::vector<std::string> removeExpiredApplicationLogs(const std::string& logDir,
                                                      int64_t retentionMs, int64_t nowEpochMs,
                                                      const std::set<std::string>& keep = {},
                                                      const std::function<bool()>& stopping = {});

}  // namespace tide
