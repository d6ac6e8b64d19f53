#include "executor/block_store.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <system_error>

namespace tide::executor {

namespace fs = std::filesystem;

BlockStore::BlockStore(fs::path root) : root_(fs::absolute(std::move(root))) {
  fs::create_directories(root_);
}

std::string BlockStore::blockPath(std::string_view jobId, std::string_view stageId,
                                  int64_t taskIndex, int64_t partition) {
  return std::string(jobId) + "/" + std::string(stageId) + "/" + std::to_string(taskIndex) +
         "/part-" + std::to_string(partition);
}

std::optional<int64_t> BlockStore::partitionOf(std::string_view fileName) {
  constexpr std::string_view kPrefix = "part-";
  if (fileName.size() <= kPrefix.size() || fileName.substr(0, kPrefix.size()) != kPrefix) {
    return std::nullopt;
  }
  const std::string_view digits = fileName.substr(kPrefix.size());
  if (digits.size() > 12) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool BlockStore::isPlainRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

bool BlockStore::holdsBlocks(const fs::path& outputDir) {
  std::error_code error;
  for (fs::directory_iterator it(outputDir, error), end; !error && it != end; it.increment(error)) {
    if (partitionOf(it->path().filename().string()) && it->is_regular_file(error)) return true;
  }
  return false;
}

std::vector<rest::BlockOutput> BlockStore::commit(std::string_view jobId, std::string_view stageId,
                                                  int64_t taskIndex, const fs::path& outputDir) {
  std::vector<rest::BlockOutput> blocks;
  const fs::path taskBlocks =
      root_ / std::string(jobId) / std::string(stageId) / std::to_string(taskIndex);
  std::error_code error;
  if (!fs::is_directory(outputDir, error)) return blocks;
  for (const fs::directory_entry& entry : fs::directory_iterator(outputDir)) {
    const std::optional<int64_t> partition = partitionOf(entry.path().filename().string());
    if (!partition) continue;
    if (!entry.is_regular_file()) continue;
    blocks.push_back(rest::BlockOutput{*partition, static_cast<int64_t>(entry.file_size())});
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const rest::BlockOutput& a, const rest::BlockOutput& b) {
              return a.partition < b.partition;
            });
  // A re-run of the task (after its blocks were lost elsewhere, or a speculative copy) replaces
  // what an earlier attempt left here.
  fs::remove_all(taskBlocks);
  fs::create_directories(taskBlocks.parent_path());
  fs::rename(outputDir, taskBlocks);
  return blocks;
}

std::vector<std::string> BlockStore::heldBlocks() const {
  std::vector<std::string> held;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root_, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it.depth() != 3 || !partitionOf(it->path().filename().string())) continue;
    if (!it->is_regular_file(error)) continue;
    held.push_back(fs::relative(it->path(), root_).string());
  }
  std::sort(held.begin(), held.end());
  return held;
}

void BlockStore::collect(std::string_view jobId, std::string_view stageId, int64_t taskIndex,
                         const std::vector<rest::BlockOutput>& blocks,
                         const fs::path& collectDir) const {
  fs::create_directories(collectDir);
  const bool single = blocks.size() == 1 && blocks.front().partition == 0;
  for (const rest::BlockOutput& block : blocks) {
    const fs::path from = root_ / blockPath(jobId, stageId, taskIndex, block.partition);
    const std::string name =
        single ? "part-" + std::to_string(taskIndex)
               : "part-" + std::to_string(taskIndex) + "-" + std::to_string(block.partition);
    // Per process and task, so that two executors collecting the same task (speculation)
    // never write the same temporary file.
    const fs::path temporary = collectDir / ("." + name + ".tmp-" + std::to_string(::getpid()));
    fs::copy_file(from, temporary, fs::copy_options::overwrite_existing);
    fs::rename(temporary, collectDir / name);
  }
}

std::optional<fs::path> BlockStore::find(std::string_view blockPath) const {
  if (!isPlainRelativePath(blockPath)) return std::nullopt;
  const fs::path file = root_ / std::string(blockPath);
  std::error_code error;
  if (!fs::is_regular_file(file, error)) return std::nullopt;
  return file;
}

void BlockStore::adopt(std::string_view blockPath, const fs::path& file) {
  const size_t slash = blockPath.rfind('/');
  if (!isPlainRelativePath(blockPath) || slash == std::string_view::npos ||
      !partitionOf(blockPath.substr(slash + 1))) {
    throw std::invalid_argument("not a block path: '" + std::string(blockPath) + "'");
  }
  const fs::path target = root_ / std::string(blockPath);
  fs::create_directories(target.parent_path());
  fs::rename(file, target);
}

bool BlockStore::drop(std::string_view prefix) {
  if (!isPlainRelativePath(prefix)) return false;
  std::error_code error;
  fs::remove_all(root_ / std::string(prefix), error);
  return !error;
}

}  // namespace tide::executor
