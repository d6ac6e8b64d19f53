#include "am/recovery/recovery_journal.h"

#include <algorithm>

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>

#include "am/recovery/journal_compaction.h"
#include "common/append_log.h"
#include "common/durable_file.h"
#include "common/enum_names.h"
#include "rest/json.h"

namespace tide::am {
namespace {

using Kind = JournalRecord::Kind;

// Each kind's "t" on the wire, in Kind's order.
constexpr const char* kKindNames[] = {"attempt", "job",    "executor",  "launch",  "commit",
                                      "stage",   "bounds", "unpersist", "commits", "migrate"};

const char* kindName(Kind kind) {
  return enumName(kind, kKindNames, "?");
}

void writeTask(rest::JsonWriter& out, const JournalRecord& r) {
  out.field("task", r.taskId)
      .field("job", r.jobId)
      .field("stage", r.stageId)
      .field("index", r.index)
      .field("attempt", r.attempt)
      .field("executor", r.executorId);
}

void readTask(const rest::JsonObjectReader& in, JournalRecord& r) {
  r.taskId = in.requireInt64("task");
  r.jobId = in.requireString("job");
  r.stageId = in.requireString("stage");
  r.index = in.requireInt64("index");
  r.attempt = in.requireInt("attempt");
  r.executorId = in.requireString("executor");
}

// [[a, b], ...] of int64 pairs.
std::vector<std::pair<int64_t, int64_t>> readPairs(const rest::JsonArrayReader& array,
                                                   const char* expected) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const rest::JsonArrayReader pair = array.arrayAt(i);
    if (pair.size() != 2) throw rest::JsonFieldError(array.elementPath(i), expected);
    pairs.emplace_back(pair.int64At(0), pair.int64At(1));
  }
  return pairs;
}

void readCommits(const rest::JsonObjectReader& in, JournalRecord& r) {
  r.jobId = in.requireString("job");
  r.stageId = in.requireString("stage");
  r.taskId = in.requireInt64("task");
  r.indexRanges = readPairs(in.requireArray("indices"), "expected [first, last]");
  int64_t indices = 0;
  int64_t previousLast = -2;
  for (const auto& [first, last] : r.indexRanges) {
    if (first <= previousLast + 1 || last < first) {
      throw rest::JsonFieldError("indices", "ranges must be ascending, apart and not empty");
    }
    indices += last - first + 1;
    previousLast = last;
  }
  const rest::JsonArrayReader executors = in.requireArray("executors");
  int64_t shared = 0;
  for (size_t i = 0; i < executors.size(); ++i) {
    const rest::JsonArrayReader share = executors.arrayAt(i);
    if (share.size() != 3 || share.int64At(2) <= 0) {
      throw rest::JsonFieldError(executors.elementPath(i), "expected [executor, node, count > 0]");
    }
    r.shares.push_back({share.stringAt(0), share.stringAt(1), share.int64At(2)});
    shared += r.shares.back().count;
  }
  r.durations = readPairs(in.requireArray("ms"), "expected [ms, count]");
  int64_t timed = 0;
  for (const auto& [ms, count] : r.durations) timed += count;
  if (shared != indices || timed != indices) {
    throw rest::JsonFieldError("executors", std::to_string(indices) + " indices but " +
                                                std::to_string(shared) + " executor counts and " +
                                                std::to_string(timed) + " durations");
  }
}

// Reads the launch and commit records exactly as encodeJournalRecord writes them (two a task:
// nearly all of a journal), without a JSON document; anything else, or anything unusual in them
// (an escape, blocks, another field order), is left to the JSON reader.
class ExactTaskRecordReader {
 public:
  explicit ExactTaskRecordReader(std::string_view line) : line_(line) {}

