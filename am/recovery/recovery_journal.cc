#include "am/recovery/recovery_journal.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/append_log.h"
#include "common/enum_names.h"
#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::am {
namespace {

using Kind = JournalRecord::Kind;

// Each kind's "t" on the wire, in Kind's order.
constexpr const char* kKindNames[] = {"attempt", "job",   "executor", "launch",
                                      "commit",  "stage", "bounds",   "unpersist"};

const char* kindName(Kind kind) {
  return enumName(kind, kKindNames, "?");
}

using Fields = rest::JsonFields<JournalRecord>;
using R = JournalRecord;

// The job is kept as the job file's JSON, nested as an object on the wire.
void readJob(const rest::JsonObjectReader& in, JournalRecord& r) {
  r.jobJson = rest::toJsonString(in.requireObject("job").value());
}
void writeJob(rest::JsonWriter& out, const JournalRecord& r) {
  const rapidjson::Document job = rest::parseJson(r.jobJson);
  out.key("job").value(job);
}

// A commit's blocks as [partition, size] pairs.
void readBlocks(const rest::JsonObjectReader& in, JournalRecord& r) {
  const rest::JsonArrayReader blocks = in.requireArray("blocks");
  for (size_t i = 0; i < blocks.size(); ++i) {
    const rest::JsonArrayReader pair = blocks.arrayAt(i);
    if (pair.size() != 2) {
      throw rest::JsonFieldError(blocks.elementPath(i), "expected [partition, size]");
    }
    r.blocks.push_back({pair.int64At(0), pair.int64At(1)});
  }
}
void writeBlocks(rest::JsonWriter& out, const JournalRecord& r) {
  out.key("blocks").startArray();
  for (const auto& block : r.blocks) {
    out.startArray().value(block.partition).value(block.size).endArray();
  }
  out.endArray();
}

bool hasNode(const JournalRecord& r) {
  return !r.node.empty();
}
bool hasUrl(const JournalRecord& r) {
  return !r.url.empty();
}

const Fields& taskFields() {
  static const Fields fields = Fields()
                                   .required("task", &R::taskId)
                                   .required("job", &R::jobId)
                                   .required("stage", &R::stageId)
                                   .required("index", &R::index)
                                   .required("attempt", &R::attempt)
                                   .required("executor", &R::executorId);
  return fields;
}

// Each kind's members after "t", as one table that drives its writer and its reader.
const Fields& kindFields(Kind kind) {
  static const Fields attempt =
      Fields().required("n", &R::attemptNumber).required("id", &R::attemptId);
  static const Fields job = Fields().required("id", &R::jobId).custom("job", readJob, writeJob);
  static const Fields executor = Fields()
                                     .required("id", &R::executorId)
                                     .required("container", &R::containerId)
                                     .optional("node", &R::node, "")
                                     .writeIf(hasNode)
                                     .optional("url", &R::url, "")
                                     .writeIf(hasUrl);
  static const Fields commit = Fields()
                                   .inherit(taskFields())
                                   .optional("node", &R::node, "")
                                   .optional("ms", &R::durationMs, 0)
                                   .custom("blocks", readBlocks, writeBlocks);
  static const Fields stageDone =
      Fields().required("job", &R::jobId).required("stage", &R::stageId);
  static const Fields bounds = Fields()
                                   .required("min", &R::minExecutors)
                                   .required("initial", &R::initialExecutors)
                                   .required("max", &R::maxExecutors);
  static const Fields unpersist = Fields().required("stage", &R::stageId);
  switch (kind) {
    case Kind::kAttempt:
      return attempt;
    case Kind::kJob:
      return job;
    case Kind::kExecutor:
      return executor;
    case Kind::kLaunch:
      return taskFields();
    case Kind::kCommit:
      return commit;
    case Kind::kStageDone:
      return stageDone;
    case Kind::kBounds:
      return bounds;
    case Kind::kUnpersist:
      break;
  }
  return unpersist;
}

JournalRecord decodeRecord(std::string_view line) {
  const rapidjson::Document doc = rest::parseJson(line);
  const rest::JsonObjectReader in(doc);
  const std::string type = in.requireString("t");
  const std::optional<Kind> kind = enumFromName<Kind>(type, kKindNames);
  if (!kind) throw rest::JsonFieldError("t", "unknown record type '" + type + "'");
  JournalRecord r;
  r.kind = *kind;
  kindFields(r.kind).readInto(in, r);
  return r;
}

std::string systemError(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

JournalRecord JournalRecord::attemptStarted(int number, std::string id) {
  JournalRecord r;
  r.kind = Kind::kAttempt;
  r.attemptNumber = number;
  r.attemptId = std::move(id);
  return r;
}

JournalRecord JournalRecord::jobAccepted(std::string jobId, std::string jobJson) {
  JournalRecord r;
  r.kind = Kind::kJob;
  r.jobId = std::move(jobId);
  r.jobJson = std::move(jobJson);
  return r;
}

JournalRecord JournalRecord::executorStarted(std::string executorId, std::string containerId,
                                             std::string node, std::string url) {
  JournalRecord r;
  r.kind = Kind::kExecutor;
  r.executorId = std::move(executorId);
  r.containerId = std::move(containerId);
  r.node = std::move(node);
  r.url = std::move(url);
  return r;
}

JournalRecord JournalRecord::taskLaunched(int64_t taskId, std::string jobId, std::string stageId,
                                          int64_t index, int attempt, std::string executorId) {
  JournalRecord r;
  r.kind = Kind::kLaunch;
  r.taskId = taskId;
  r.jobId = std::move(jobId);
  r.stageId = std::move(stageId);
  r.index = index;
  r.attempt = attempt;
  r.executorId = std::move(executorId);
  return r;
}

JournalRecord JournalRecord::taskCommitted(int64_t taskId, std::string jobId, std::string stageId,
                                           int64_t index, int attempt, std::string executorId,
                                           std::string node, int64_t durationMs,
                                           std::vector<rest::BlockOutput> blocks) {
  JournalRecord r = taskLaunched(taskId, std::move(jobId), std::move(stageId), index, attempt,
                                 std::move(executorId));
  r.kind = Kind::kCommit;
  r.node = std::move(node);
  r.durationMs = durationMs;
  r.blocks = std::move(blocks);
  return r;
}

JournalRecord JournalRecord::stageDone(std::string jobId, std::string stageId) {
  JournalRecord r;
  r.kind = Kind::kStageDone;
  r.jobId = std::move(jobId);
  r.stageId = std::move(stageId);
  return r;
}

JournalRecord JournalRecord::boundsChanged(int min, int initial, int max) {
  JournalRecord r;
  r.kind = Kind::kBounds;
  r.minExecutors = min;
  r.initialExecutors = initial;
  r.maxExecutors = max;
  return r;
}

JournalRecord JournalRecord::unpersisted(std::string stageId) {
  JournalRecord r;
  r.kind = Kind::kUnpersist;
  r.stageId = std::move(stageId);
  return r;
}

std::string encodeJournalHeader() {
  return logHeader(kJournalMagic, kJournalVersion);
}

std::string encodeJournalRecord(const JournalRecord& r) {
  rest::JsonWriter out;
  out.startObject().field("t", kindName(r.kind));
  kindFields(r.kind).writeMembers(out, r);
  out.endObject();
  return out.str() + "\n";
}

JournalContents decodeJournal(std::string_view text, const std::string& source) {
  JournalContents contents;
  JournalContents read = decodeJournal(
      text, source, [&](JournalRecord&& r) { contents.records.push_back(std::move(r)); });
  read.records = std::move(contents.records);
  return read;
}

JournalContents decodeJournal(std::string_view text, const std::string& source,
                              const std::function<void(JournalRecord&&)>& onRecord) {
  JournalContents contents;
  const LogReplay replay = replayLog(
      text, kJournalMagic, kJournalVersion,
      [&](std::string_view line) { onRecord(decodeRecord(line)); },
      [&](LogDefect defect, size_t lineNumber, const std::string& detail) {
        const std::string where = source + ":" + std::to_string(lineNumber);
        switch (defect) {
          case LogDefect::kNotThisFormat:
            throw JournalError(where + ": not a tide AM journal (expected the header '" +
                               std::string(kJournalMagic) + " " + std::to_string(kJournalVersion) +
                               "')");
          case LogDefect::kUnreadableVersion:
            throw JournalError(where + ": unreadable journal version '" + detail + "'");
          case LogDefect::kNewerVersion:
            throw JournalError(where + ": journal version " + detail +
                               " was written by a newer tide; this tide-am reads version " +
                               std::to_string(kJournalVersion) +
                               " and will not start over silently");
          case LogDefect::kBadVersion:
            throw JournalError(where + ": bad journal version " + detail);
          case LogDefect::kCorruptRecord:
            throw JournalError(where + ": corrupt record: " + detail);
        }
      });
  if (replay.version > 0) contents.version = replay.version;
  contents.tornTail = replay.tornTail;
  contents.validLength = replay.validLength;
  return contents;
}

JournalSummary summarizeJournal(const std::vector<JournalRecord>& records) {
  JournalSummarizer summarizer;
  for (const JournalRecord& r : records) summarizer.add(r);
  return summarizer.summary();
}

void JournalSummarizer::add(const JournalRecord& r) {
  JournalSummary& summary = summary_;
  std::map<int64_t, JournalRecord>& unfinished = unfinished_;
  switch (r.kind) {
    case Kind::kAttempt:
      summary.lastAttempt = std::max(summary.lastAttempt, r.attemptNumber);
      break;
    case Kind::kJob:
      ++summary.jobs;
      break;
    case Kind::kExecutor:
      if (r.executorId.size() > 1 && r.executorId[0] == 'e' &&
          r.executorId.find_first_not_of("0123456789", 1) == std::string::npos) {
        summary.highestExecutorNumber =
            std::max(summary.highestExecutorNumber, std::stoi(r.executorId.substr(1)));
      }
      break;
    case Kind::kLaunch:
      summary.highestTaskId = std::max(summary.highestTaskId, r.taskId);
      unfinished[r.taskId] = r;
      break;
    case Kind::kCommit:
      summary.highestTaskId = std::max(summary.highestTaskId, r.taskId);
      ++summary.commits;
      // Every launch of that task index is over: the index is done.
      for (auto it = unfinished.begin(); it != unfinished.end();) {
        const JournalRecord& l = it->second;
        if (l.jobId == r.jobId && l.stageId == r.stageId && l.index == r.index) {
          it = unfinished.erase(it);
        } else {
          ++it;
        }
      }
      break;
    case Kind::kBounds:
      summary.lastBounds = r;
      break;
    case Kind::kStageDone:
    case Kind::kUnpersist:
      break;
  }
}

JournalSummary JournalSummarizer::summary() const {
  JournalSummary summary = summary_;
  for (const auto& [id, launch] : unfinished_) summary.unfinishedLaunches.push_back(launch);
  return summary;
}

// ---------------------------------------------------------------------------------------------

RecoveryJournal::RecoveryJournal(const std::string& directory)
    : directory_(directory), path_(directory + "/" + kJournalFileName) {
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec)
    throw JournalError("cannot create the staging directory " + directory_ + ": " + ec.message());
  ::chmod(directory_.c_str(), 0700);
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) throw JournalError(systemError("cannot open the AM journal", path_));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const std::string error = systemError("cannot read the AM journal", path_);
    ::close(fd_);
    throw JournalError(error);
  }
  const size_t size = static_cast<size_t>(info.st_size);
  JournalContents read;
  JournalSummarizer summarizer;
  try {
    read = decodeFile(size, [&](JournalRecord&& r) {
      summarizer.add(r);
      ++replayedRecords_;
    });
  } catch (...) {
    ::close(fd_);
    throw;
  }
  summary_ = summarizer.summary();
  tornTail_ = read.tornTail;
  replayedLength_ = read.validLength;
  // Cut a torn tail off, so that what is appended next starts on a line of its own.
  const size_t keep = read.validLength;
  if (keep < size && ::ftruncate(fd_, static_cast<off_t>(keep)) != 0) {
    const std::string error = systemError("cannot cut the torn tail of", path_);
    ::close(fd_);
    throw JournalError(error);
  }
  if (keep == 0) writeAll(encodeJournalHeader());
  sync();
}

