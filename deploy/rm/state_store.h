#pragma once

// tide-rm's state store (YARN's RMStateStore, as a file): what a restarted tide-rm must not
// forget — its applications, their attempts with their AM tokens, their submissions (with
// TIDE_APP_SECRET) and the id counter — kept in one append-only log, `state.log`, in
// rm.stateStore.dir.
//
// Format (version 1), one record per line:
//   tide-rm-state 1                       the header: magic and format version
//   <crc32 as 8 hex digits> <JSON>        a record; the CRC-32 (IEEE) covers the JSON text
// Records, replayed in order (the last one about an application wins):
//   {"type":"cluster","clusterTimestamp":T,"epoch":E,"nextApplicationNumber":N,
//    "appsSubmitted":S,"forgotten":{"finished":F,"failed":F,"killed":K}}
//   {"type":"application","id":...,"number":N,"submission":{...},"state":...,
//    "finalStatus":...,"diagnostics":...,"trackingUrl":...,"startedTime":T,"finishedTime":T,
//    "attempts":[{"number":N,"id":...,"token":...,"state":...,"amContainerId":...}]}
//   {"type":"forget","id":...}          an application dropped (rm.maxCompletedApplications)
// A last record cut short or failing its checksum (a crash while appending) is dropped; any
// other bad record, a missing header or a newer version is an error naming the file and the
// line: never a silent fresh start. Compaction rewrites the log as one record per live
// application (to state.log.tmp, fsync'd, renamed over state.log).
//
// The encoding, replay and compaction are pure functions (tests call them directly); the
// StateStore class does the file work: it creates the directory (0700) and the log (0600),
// takes an exclusive lock so that two tide-rm processes never share one store, fsyncs every
// append, and compacts when the log has grown well beyond the live records.

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rest/messages/cluster.h"

namespace tide::rm {

constexpr int kStateStoreVersion = 1;
constexpr char kStateStoreMagic[] = "tide-rm-state";
constexpr char kStateLogName[] = "state.log";

// The store cannot be read or written; the message names the file (and the line).
class StateStoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An attempt as stored. state: WAITING (for its AM container), LAUNCHED, REGISTERED,
// FINISHED, FAILED or KILLED.
struct StoredAttempt {
  int number = 0;
  std::string id;
  std::string token;  // TIDE_AM_TOKEN
  std::string state;
  std::string amContainerId;  // once placed
  bool operator==(const StoredAttempt& other) const;
};

// An application's durable fields: what the store keeps of it besides its attempts, and what
// tide-rm's ClusterState holds of it (ClusterState::Application is one, with its live state).
struct ApplicationRecord {
  std::string id;
  int number = 0;
  rest::ApplicationSubmission submission;  // as submitted, with its environment (secrets)
  std::string state;                       // ACCEPTED, RUNNING, FINISHED, FAILED, KILLED
  std::string finalStatus;
  std::string diagnostics;
  std::string trackingUrl;
  int64_t startedTime = 0;
  int64_t finishedTime = 0;
};

struct StoredApplication : ApplicationRecord {
  std::vector<StoredAttempt> attempts;
  bool operator==(const StoredApplication& other) const;
};

// The application number and counts, as stored and as tide-rm's ClusterState keeps them.
struct ApplicationCounters {
  int nextApplicationNumber = 1;
  int appsSubmitted = 0;
  // Finished applications forgotten (rm.maxCompletedApplications), by final state.
  int forgottenFinished = 0;
  int forgottenFailed = 0;
  int forgottenKilled = 0;
};

struct StoredCounters : ApplicationCounters {
  int64_t clusterTimestamp = 0;  // epoch ms of the first start: in every id
  // How many times tide-rm started on this store before (0 on the first start); container ids
  // allocated after a restart carry it (container_e<epoch>_...), as YARN's do.
  int64_t epoch = 0;
  bool operator==(const StoredCounters& other) const;
};

struct StoredState {
  bool empty = true;  // no record at all (a fresh store)
  StoredCounters counters;
  std::map<std::string, StoredApplication> applications;  // by id
};

struct StoreRecord {
  enum class Kind { kCounters, kApplication, kForget };
  Kind kind = Kind::kCounters;
  StoredCounters counters;        // kCounters
  StoredApplication application;  // kApplication
  std::string forgetId;           // kForget

  static StoreRecord ofCounters(StoredCounters counters);
  static StoreRecord ofApplication(StoredApplication application);
  static StoreRecord forget(std::string applicationId);
};

// CRC-32 (IEEE 802.3), as zlib's crc32().
uint32_t crc32(const std::string& data);

// "tide-rm-state 1\n"
std::string encodeHeader();
// One line: checksum, space, JSON, newline.
std::string encodeRecord(const StoreRecord& record);
// Replay applies a record to the state.
void applyRecord(StoredState& state, const StoreRecord& record);

struct ReplayResult {
  StoredState state;
  size_t records = 0;     // valid records read
  size_t validBytes = 0;  // the log's length up to the end of its last valid record
  bool tornTail = false;  // the last record was cut short or corrupt and dropped
};
// Reads a whole log. `fileName` is for messages. An empty text is a fresh store. Throws
// StateStoreError for a missing or wrong header, a newer version, or a bad record that is not
// the last one.
ReplayResult replay(const std::string& text, const std::string& fileName);

// The whole state as a fresh log: the header, the counters, one record per application.
std::string compact(const StoredState& state);

// The files. Not thread-safe: tide-rm calls it under its state lock.
class StateStore {
 public:
  // Opens (creating when missing) the store in `dir`: locks it, reads and replays state.log
  // and truncates a torn tail. Throws StateStoreError naming the file when the store is
  // unreadable, corrupt, of a newer version, or locked by another tide-rm.
  explicit StateStore(std::string dir);
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  const std::string& dir() const { return dir_; }
  std::string logPath() const;
  // The state as loaded at open, kept current by append().
  const StoredState& state() const { return state_; }
  // What open found.
  size_t recordsAtOpen() const { return recordsAtOpen_; }
  bool tornTailAtOpen() const { return tornTailAtOpen_; }

  // Writes the records and fsyncs them; compacts when the log has grown to more than
  // max(compactAfter, 4 x the live records). Throws StateStoreError when it cannot.
  void append(const std::vector<StoreRecord>& records);
  // Rewrites the log as its compacted form now.
  void compactNow();
  size_t recordsInLog() const { return recordsInLog_; }
  size_t compactions() const { return compactions_; }

  size_t compactAfter = 1000;

 private:
  void openLogForAppend();

  std::string dir_;
  int lockFd_ = -1;
  int logFd_ = -1;
  StoredState state_;
  size_t recordsAtOpen_ = 0;
  bool tornTailAtOpen_ = false;
  size_t recordsInLog_ = 0;
  size_t compactions_ = 0;
};

}  // namespace tide::rm