  std::optional<JournalRecord> read() {
    if (line_.find('\\') != std::string_view::npos) return std::nullopt;
    JournalRecord r;
    if (literal(R"({"t":"launch",)")) {
      r.kind = Kind::kLaunch;
    } else if (literal(R"({"t":"commit",)")) {
      r.kind = Kind::kCommit;
    } else {
      return std::nullopt;
    }
    int64_t attempt = 0;
    if (!(literal(R"("task":)") && number(&r.taskId) && literal(R"(,"job":)") && string(&r.jobId) &&
          literal(R"(,"stage":)") && string(&r.stageId) && literal(R"(,"index":)") &&
          number(&r.index) && literal(R"(,"attempt":)") && number(&attempt) &&
          attempt <= INT32_MAX && literal(R"(,"executor":)") && string(&r.executorId))) {
      return std::nullopt;
    }
    r.attempt = static_cast<int>(attempt);
    if (r.kind == Kind::kCommit &&
        !(literal(R"(,"node":)") && string(&r.node) && literal(R"(,"ms":)") &&
          number(&r.durationMs) && literal(R"(,"blocks":[])"))) {
      return std::nullopt;
    }
    if (!literal("}") || at_ != line_.size()) return std::nullopt;
    return r;
  }

 private:
  bool literal(std::string_view text) {
    if (line_.substr(at_, text.size()) != text) return false;
    at_ += text.size();
    return true;
  }
  bool number(int64_t* value) {
    const size_t start = at_;
    int64_t v = 0;
    while (at_ < line_.size() && line_[at_] >= '0' && line_[at_] <= '9') {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (line_[at_++] - '0');
    }
    // Digits only, no leading zero: the JSON reader decides anything else.
    if (at_ == start || (line_[start] == '0' && at_ - start > 1)) return false;
    *value = v;
    return true;
  }
  bool string(std::string* value) {
    if (at_ >= line_.size() || line_[at_] != '"') return false;
    const size_t end = line_.find('"', at_ + 1);
    if (end == std::string_view::npos) return false;
    const std::string_view text = line_.substr(at_ + 1, end - at_ - 1);
    for (const char c : text) {
      // Control characters are JSON errors, and bytes above 0x7f need the UTF-8 check.
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) {
        return false;
      }
    }
    value->assign(text);
    at_ = end + 1;
    return true;
  }

  std::string_view line_;
  size_t at_ = 0;
};

JournalRecord decodeRecord(std::string_view line) {
  if (std::optional<JournalRecord> task = ExactTaskRecordReader(line).read()) return *task;
  const rapidjson::Document doc = rest::parseJson(line);
  const rest::JsonObjectReader in(doc);
  const std::string type = in.requireString("t");
  const std::optional<Kind> kind = enumFromName<Kind>(type, kKindNames);
  if (!kind) throw rest::JsonFieldError("t", "unknown record type '" + type + "'");
  JournalRecord r;
  r.kind = *kind;
  switch (r.kind) {
    case Kind::kAttempt:
      r.attemptNumber = in.requireInt("n");
      r.attemptId = in.requireString("id");
      break;
    case Kind::kJob:
      r.jobId = in.requireString("id");
      r.jobJson = rest::toJsonString(in.requireObject("job").value());
      break;
    case Kind::kExecutor:
      r.executorId = in.requireString("id");
      r.containerId = in.requireString("container");
      r.node = in.optionalString("node");
      r.url = in.optionalString("url");
      r.profileId = static_cast<int>(in.optionalInt64("profile", 0));
      r.profileCores = static_cast<int>(in.optionalInt64("cores", 0));
      r.profileMemoryMb = in.optionalInt64("memory_mb", 0);
      break;
    case Kind::kLaunch:
      readTask(in, r);
      break;
    case Kind::kCommit: {
      readTask(in, r);
      r.node = in.optionalString("node");
      r.durationMs = in.optionalInt64("ms", 0);
      for (const auto& [partition, size] :
           readPairs(in.requireArray("blocks"), "expected [partition, size]")) {
        r.blocks.push_back({partition, size});
      }
      break;
    }
    case Kind::kStageDone:
      r.jobId = in.requireString("job");
      r.stageId = in.requireString("stage");
      break;
    case Kind::kBounds:
      r.minExecutors = in.requireInt("min");
      r.initialExecutors = in.requireInt("initial");
      r.maxExecutors = in.requireInt("max");
      break;
    case Kind::kUnpersist:
      r.stageId = in.requireString("stage");
      break;
    case Kind::kCommits:
      readCommits(in, r);
      break;
    case Kind::kMigrate:
      r.stageId = in.requireString("stage");
      r.index = in.requireInt64("index");
      r.executorId = in.requireString("executor");
      r.toExecutor = in.requireString("to");
      r.node = in.optionalString("node");
      break;
  }
  return r;
}

