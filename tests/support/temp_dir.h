#pragma once

// A fresh directory per test, removed afterwards, for properties files and the like. Unique
// per instance: other worktrees run the same tests at the same time.

#include <filesystem>
#include <string>

namespace tide::testing_support {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `contents` to `name` inside the directory and returns its full path.
  std::string writeFile(const std::string& name, const std::string& contents) const;

 private:
  std::filesystem::path path_;
};

}  // namespace tide::testing_support
