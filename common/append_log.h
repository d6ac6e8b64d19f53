#pragma once

// A durable append-only log of text records, one per line, behind a header line
// "<magic> <version>": tide-rm's state store and the AM's recovery journal. Each owner has
// its own record format and its own words for what is wrong; the framing is here, once:
//
//   - an empty text is an empty log;
//   - the header must be "<magic> <version>" with 1 <= version <= the reader's version;
//   - each line after it is one record;
//   - the last line cut short (no '\n': a crash while appending) or refused by its reader is
//     a torn tail, dropped; a header cut short likewise (nothing was ever recorded);
//   - any other defect is an error: never a silent fresh start.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tide {

// What is wrong with a log's text, for its owner to put in its own words.
enum class LogDefect {
  kNotThisFormat,      // the first line is not "<magic> <version>"
  kUnreadableVersion,  // detail: the version's text
  kNewerVersion,       // detail: the version, above the reader's
  kBadVersion,         // detail: the version, below 1
  kCorruptRecord,      // a record other than the last was refused; detail: why
};

struct LogReplay {
  int version = 0;         // the header's; 0 for an empty log or a torn header
  size_t validLength = 0;  // the length up to the end of the last whole, accepted line
  size_t records = 0;      // records accepted
  bool tornTail = false;   // the last line (or the header) was cut short or refused: dropped
};

// Takes one record's line (without its '\n'); throws (any std::exception) to refuse it.
using LogRecordReader = std::function<void(std::string_view line)>;
// Throws the owner's error for a defect on line `lineNumber` (1 is the header).
using LogDefectHandler =
    std::function<void(LogDefect defect, size_t lineNumber, const std::string& detail)>;

// "<magic> <version>\n"
std::string logHeader(std::string_view magic, int version);

// Reads a log's whole text, passing each record to `record` in order. `fail` must throw.
LogReplay replayLog(std::string_view text, std::string_view magic, int maxVersion,
                    const LogRecordReader& record, const LogDefectHandler& fail);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. False (errno set) when a
// write fails.
bool writeFully(int fd, std::string_view bytes);

}  // namespace tide