JournalContents RecoveryJournal::decodeFile(
    size_t length, const std::function<void(JournalRecord&&)>& onRecord) const {
  if (length == 0) return decodeJournal("", path_, onRecord);
  // Mapped, not read into memory: the pages are the file's, dropped again under pressure.
  void* mapped = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (mapped == MAP_FAILED) throw JournalError(systemError("cannot read the AM journal", path_));
  ::madvise(mapped, length, MADV_SEQUENTIAL);
  struct Unmap {
    void* at;
    size_t length;
    ~Unmap() { ::munmap(at, length); }
  } unmap{mapped, length};
  return decodeJournal(std::string_view(static_cast<const char*>(mapped), length), path_, onRecord);
}

JournalContents RecoveryJournal::replayed() const {
  std::vector<JournalRecord> records;
  JournalContents contents =
      decodeFile(replayedLength_, [&](JournalRecord&& r) { records.push_back(std::move(r)); });
  contents.records = std::move(records);
  contents.tornTail = tornTail_;
  return contents;
}

void RecoveryJournal::forEachReplayed(const std::function<void(const JournalRecord&)>& fn) const {
  decodeFile(replayedLength_, [&](JournalRecord&& r) { fn(r); });
}

RecoveryJournal::~RecoveryJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void RecoveryJournal::writeAll(const std::string& bytes) {
  if (!writeFully(fd_, bytes)) {
    throw JournalError(systemError("cannot append to the AM journal", path_));
  }
  appended_ += bytes.size();
}

void RecoveryJournal::append(const JournalRecord& record) {
  if (fd_ < 0) return;
  writeAll(encodeJournalRecord(record));
}

void RecoveryJournal::sync() {
  syncTo(appended_.load());
}

void RecoveryJournal::syncTo(uint64_t position) {
  if (durable_.load() >= position) return;
  std::lock_guard<std::mutex> lock(syncMutex_);
  if (fd_ < 0 || durable_.load() >= position) return;  // another caller's fsync covered it
  const uint64_t covered = appended_.load();
  if (::fdatasync(fd_) != 0) throw JournalError(systemError("cannot fsync the AM journal", path_));
  durable_ = std::max(durable_.load(), covered);
}

void RecoveryJournal::remove() {
  std::lock_guard<std::mutex> lock(syncMutex_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  std::filesystem::remove_all(directory_, ec);
}

}  // namespace tide::am