std::string systemError(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// The first `length` bytes of a journal file, mapped read-only rather than read into memory.
// Read once front to back (or twice, for compaction), the pages behind the reader are handed
// back as it goes, so that reading a journal of gigabytes does not count gigabytes of the
// file's pages in the AM's resident size.
class MappedJournal {
 public:
  MappedJournal(int fd, size_t length, const std::string& path) : length_(length) {
    if (length_ == 0) return;
    at_ = ::mmap(nullptr, length_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (at_ == MAP_FAILED) throw JournalError(systemError("cannot read the AM journal", path));
    ::madvise(at_, length_, MADV_SEQUENTIAL);
  }
  ~MappedJournal() {
    if (length_ > 0) ::munmap(at_, length_);
  }
  MappedJournal(const MappedJournal&) = delete;
  MappedJournal& operator=(const MappedJournal&) = delete;

  std::string_view text() const {
    return length_ == 0 ? std::string_view()
                        : std::string_view(static_cast<const char*>(at_), length_);
  }
  // The reader is done with everything before `line` (a view into text()).
  void readUpTo(std::string_view line) {
    const size_t offset = static_cast<size_t>(line.data() - static_cast<const char*>(at_));
    if (offset < released_) released_ = 0;  // a second pass starts over
    constexpr size_t kStep = 16 << 20;
    if (offset - released_ < kStep) return;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t upTo = offset / page * page;
    ::madvise(at_, upTo, MADV_DONTNEED);
    released_ = upTo;
  }

 private:
  void* at_ = nullptr;
  size_t length_ = 0;
  size_t released_ = 0;
};

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

JournalRecord JournalRecord::outputMigrated(std::string stageId, int64_t index,
                                            std::string fromExecutor, std::string toExecutor,
                                            std::string node) {
  JournalRecord r;
  r.kind = Kind::kMigrate;
  r.stageId = std::move(stageId);
  r.index = index;
  r.executorId = std::move(fromExecutor);
  r.toExecutor = std::move(toExecutor);
  r.node = std::move(node);
  return r;
}

JournalRecord JournalRecord::unpersisted(std::string stageId) {
  JournalRecord r;
  r.kind = Kind::kUnpersist;
  r.stageId = std::move(stageId);
  return r;
}

int64_t JournalRecord::foldedCommits() const {
  int64_t n = 0;
  for (const CommitShare& share : shares) n += share.count;
  return n;
}

void forEachFoldedCommit(const JournalRecord& commits,
                         const std::function<void(const JournalRecord& commit)>& fn) {
  JournalRecord commit;
  commit.kind = Kind::kCommit;
  commit.jobId = commits.jobId;
  commit.stageId = commits.stageId;
  auto share = commits.shares.begin();
  int64_t shareLeft = share == commits.shares.end() ? 0 : share->count;
  auto duration = commits.durations.begin();
  int64_t durationLeft = duration == commits.durations.end() ? 0 : duration->second;
  for (const auto& [first, last] : commits.indexRanges) {
    for (int64_t index = first; index <= last; ++index) {
      // decodeRecord checked that the shares and the durations add up to the indices.
      while (shareLeft == 0) shareLeft = (++share)->count;
      while (durationLeft == 0) durationLeft = (++duration)->second;
      commit.index = index;
      if (commit.executorId != share->executorId) {
        commit.executorId = share->executorId;
        commit.node = share->node;
      }
      commit.durationMs = duration->first;
      --shareLeft;
      --durationLeft;
      fn(commit);
    }
  }
}

std::string encodeJournalHeader() {
  return logHeader(kJournalMagic, kJournalVersion);
}

std::string encodeJournalRecord(const JournalRecord& r) {
  rest::JsonWriter out;
  out.startObject().field("t", kindName(r.kind));
  switch (r.kind) {
    case Kind::kAttempt:
      out.field("n", r.attemptNumber).field("id", r.attemptId);
      break;
    case Kind::kJob: {
      out.field("id", r.jobId).key("job");
      const rapidjson::Document job = rest::parseJson(r.jobJson);
      out.value(job);
      break;
    }
    case Kind::kExecutor:
      out.field("id", r.executorId).field("container", r.containerId);
      if (!r.node.empty()) out.field("node", r.node);
      if (!r.url.empty()) out.field("url", r.url);
      if (r.profileId != 0) {
        out.field("profile", r.profileId)
            .field("cores", r.profileCores)
            .field("memory_mb", r.profileMemoryMb);
      }
      break;
    case Kind::kLaunch:
      writeTask(out, r);
      break;
    case Kind::kCommit:
      writeTask(out, r);
      out.field("node", r.node).field("ms", r.durationMs).key("blocks").startArray();
      for (const auto& block : r.blocks) {
        out.startArray().value(block.partition).value(block.size).endArray();
      }
      out.endArray();
      break;
    case Kind::kStageDone:
      out.field("job", r.jobId).field("stage", r.stageId);
      break;
    case Kind::kBounds:
      out.field("min", r.minExecutors)
          .field("initial", r.initialExecutors)
          .field("max", r.maxExecutors);
      break;
    case Kind::kUnpersist:
      out.field("stage", r.stageId);
      break;
    case Kind::kCommits:
      out.field("job", r.jobId).field("stage", r.stageId).key("indices").startArray();
      for (const auto& [first, last] : r.indexRanges) {
        out.startArray().value(first).value(last).endArray();
      }
      out.endArray().field("task", r.taskId).key("executors").startArray();
      for (const CommitShare& share : r.shares) {
        out.startArray().value(share.executorId).value(share.node).value(share.count).endArray();
      }
      out.endArray().key("ms").startArray();
      for (const auto& [ms, count] : r.durations)
        out.startArray().value(ms).value(count).endArray();
      out.endArray();
      break;
    case Kind::kMigrate:
      out.field("stage", r.stageId)
          .field("index", r.index)
          .field("executor", r.executorId)
          .field("to", r.toExecutor)
          .field("node", r.node);
      break;
  }
  out.endObject();
  return out.str() + "\n";
}

JournalRecord decodeJournalRecord(std::string_view line) {
  return decodeRecord(line);
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
  return decodeJournalLines(text, source,
                            [&](std::string_view, JournalRecord&& r) { onRecord(std::move(r)); });
}

JournalContents decodeJournalLines(std::string_view text, const std::string& source,
                                   const JournalLineReader& onLine) {
  JournalContents contents;
  const LogReplay replay = replayLog(
      text, kJournalMagic, kJournalVersion,
      [&](std::string_view line) { onLine(line, decodeRecord(line)); },
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
      if (unfinished_.count(r.taskId) == 0) {
        unfinishedAt_[{r.jobId, r.stageId, r.index}].push_back(r.taskId);
      }
      unfinished_[r.taskId] = r;
      break;
    case Kind::kCommit:
      summary.highestTaskId = std::max(summary.highestTaskId, r.taskId);
      ++summary.commits;
      // Every launch of that task index is over: the index is done.
      finishLaunches(r.jobId, r.stageId, r.index, r.index);
      break;
    case Kind::kCommits:
      summary.highestTaskId = std::max(summary.highestTaskId, r.taskId);
      summary.commits += r.foldedCommits();
      for (const auto& [first, last] : r.indexRanges) {
        finishLaunches(r.jobId, r.stageId, first, last);
      }
      break;
    case Kind::kBounds:
      summary.lastBounds = r;
      break;
    case Kind::kStageDone:
    case Kind::kUnpersist:
    case Kind::kMigrate:
      break;
  }
}

void JournalSummarizer::finishLaunches(const std::string& jobId, const std::string& stageId,
                                       int64_t first, int64_t last) {
  auto it = unfinishedAt_.lower_bound({jobId, stageId, first});
  while (it != unfinishedAt_.end() && std::get<0>(it->first) == jobId &&
         std::get<1>(it->first) == stageId && std::get<2>(it->first) <= last) {
    for (int64_t taskId : it->second) unfinished_.erase(taskId);
    it = unfinishedAt_.erase(it);
  }
}

JournalSummary JournalSummarizer::summary() const {
  JournalSummary summary = summary_;
  for (const auto& [id, launch] : unfinished_) summary.unfinishedLaunches.push_back(launch);
  return summary;
}

// ---------------------------------------------------------------------------------------------

RecoveryJournal::RecoveryJournal(const std::string& directory, uint64_t compactAtBytes,
                                 std::function<void(const JournalCompaction&)> onCompacted)
    : directory_(directory),
      path_(directory + "/" + kJournalFileName),
      compactAtBytes_(compactAtBytes),
      onCompacted_(std::move(onCompacted)) {
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
  // A compaction the previous attempt did not finish: the journal itself is whole.
  ::unlink(compactingPath().c_str());
  fileBytes_ = keep;
  if (keep == 0) writeAll(encodeJournalHeader());
  compactedBytes_ = fileBytes_;
  sync();
}

JournalContents RecoveryJournal::decodeFile(
    size_t length, const std::function<void(JournalRecord&&)>& onRecord) const {
  MappedJournal mapped(fd_, length, path_);
  return decodeJournalLines(mapped.text(), path_, [&](std::string_view line, JournalRecord&& r) {
    mapped.readUpTo(line);
    onRecord(std::move(r));
  });
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
  if (!replaying_) throw std::logic_error("the AM journal was replayed already");
  decodeFile(replayedLength_, [&](JournalRecord&& r) { fn(r); });
}

void RecoveryJournal::doneReplaying() {
  replaying_ = false;
}

RecoveryJournal::~RecoveryJournal() {
  abandonCompaction();
  if (fd_ >= 0) ::close(fd_);
}

void RecoveryJournal::writeAll(const std::string& bytes) {
  if (!writeFully(fd_, bytes)) {
    throw JournalError(systemError("cannot append to the AM journal", path_));
  }
  appended_ += bytes.size();
  fileBytes_ += bytes.size();
}

void RecoveryJournal::append(const JournalRecord& record) {
  if (fd_ < 0) return;
  writeAll(encodeJournalRecord(record));
  if (compactor_.joinable()) {
    if (compactionEnded_.load()) completeCompaction();
  } else if (!replaying_ && compactAtBytes_ > 0 && fileBytes_ >= compactAtBytes_ &&
             fileBytes_ >= 2 * compactedBytes_) {
    startCompaction();
  }
}

std::string RecoveryJournal::compactingPath() const {
  return path_ + ".compacting";
}

void RecoveryJournal::startCompaction() {
  const int source = ::dup(fd_);
  if (source < 0) return;  // tried again at the next append
  compactingUpTo_ = fileBytes_;
  compactionEnded_ = false;
  cancelCompaction_ = false;
  compaction_ = JournalCompaction{};
  compaction_.bytesBefore = fileBytes_;
  compactor_ = std::thread([this, source, length = compactingUpTo_, target = compactingPath()] {
    JournalCompaction& result = compaction_;
    const auto started = std::chrono::steady_clock::now();
    const auto msSince = [](std::chrono::steady_clock::time_point from) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - from)
          .count();
    };
    const int out = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    try {
      if (out < 0) throw JournalError(systemError("cannot create", target));
      MappedJournal mapped(source, length, path_);
      std::string buffer;
      auto flush = [&] {
        if (!writeFully(out, buffer)) throw JournalError(systemError("cannot write", target));
        buffer.clear();
      };
      const JournalCompaction folded = compactJournal(
          mapped.text(), path_,
          [&](std::string_view piece) {
            if (cancelCompaction_.load()) throw JournalError("cancelled");
            buffer.append(piece);
            if (buffer.size() >= (1 << 20)) flush();
          },
          [&](std::string_view line) { mapped.readUpTo(line); });
      flush();
      result.foldMs = msSince(started);
      const auto syncing = std::chrono::steady_clock::now();
      if (::fdatasync(out) != 0) throw JournalError(systemError("cannot fsync", target));
      result.syncMs = msSince(syncing);
      result.recordsBefore = folded.recordsBefore;
      result.recordsAfter = folded.recordsAfter;
      result.commitsFolded = folded.commitsFolded;
      result.ok = true;
    } catch (const std::exception& e) {
      result.error = e.what();
    }
    if (out >= 0) ::close(out);
    ::close(source);
    // The fold's buffers were freed on this thread's malloc arena, which keeps them: without
    // this the AM's resident size ratchets up by one compaction's peak (bench/scale/am_memory.py
    // at 10^8 tasks). Here, off the AM's lock, rather than where the AM hears of the end.
    ::malloc_trim(0);
    compactionEnded_ = true;
  });
}

