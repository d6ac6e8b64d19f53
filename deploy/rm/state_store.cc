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

#include "rest/json.h"

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

void writeAttempt(rest::JsonWriter& w, const StoredAttempt& attempt) {
  w.startObject()
      .field("number", attempt.number)
      .field("id", attempt.id)
      .field("token", attempt.token)
      .field("state", attempt.state)
      .field("amContainerId", attempt.amContainerId)
      .endObject();
}

std::string recordJson(const StoreRecord& record) {
  rest::JsonWriter w;
  w.startObject();
  switch (record.kind) {
    case StoreRecord::Kind::kCounters: {
      const StoredCounters& c = record.counters;
      w.field("type", "cluster")
          .field("clusterTimestamp", c.clusterTimestamp)
          .field("epoch", c.epoch)
          .field("nextApplicationNumber", c.nextApplicationNumber)
          .field("appsSubmitted", c.appsSubmitted);
      w.key("forgotten")
          .startObject()
          .field("finished", c.forgottenFinished)
          .field("failed", c.forgottenFailed)
          .field("killed", c.forgottenKilled)
          .endObject();
      break;
    }
    case StoreRecord::Kind::kApplication: {
      const StoredApplication& a = record.application;
      const rapidjson::Document submission = rest::parseJson(rest::toJson(a.submission));
      w.field("type", "application")
          .field("id", a.id)
          .field("number", a.number)
          .key("submission")
          .value(submission)
          .field("state", a.state)
          .field("finalStatus", a.finalStatus)
          .field("diagnostics", a.diagnostics)
          .field("trackingUrl", a.trackingUrl)
          .field("startedTime", a.startedTime)
          .field("finishedTime", a.finishedTime);
      w.key("attempts").startArray();
      for (const StoredAttempt& attempt : a.attempts) writeAttempt(w, attempt);
      w.endArray();
      break;
    }
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
  if (type == "cluster") {
    StoredCounters c;
    c.clusterTimestamp = r.requireInt64("clusterTimestamp");
    c.epoch = r.requireInt64("epoch");
    c.nextApplicationNumber = r.requireInt("nextApplicationNumber");
    c.appsSubmitted = r.optionalInt("appsSubmitted", 0);
    if (auto forgotten = r.optionalObject("forgotten")) {
      c.forgottenFinished = forgotten->optionalInt("finished", 0);
      c.forgottenFailed = forgotten->optionalInt("failed", 0);
      c.forgottenKilled = forgotten->optionalInt("killed", 0);
    }
    return StoreRecord::ofCounters(c);
  }
  if (type == "application") {
    StoredApplication a;
    a.id = r.requireString("id");
    a.number = r.requireInt("number");
    a.submission = rest::applicationSubmissionFromJson(r.require("submission"));
    a.state = r.requireString("state");
    a.finalStatus = r.optionalString("finalStatus");
    a.diagnostics = r.optionalString("diagnostics");
    a.trackingUrl = r.optionalString("trackingUrl");
    a.startedTime = r.optionalInt64("startedTime", 0);
    a.finishedTime = r.optionalInt64("finishedTime", 0);
    const rest::JsonArrayReader attempts = r.requireArray("attempts");
    for (size_t i = 0; i < attempts.size(); ++i) {
      const rest::JsonObjectReader item = attempts.objectAt(i);
      StoredAttempt attempt;
      attempt.number = item.requireInt("number");
      attempt.id = item.requireString("id");
      attempt.token = item.requireString("token");
      attempt.state = item.requireString("state");
      attempt.amContainerId = item.optionalString("amContainerId");
      a.attempts.push_back(std::move(attempt));
    }
    return StoreRecord::ofApplication(std::move(a));
  }
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

void fsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw StateStoreError("cannot open directory " + dir + ": " + errnoText());
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) {
    errno = saved;
    throw StateStoreError("cannot fsync directory " + dir + ": " + errnoText());
  }
}

void writeAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw StateStoreError("cannot write " + path + ": " + errnoText());
    }
    done += static_cast<size_t>(n);
  }
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
  return std::string(kStateStoreMagic) + " " + std::to_string(kStateStoreVersion) + "\n";
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
  if (text.empty()) return result;
  const size_t headerEnd = text.find('\n');
  const std::string header = text.substr(0, headerEnd);
  const std::string magic = std::string(kStateStoreMagic) + " ";
  if (header.rfind(magic, 0) != 0) {
    if (headerEnd == std::string::npos && magic.rfind(header, 0) == 0) {
      // A crash while the very first line was written: nothing was ever stored.
      result.tornTail = true;
      return result;
    }
    throw StateStoreError(fileName + " is not a tide-rm state store (its first line is not '" +
                          std::string(kStateStoreMagic) + " <version>')");
  }
  int version = 0;
  try {
    size_t used = 0;
    version = std::stoi(header.substr(magic.size()), &used);
    if (used != header.size() - magic.size()) throw std::invalid_argument("version");
  } catch (const std::exception&) {
    throw StateStoreError(fileName + ": unreadable format version '" + header.substr(magic.size()) +
                          "' on line 1");
  }
  if (version > kStateStoreVersion) {
    throw StateStoreError(fileName + " was written by a newer tide-rm (format version " +
                          std::to_string(version) + "; this tide-rm reads up to version " +
                          std::to_string(kStateStoreVersion) +
                          "): refusing to start rather than lose its applications");
  }
  if (version < 1) {
    throw StateStoreError(fileName + ": invalid format version " + std::to_string(version));
  }
  if (headerEnd == std::string::npos) {
    result.tornTail = true;
    return result;
  }
  result.validBytes = headerEnd + 1;
  result.state.empty = false;
  size_t position = headerEnd + 1;
  size_t lineNumber = 1;
  while (position < text.size()) {
    ++lineNumber;
    const size_t end = text.find('\n', position);
    const bool last = end == std::string::npos || end + 1 == text.size();
    const std::string line =
        text.substr(position, end == std::string::npos ? std::string::npos : end - position);
    try {
      if (end == std::string::npos) throw std::runtime_error("cut short (no newline)");
      applyRecord(result.state, decodeLine(line));
      ++result.records;
      result.validBytes = end + 1;
    } catch (const std::exception& error) {
      if (last) {
        result.tornTail = true;  // a crash while appending it
        return result;
      }
      throw StateStoreError(fileName + ": line " + std::to_string(lineNumber) + " is corrupt (" +
                            error.what() +
                            "); refusing to start rather than lose its applications (move the "
                            "file away to start with an empty store)");
    }
    position = end + 1;
  }
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
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw StateStoreError("cannot create " + temporary + ": " + errnoText());
  try {
    writeAll(fd, text, temporary);
    fsyncOrThrow(fd, temporary);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    throw StateStoreError("cannot rename " + temporary + " to " + path + ": " + errnoText());
  }
  fsyncDir(dir_);
  recordsInLog_ = current.empty ? 0 : 1 + current.applications.size();
  ++compactions_;
  openLogForAppend();
}

}  // namespace tide::rm
