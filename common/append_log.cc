#include "common/append_log.h"

#include <unistd.h>

#include <cerrno>
#include <exception>
#include <stdexcept>

namespace tide {
namespace {

[[noreturn]] void unreachable() {
  throw std::logic_error("replayLog: the defect handler returned instead of throwing");
}

}  // namespace

std::string logHeader(std::string_view magic, int version) {
  return std::string(magic) + " " + std::to_string(version) + "\n";
}

LogReplay replayLog(std::string_view text, std::string_view magic, int maxVersion,
                    const LogRecordReader& record, const LogDefectHandler& fail) {
  LogReplay replay;
  if (text.empty()) return replay;
  const size_t headerEnd = text.find('\n');
  const std::string_view header = text.substr(0, headerEnd);
  const std::string prefix = std::string(magic) + " ";
  if (header.substr(0, prefix.size()) != prefix) {
    if (headerEnd == std::string_view::npos &&
        std::string_view(prefix).substr(0, header.size()) == header) {
      replay.tornTail = true;  // a crash while the very first line was written
      return replay;
    }
    fail(LogDefect::kNotThisFormat, 1, std::string(header));
    unreachable();
  }
  const std::string versionText(header.substr(prefix.size()));
  int version = 0;
  try {
    size_t used = 0;
    version = std::stoi(versionText, &used);
    if (used != versionText.size()) throw std::invalid_argument("version");
  } catch (const std::exception&) {
    fail(LogDefect::kUnreadableVersion, 1, versionText);
    unreachable();
  }
  if (version > maxVersion) {
    fail(LogDefect::kNewerVersion, 1, std::to_string(version));
    unreachable();
  }
  if (version < 1) {
    fail(LogDefect::kBadVersion, 1, std::to_string(version));
    unreachable();
  }
  if (headerEnd == std::string_view::npos) {
    replay.tornTail = true;  // the header without its '\n': nothing was recorded after it
    return replay;
  }
  replay.version = version;
  replay.validLength = headerEnd + 1;
  size_t position = headerEnd + 1;
  size_t lineNumber = 1;
  while (position < text.size()) {
    ++lineNumber;
    const size_t end = text.find('\n', position);
    if (end == std::string_view::npos) {
      replay.tornTail = true;  // cut short by a crash while appending it
      return replay;
    }
    const bool last = end + 1 == text.size();
    try {
      record(text.substr(position, end - position));
    } catch (const std::exception& error) {
      if (last) {
        replay.tornTail = true;  // written whole but not readable: the write a crash ended
        return replay;
      }
      fail(LogDefect::kCorruptRecord, lineNumber, error.what());
      unreachable();
    }
    ++replay.records;
    replay.validLength = end + 1;
    position = end + 1;
  }
  return replay;
}

bool writeFully(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace tide
