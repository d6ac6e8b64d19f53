#include "tests/support/files.h"

#include <fstream>
#include <sstream>

namespace tide::testing_support {

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void writeFile(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> all;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  return all;
}

}  // namespace tide::testing_support