void RecoveryJournal::completeCompaction() {
  compactor_.join();
  JournalCompaction result = compaction_;
  const std::string target = compactingPath();
  int next = -1;
  try {
    if (!result.ok) throw JournalError(result.error);
    next = ::open(target.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
    if (next < 0) throw JournalError(systemError("cannot open", target));
    struct stat folded {};
    if (::fstat(next, &folded) != 0) throw JournalError(systemError("cannot read", target));
    // The records appended while the thread worked, copied behind its fold a piece at a time.
    std::string piece;
    for (uint64_t at = compactingUpTo_; at < fileBytes_;) {
      piece.resize(static_cast<size_t>(std::min<uint64_t>(fileBytes_ - at, 1 << 20)));
      const ssize_t got = ::pread(fd_, piece.data(), piece.size(), static_cast<off_t>(at));
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        throw JournalError(got < 0 ? systemError("cannot read", path_)
                                   : "cannot read " + path_ + ": it ends before " +
                                         std::to_string(fileBytes_) + " bytes");
      }
      piece.resize(static_cast<size_t>(got));
      if (!writeFully(next, piece)) throw JournalError(systemError("cannot write", target));
      at += static_cast<uint64_t>(got);
    }
    if (::fdatasync(next) != 0) throw JournalError(systemError("cannot fsync", target));
    struct stat info {};
    if (::fstat(next, &info) != 0) throw JournalError(systemError("cannot read", target));
    if (::rename(target.c_str(), path_.c_str()) != 0) {
      throw JournalError(systemError("cannot rename " + target + " to", path_));
    }
    // The rename itself survives a crash of the machine once the directory is fsync'd.
    // Best effort: the journal is whole either way, under its old name or its new one.
    (void)syncDirectory(directory_);
    std::lock_guard<std::mutex> lock(syncMutex_);
    ::close(fd_);
    fd_ = next;
    next = -1;
    // All of it was fsync'd above.
    durable_ = appended_.load();
    fileBytes_ = static_cast<uint64_t>(info.st_size);
    // The fold alone: records appended meanwhile count towards the next compaction.
    compactedBytes_ = static_cast<uint64_t>(folded.st_size);
    result.bytesAfter = fileBytes_;
    ++compactions_;
  } catch (const std::exception& e) {
    if (next >= 0) ::close(next);
    ::unlink(target.c_str());
    result.ok = false;
    result.error = e.what();
    // Not again before the file has grown as much once more.
    compactedBytes_ = fileBytes_;
  }
  if (onCompacted_) onCompacted_(result);
}

void RecoveryJournal::finishCompactionForTest() {
  if (!compactor_.joinable()) return;
  while (!compactionEnded_.load()) std::this_thread::yield();
  completeCompaction();
}

void RecoveryJournal::abandonCompaction() {
  if (!compactor_.joinable()) return;
  cancelCompaction_ = true;
  compactor_.join();
  ::unlink(compactingPath().c_str());
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
  abandonCompaction();
  std::lock_guard<std::mutex> lock(syncMutex_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  std::filesystem::remove_all(directory_, ec);
}

}  // namespace tide::am
