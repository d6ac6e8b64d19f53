#include "executor/task_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/app_logs.h"

namespace tide::executor {
namespace {

bool isContinuationByte(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// The length of the valid UTF-8 sequence starting at `text[0]`, or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t validSequenceLength(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char secondMin = 0x80;
  unsigned char secondMax = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) secondMin = 0xA0;  // overlong
    if (lead == 0xED) secondMax = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) secondMin = 0x90;  // overlong
    if (lead == 0xF4) secondMax = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  if (byte(1) < secondMin || byte(1) > secondMax) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (!isContinuationByte(byte(i))) return 0;
  }
  return length;
}

}  // namespace

std::filesystem::path taskDirectory(const std::filesystem::path& workDir, std::string_view stageId,
                                    int64_t index, int attempt) {
  return workDir / "tasks" / taskDirName(stageId, index, attempt);
}

std::string readFileTail(const std::filesystem::path& file, size_t maxBytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string bytes;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && info.st_size > 0) {
    const auto size = static_cast<size_t>(info.st_size);
    const size_t length = size < maxBytes ? size : maxBytes;
    bytes.resize(length);
    size_t done = 0;
    while (done < length) {
      const ssize_t got =
          ::pread(fd, bytes.data() + done, length - done, static_cast<off_t>(size - length + done));
      if (got <= 0) break;
      done += static_cast<size_t>(got);
    }
    bytes.resize(done);
  }
  ::close(fd);
  return toValidUtf8(bytes);
}

std::string toValidUtf8(std::string_view bytes) {
  size_t start = 0;
  // A tail cut inside a character starts with at most three continuation bytes of it.
  while (start < bytes.size() && start < 3 && isContinuationByte(bytes[start])) ++start;
  std::string text;
  text.reserve(bytes.size() - start);
  for (size_t i = start; i < bytes.size();) {
    const size_t length = validSequenceLength(bytes.substr(i));
    if (length == 0) {
      text += '?';
      ++i;
    } else {
      text.append(bytes.data() + i, length);
      i += length;
    }
  }
  return text;
}

}  // namespace tide::executor
