#include "am/status/event_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/append_log.h"
#include "common/durable_file.h"
#include "common/version.h"
#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::am {
namespace {

using rest::JsonWriter;

std::string line(const JsonWriter& w) {
  return w.str() + "\n";
}

std::string headerLine() {
  JsonWriter w;
  w.startObject()
      .field("type", "header")
      .field("format", kEventLogFormat)
      .field("version", kEventLogVersion)
      .field("tide", std::string(versionNumber()))
      .endObject();
  return line(w);
}

// A record: its type, then the members its table writes.
template <typename T>
std::string recordLine(const char* type, const rest::JsonFields<T>& fields, const T& value) {
  JsonWriter w;
  w.startObject().field("type", type);
  fields.writeMembers(w, value);
  w.endObject();
  return line(w);
}

std::string applicationLine(const EventLogApplication& app) {
  return recordLine("application", eventLogApplicationFields(), app);
}

std::string addedLine(const ExecutorLifetime& e) {
  return recordLine("executorAdded", executorAddedFields(), e);
}

std::string stageLine(const StageSubmission& stage) {
  return recordLine("stageSubmitted", stageSubmittedFields(), stage);
}

std::string removedLine(const std::string& id, TimeMs atMs, const std::string& reason) {
  JsonWriter w;
  w.startObject()
      .field("type", "executorRemoved")
      .field("id", id)
      .field("atMs", atMs)
      .field("reason", reason)
      .endObject();
  return line(w);
}

std::string pointLine(const AllocationPoint& point) {
  // {"type":"point", <the API's point fields>}: the point's object with the type in front.
  JsonWriter w;
  writeAllocationPoint(w, point);
  const std::string object = w.str();
  return "{\"type\":\"point\"," + object.substr(1) + "\n";
}

void rawField(JsonWriter& w, const char* name, const std::string& document) {
  w.key(name);
  w.raw().RawValue(document.data(), document.size(), rapidjson::kObjectType);
}

int openForAppend(const std::string& path) {
  // A symlink in the log's place is refused, not followed: in a shared history directory it
  // could point at any file of this user.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    throw std::runtime_error("cannot open the event log " + path + ": " + std::strerror(errno));
  }
  return fd;
}

}  // namespace

const rest::JsonFields<EventLogApplication>& eventLogApplicationFields() {
  using A = EventLogApplication;
  static const rest::JsonFields<A> fields = rest::JsonFields<A>()
                                                .required("applicationId", &A::applicationId)
                                                .required("attemptId", &A::attemptId)
                                                .optional("user", &A::user, "")
                                                .required("startedAtEpochMs", &A::startedAtEpochMs);
  return fields;
}

const rest::JsonFields<ExecutorLifetime>& executorAddedFields() {
  using E = ExecutorLifetime;
  static const rest::JsonFields<E> fields =
      rest::JsonFields<E>()
          .required("id", &E::id)
          .optional("host", &E::host, "")
          .optional("container", &E::container, "")
          .optional("node", &E::node, "")
          .optional("pid", &E::pid, 0)
          .required("atMs", &E::addedAtMs)
          .optional("resourceProfileId", &E::resourceProfileId, 0)
          .optional("cores", &E::cores, 0)
          .optional("memoryMb", &E::memoryMb, 0);
  return fields;
}

const rest::JsonFields<StageSubmission>& stageSubmittedFields() {
  using S = StageSubmission;
  static const rest::JsonFields<S> fields =
      rest::JsonFields<S>()
          .required("stageId", &S::stageId)
          .required("numTasks", &S::numTasks)
          .optional("cpus", &S::cpus, 1)
          .optional("resourceProfileId", &S::resourceProfileId, 0)
          .optional("executorCores", &S::executorCores, 0)
          .optional("executorMemoryMb", &S::executorMemoryMb, 0)
          .required("atMs", &S::atMs);
  return fields;
}

std::string eventLogPath(const std::string& dir, const std::string& applicationId) {
  return dir + "/" + applicationId + ".jsonl";
}

EventLog::EventLog(std::string path, const EventLogApplication& application,
                   uint64_t compactAtBytes, DurationMs snapshotEveryMs)
    : path_(std::move(path)), compactAtBytes_(compactAtBytes), snapshotEveryMs_(snapshotEveryMs) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    throw std::runtime_error("cannot create the history directory " + parent.string() + ": " +
                             ec.message());
  }
  fd_ = openForAppend(path_);
  struct stat st {};
  if (::fstat(fd_, &st) == 0) bytes_ = static_cast<uint64_t>(st.st_size);
  headerLines_ = headerLine() + applicationLine(application);
  std::lock_guard<std::mutex> lock(mu_);
  if (!writeLocked(headerLines_)) throw std::runtime_error(error_);
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::executorAdded(ExecutorLifetime executor) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.push_back(std::move(executor));
}

void EventLog::executorRemoved(const std::string& id, TimeMs atMs, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  queuedRemovals_.push_back({id, {atMs, reason}});
}

void EventLog::stageSubmitted(StageSubmission stage) {
  std::lock_guard<std::mutex> lock(mu_);
  queuedStages_.push_back(std::move(stage));
}

