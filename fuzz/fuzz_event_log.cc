// Event logs (am/status/event_log_replay.h), which `tide history` and `tide status APP` read
// from history.dir: any bytes either replay into an application, whose documents then render,
// or throw EventLogError naming the line; nothing else (no crash, no other exception, no
// sanitizer finding).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "am/status/event_log_replay.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const tide::am::ReplayedApplication app = tide::am::replayEventLog(in, "fuzz.jsonl");
    (void)tide::am::replayedStatusDocument(app);
    (void)tide::am::replayedExecutorsDocument(app);
    (void)app.name();
  } catch (const tide::am::EventLogError&) {
  }
  return 0;
}
