#include "common/file_tail.h"

#include <fstream>
#include <vector>

namespace tide {

std::string lastLinesOf(const std::string& path, size_t maxLines, size_t maxBytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || maxLines == 0) return "";
  const std::streamoff size = in.tellg();
  if (size <= 0) return "";
  const std::streamoff start = size > static_cast<std::streamoff>(maxBytes)
                                   ? size - static_cast<std::streamoff>(maxBytes)
                                   : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  size_t begin = 0;
  if (start > 0) {
    // Unless the byte before the window ends a line, the window starts mid-line.
    std::ifstream before(path, std::ios::binary);
    before.seekg(start - 1);
    char previous = '\0';
    before.get(previous);
    if (previous != '\n') {
      const size_t newline = text.find('\n');
      begin = newline == std::string::npos ? text.size() : newline + 1;
    }
  }
  std::vector<std::string> lines;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
    begin = end + 1;
  }
  std::string result;
  const size_t first = lines.size() > maxLines ? lines.size() - maxLines : 0;
  for (size_t i = first; i < lines.size(); ++i) {
    if (!result.empty()) result += '\n';
    result += lines[i];
  }
  return result;
}

}  // namespace tide
