#include "deploy/rm/state_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/append_log.h"
#include "common/durable_file.h"
#include "rest/json.h"
#include "rest/json_fields.h"

namespace tide::rm {
namespace {

namespace fs = std::filesystem;

std::string errnoText() {
  return std::strerror(errno);
}

std::array<uint32_t, 256> makeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

// Each record's JSON as one table that drives both its writer and its reader.
const rest::JsonFields<StoredAttempt>& attemptFields() {
  using A = StoredAttempt;
  static const rest::JsonFields<A> fields = rest::JsonFields<A>()
                                                .required("number", &A::number)
                                                .required("id", &A::id)
                                                .required("token", &A::token)
                                                .required("state", &A::state)
                                                .optional("amContainerId", &A::amContainerId, "");
  return fields;
}

const rest::JsonFields<ApplicationCounters>& forgottenFields() {
  using C = ApplicationCounters;
  static const rest::JsonFields<C> fields = rest::JsonFields<C>()
                                                .optional("finished", &C::forgottenFinished, 0)
                                                .optional("failed", &C::forgottenFailed, 0)
                                                .optional("killed", &C::forgottenKilled, 0);
  return fields;
}

const rest::JsonFields<ApplicationCounters>& applicationCountersFields() {
  using C = ApplicationCounters;
  static const rest::JsonFields<C> fields =
      rest::JsonFields<C>()
          .required("nextApplicationNumber", &C::nextApplicationNumber)
          .optional("appsSubmitted", &C::appsSubmitted, 0)
          .group("forgotten", forgottenFields(), /*required=*/false);
  return fields;
}

const rest::JsonFields<StoredCounters>& countersFields() {
  using C = StoredCounters;
  static const rest::JsonFields<C> fields = rest::JsonFields<C>()
                                                .required("clusterTimestamp", &C::clusterTimestamp)
                                                .required("epoch", &C::epoch)
                                                .inherit(applicationCountersFields());
  return fields;
}

// The submission with its own codec (rest/messages/cluster.h), nested as JSON.
void readSubmission(const rest::JsonObjectReader& reader, ApplicationRecord& record) {
  record.submission = rest::applicationSubmissionFromJson(reader.require("submission"));
}
void writeSubmission(rest::JsonWriter& out, const ApplicationRecord& record) {
  const rapidjson::Document submission = rest::parseJson(rest::toJson(record.submission));
  out.key("submission").value(submission);
}

const rest::JsonFields<ApplicationRecord>& applicationRecordFields() {
  using R = ApplicationRecord;
  static const rest::JsonFields<R> fields =
      rest::JsonFields<R>()
          .required("id", &R::id)
          .required("number", &R::number)
          .custom("submission", readSubmission, writeSubmission)
          .required("state", &R::state)
          .optional("finalStatus", &R::finalStatus, "")
          .optional("diagnostics", &R::diagnostics, "")
          .optional("trackingUrl", &R::trackingUrl, "")
          .optional("startedTime", &R::startedTime, 0)
          .optional("finishedTime", &R::finishedTime, 0);
  return fields;
}

const rest::JsonFields<StoredApplication>& applicationFields() {
  static const rest::JsonFields<StoredApplication> fields =
      rest::JsonFields<StoredApplication>()
          .inherit(applicationRecordFields())
          .objects("attempts", &StoredApplication::attempts, attemptFields());
  return fields;
}

std::string recordJson(const StoreRecord& record) {
  rest::JsonWriter w;
  w.startObject();
  switch (record.kind) {
    case StoreRecord::Kind::kCounters:
      w.field("type", "cluster");
      countersFields().writeMembers(w, record.counters);
      break;
    case StoreRecord::Kind::kApplication:
      w.field("type", "application");
      applicationFields().writeMembers(w, record.application);
      break;
    case StoreRecord::Kind::kForget:
      w.field("type", "forget").field("id", record.forgetId);
      break;
  }
  w.endObject();
  return w.str();
}

StoreRecord recordFromJson(const std::string& json) {
  const rapidjson::Document document = rest::parseJson(json);
  const rest::JsonObjectReader r(document);
  const std::string type = r.requireString("type");
  if (type == "cluster") return StoreRecord::ofCounters(countersFields().read(r));
  if (type == "application") return StoreRecord::ofApplication(applicationFields().read(r));
  if (type == "forget") return StoreRecord::forget(r.requireString("id"));
  throw rest::JsonFieldError("type", "unknown record type '" + type + "'");
}

// A record line without its newline: "<8 hex> <json>". Throws on any defect.
StoreRecord decodeLine(const std::string& line) {
  if (line.size() < 10 || line[8] != ' ') {
    throw std::runtime_error("not a record (expected '<crc32> <json>')");
  }
  unsigned long expected = 0;
  try {
    size_t used = 0;
    expected = std::stoul(line.substr(0, 8), &used, 16);
    if (used != 8) throw std::invalid_argument("hex");
  } catch (const std::exception&) {
    throw std::runtime_error("the checksum '" + line.substr(0, 8) + "' is not 8 hex digits");
  }
  const std::string json = line.substr(9);
  if (crc32(json) != expected) throw std::runtime_error("checksum mismatch");
  return recordFromJson(json);
}

void fsyncOrThrow(int fd, const std::string& path) {
  if (::fsync(fd) != 0) throw StateStoreError("cannot fsync " + path + ": " + errnoText());
}

void writeAll(int fd, const std::string& data, const std::string& path) {
  if (!writeFully(fd, data)) throw StateStoreError("cannot write " + path + ": " + errnoText());
}

}  // namespace

bool StoredAttempt::operator==(const StoredAttempt& o) const {
  return number == o.number && id == o.id && token == o.token && state == o.state &&
         amContainerId == o.amContainerId;
}

bool StoredApplication::operator==(const StoredApplication& o) const {
  return id == o.id && number == o.number &&
         rest::toJson(submission) == rest::toJson(o.submission) && state == o.state &&
         finalStatus == o.finalStatus && diagnostics == o.diagnostics &&
         trackingUrl == o.trackingUrl && startedTime == o.startedTime &&
         finishedTime == o.finishedTime && attempts == o.attempts;
}

bool StoredCounters::operator==(const StoredCounters& o) const {
  return clusterTimestamp == o.clusterTimestamp && epoch == o.epoch &&
         nextApplicationNumber == o.nextApplicationNumber && appsSubmitted == o.appsSubmitted &&
         forgottenFinished == o.forgottenFinished && forgottenFailed == o.forgottenFailed &&
         forgottenKilled == o.forgottenKilled;
}

StoreRecord StoreRecord::ofCounters(StoredCounters counters) {
  StoreRecord record;
  record.kind = Kind::kCounters;
  record.counters = counters;
  return record;
}

StoreRecord StoreRecord::ofApplication(StoredApplication application) {
  StoreRecord record;
  record.kind = Kind::kApplication;
  record.application = std::move(application);
  return record;
}

StoreRecord StoreRecord::forget(std::string applicationId) {
  StoreRecord record;
  record.kind = Kind::kForget;
  record.forgetId = std::move(applicationId);
  return record;
}

uint32_t crc32(const std::string& data) {
  static const std::array<uint32_t, 256> table = makeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : data) c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string encodeHeader() {
  return logHeader(kStateStoreMagic, kStateStoreVersion);
}

std::string encodeRecord(const StoreRecord& record) {
  const std::string json = recordJson(record);
  char checksum[16];
  std::snprintf(checksum, sizeof(checksum), "%08x", crc32(json));
  return std::string(checksum) + " " + json + "\n";
}

void applyRecord(StoredState& state, const StoreRecord& record) {
  state.empty = false;
  switch (record.kind) {
    case StoreRecord::Kind::kCounters:
      state.counters = record.counters;
      break;
    case StoreRecord::Kind::kApplication:
      state.applications[record.application.id] = record.application;
      break;
    case StoreRecord::Kind::kForget:
      state.applications.erase(record.forgetId);
      break;
  }
}

ReplayResult replay(const std::string& text, const std::string& fileName) {
  ReplayResult result;
  const LogReplay replayed = replayLog(
      text, kStateStoreMagic, kStateStoreVersion,
      [&](std::string_view line) { applyRecord(result.state, decodeLine(std::string(line))); },
      [&](LogDefect defect, size_t lineNumber, const std::string& detail) {
        switch (defect) {
          case LogDefect::kNotThisFormat:
            throw StateStoreError(fileName +
                                  " is not a tide-rm state store (its first line is not '" +
                                  std::string(kStateStoreMagic) + " <version>')");
          case LogDefect::kUnreadableVersion:
            throw StateStoreError(fileName + ": unreadable format version '" + detail +
                                  "' on line 1");
          case LogDefect::kNewerVersion:
            throw StateStoreError(fileName + " was written by a newer tide-rm (format version " +
                                  detail + "; this tide-rm reads up to version " +
                                  std::to_string(kStateStoreVersion) +
                                  "): refusing to start rather than lose its applications");
          case LogDefect::kBadVersion:
            throw StateStoreError(fileName + ": invalid format version " + detail);
          case LogDefect::kCorruptRecord:
            throw StateStoreError(fileName + ": line " + std::to_string(lineNumber) +
                                  " is corrupt (" + detail +
                                  "); refusing to start rather than lose its applications "
                                  "(move the file away to start with an empty store)");
        }
      });
  // A log with its header is a store, even with no record yet.
  if (replayed.version > 0) result.state.empty = false;
  result.records = replayed.records;
  result.validBytes = replayed.validLength;
  result.tornTail = replayed.tornTail;
  return result;
}

std::string compact(const StoredState& state) {
  std::string text = encodeHeader();
  text += encodeRecord(StoreRecord::ofCounters(state.counters));
  for (const auto& [id, application] : state.applications) {
    text += encodeRecord(StoreRecord::ofApplication(application));
  }
  return text;
}

// ---------------------------------------------------------------------------------------------

StateStore::StateStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) {
    throw StateStoreError("cannot create the state store directory " + dir_ + ": " +
                          error.message());
  }
  ::chmod(dir_.c_str(), 0700);  // it holds AM tokens and application secrets
  const std::string lockPath = (fs::path(dir_) / "lock").string();
  lockFd_ = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lockFd_ < 0) throw StateStoreError("cannot open " + lockPath + ": " + errnoText());
  if (::flock(lockFd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lockFd_);
    lockFd_ = -1;
    throw StateStoreError("the state store " + dir_ + " is in use by another tide-rm (" + lockPath +
                          " is locked)");
  }
  const std::string path = logPath();
  std::string text;
  if (fs::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw StateStoreError("cannot read " + path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) throw StateStoreError("cannot read " + path);
    text = buffer.str();
  }
  ReplayResult replayed = replay(text, path);
  state_ = std::move(replayed.state);
  recordsAtOpen_ = replayed.records;
  tornTailAtOpen_ = replayed.tornTail;
  recordsInLog_ = replayed.records;
  if (replayed.tornTail || text.empty()) {
    // Rewrite what was valid (a fresh store gets its header).
    compactNow();
  } else {
    openLogForAppend();
  }
}