void EventLog::rememberLocked(const ExecutorLifetime& executor) {
  if (executors_.emplace(executor.id, executor).second) executorOrder_.push_back(executor.id);
  while (executorOrder_.size() > kMaxExecutors) {
    executors_.erase(executorOrder_.front());
    executorOrder_.pop_front();
    ++executorsDropped_;
  }
}

bool EventLog::flush(const AllocationHistory& history, const LiveDocuments& documents, TimeMs nowMs,
                     bool last) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return false;
  std::string text;
  for (const ExecutorLifetime& e : queued_) {
    text += addedLine(e);
    rememberLocked(e);
  }
  queued_.clear();
  for (const auto& [id, removal] : queuedRemovals_) {
    auto it = executors_.find(id);
    // The first reason is the one that counts (a lost executor is then also released).
    if (it != executors_.end() && it->second.removedAtMs >= 0) continue;
    text += removedLine(id, removal.first, removal.second);
    if (it != executors_.end()) {
      it->second.removedAtMs = removal.first;
      it->second.removedReason = removal.second;
    }
  }
  queuedRemovals_.clear();
  for (StageSubmission& stage : queuedStages_) {
    text += stageLine(stage);
    const std::string id = stage.stageId;
    if (stages_.count(id) == 0) stageOrder_.push_back(id);
    stages_[id] = std::move(stage);
    while (stageOrder_.size() > kMaxStages) {
      stages_.erase(stageOrder_.front());
      stageOrder_.pop_front();
    }
  }
  queuedStages_.clear();
  for (const AllocationPoint& point : history.since(lastPointMs_)) {
    text += pointLine(point);
    lastPointMs_ = point.atMs;
  }
  const bool due = last || lastSnapshotMs_ < 0 || nowMs - lastSnapshotMs_ >= snapshotEveryMs_;
  if (due &&
      (documents.status != lastDocuments_.status ||
       documents.executors != lastDocuments_.executors || documents.jobs != lastDocuments_.jobs ||
       documents.decisions != lastDocuments_.decisions)) {
    lastSnapshotMs_ = nowMs;
    JsonWriter w;
    w.startObject().field("type", "snapshot").field("atMs", nowMs);
    rawField(w, "status", documents.status);
    rawField(w, "executors", documents.executors);
    rawField(w, "jobs", documents.jobs);
    rawField(w, "decisions", documents.decisions);
    w.endObject();
    lastSnapshotLine_ = line(w);
    text += lastSnapshotLine_;
    lastDocuments_ = documents;
  }
  if (text.empty()) return true;
  if (!writeLocked(text)) return false;
  if (bytes_ > compactAtBytes_) compactLocked(history);
  return error_.empty();
}

bool EventLog::end(TimeMs atMs, int64_t endedAtEpochMs, const std::string& finalStatus,
                   const std::string& diagnostics) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return false;
  JsonWriter w;
  w.startObject()
      .field("type", "end")
      .field("atMs", atMs)
      .field("endedAtEpochMs", endedAtEpochMs)
      .field("finalStatus", finalStatus)
      .field("diagnostics", diagnostics)
      .endObject();
  endLine_ = line(w);
  if (!writeLocked(endLine_)) return false;
  ::fdatasync(fd_);  // the end is what `tide status APP` reads once the RM says it ended
  return true;
}

bool EventLog::writeLocked(const std::string& text) {
  if (!writeFully(fd_, text)) {
    error_ = "cannot write the event log " + path_ + ": " + std::strerror(errno);
    return false;
  }
  bytes_ += text.size();
  return true;
}

void EventLog::compactLocked(const AllocationHistory& history) {
  std::string text = headerLines_;
  for (const std::string& id : executorOrder_) {
    const ExecutorLifetime& e = executors_.at(id);
    text += addedLine(e);
    if (e.removedAtMs >= 0) text += removedLine(e.id, e.removedAtMs, e.removedReason);
  }
  if (executorsDropped_ > 0) {
    JsonWriter w;
    w.startObject().field("type", "executorsDropped").field("count", executorsDropped_).endObject();
    text += line(w);
  }
  for (const std::string& id : stageOrder_) text += stageLine(stages_.at(id));
  for (const AllocationPoint& point : history.since(-1)) text += pointLine(point);
  text += lastSnapshotLine_ + endLine_;
  // Aside, then renamed over the log: a reader sees the old file or the new one, whole.
  const std::string aside = path_ + ".compacting";
  std::string error;
  const int fd = createFileDurably(aside, text, error);
  if (fd < 0) {
    error_ = "cannot compact the event log " + path_ + ": " + error;
    return;
  }
  if (std::rename(aside.c_str(), path_.c_str()) != 0) {
    error_ = "cannot compact the event log " + path_ + ": " + std::strerror(errno);
    ::close(fd);
    return;
  }
  ::close(fd_);
  fd_ = fd;  // the renamed file, still open; O_APPEND is not needed: one writer, at its end
  bytes_ = text.size();
  ++compactions_;
}

std::string EventLog::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

int EventLog::compactions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compactions_;
}

}  // namespace tide::am
