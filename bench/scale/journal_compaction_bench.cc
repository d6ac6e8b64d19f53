// How fast the AM's recovery journal is read and compacted, to set against how fast the AM
// appends to it (about 235 bytes a noop task): a compaction must outrun the appends, or the
// journal grows while it works.
//
//   build/bin/journal_compaction_bench [TASKS]      (default 300000: about 68 MB of records)
//
// Builds in memory a journal of TASKS noop tasks on two executors (a launch and a commit each),
// then times decoding it and compacting it (am/recovery/journal_compaction.h), and prints both
// in MB/s. Not a test: run it by hand (bench/README.md, "Scale").

#include <chrono>
#include <iostream>
#include <string>

#include "am/recovery/journal_compaction.h"

int main(int argc, char** argv) {
  using namespace tide::am;
  const int64_t tasks = argc > 1 ? std::stoll(argv[1]) : 300000;
  std::string text = encodeJournalHeader();
  text += encodeJournalRecord(
      JournalRecord::jobAccepted("job-1", R"({"name":"j","stages":[{"id":"all","tasks":)" +
                                              std::to_string(tasks) + R"(,"builtin":"noop"}]})"));
  for (int64_t i = 0; i < tasks; ++i) {
    const char* executor = i % 2 == 0 ? "e1" : "e2";
    text += encodeJournalRecord(JournalRecord::taskLaunched(i + 1, "job-1", "all", i, 0, executor));
    text += encodeJournalRecord(
        JournalRecord::taskCommitted(i + 1, "job-1", "all", i, 0, executor, "n1", 1, {}));
  }
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
  };
  const double mb = static_cast<double>(text.size()) / 1e6;

  auto started = Clock::now();
  size_t records = 0;
  decodeJournal(text, "bench", [&](JournalRecord&&) { ++records; });
  const double decode = seconds(started);

  started = Clock::now();
  std::string compacted;
  const JournalCompaction done =
      compactJournal(text, "bench", [&](std::string_view piece) { compacted.append(piece); });
  const double compact = seconds(started);

  std::cout << "journal of " << tasks << " tasks: " << mb << " MB, " << records << " records\n"
            << "decode:  " << decode << " s, " << mb / decode << " MB/s\n"
            << "compact: " << compact << " s, " << mb / compact << " MB/s, into "
            << done.recordsAfter << " records (" << compacted.size() << " bytes)\n";
  return 0;
}