StateStore::~StateStore() {
  if (logFd_ >= 0) ::close(logFd_);
  if (lockFd_ >= 0) ::close(lockFd_);  // releases the lock
}

std::string StateStore::logPath() const {
  return (fs::path(dir_) / kStateLogName).string();
}

void StateStore::openLogForAppend() {
  if (logFd_ >= 0) ::close(logFd_);
  const std::string path = logPath();
  logFd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (logFd_ < 0) throw StateStoreError("cannot open " + path + " for appending: " + errnoText());
}

void StateStore::append(const std::vector<StoreRecord>& records) {
  if (records.empty()) return;
  std::string text;
  for (const StoreRecord& record : records) {
    text += encodeRecord(record);
    applyRecord(state_, record);
  }
  const std::string path = logPath();
  writeAll(logFd_, text, path);
  fsyncOrThrow(logFd_, path);
  recordsInLog_ += records.size();
  const size_t live = state_.applications.size() + 1;
  if (recordsInLog_ > std::max(compactAfter, 4 * live)) compactNow();
}

void StateStore::compactNow() {
  const std::string path = logPath();
  const std::string temporary = path + ".tmp";
  const StoredState& current = state_;
  // A fresh store is only its header.
  const std::string text = current.empty ? encodeHeader() : compact(current);
  std::string error;
  const int fd = createFileDurably(temporary, text, error);
  if (fd < 0) throw StateStoreError(error);
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    throw StateStoreError("cannot rename " + temporary + " to " + path + ": " + errnoText());
  }
  if (Status synced = syncDirectory(dir_); !synced.ok()) throw StateStoreError(synced.message());
  recordsInLog_ = current.empty ? 0 : 1 + current.applications.size();
  ++compactions_;
  openLogForAppend();
}

}  // namespace tide::rm
