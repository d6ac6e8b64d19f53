#pragma once

// The executor's blocks: the output files of its finished tasks, kept in its local directory
// for downstream tasks (this executor's or others', through the BlockServer) until the AM says
// they are no longer needed. Layout: <root>/<jobId>/<stageId>/<taskIndex>/part-<partition>, so
// that a stage's blocks go with one directory removal. Thread-safe: every method works on the
// file system only, and a block directory is replaced by one rename.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rest/messages/executor.h"

namespace tide::executor {

class BlockStore {
 public:
  // Creates `root` when missing; throws std::filesystem::filesystem_error when it cannot.
  explicit BlockStore(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }

  // Turns a finished task's $TIDE_OUTPUT_DIR into its blocks: the regular files named
  // part-<n> become blocks (other files are left out), moved, not copied. A block directory
  // of an earlier attempt of the same task is replaced. Throws on a file system error.
  std::vector<rest::BlockOutput> commit(std::string_view jobId, std::string_view stageId,
                                        int64_t taskIndex, const std::filesystem::path& outputDir);
  // Whether a finished task's $TIDE_OUTPUT_DIR holds anything commit() would make a block of
  // (a regular file named part-<n>). A task without any has nothing to commit.
  static bool holdsBlocks(const std::filesystem::path& outputDir);
  // Copies a committed task's blocks into a job's output directory: part-<taskIndex> when the
  // task wrote only part-0, else part-<taskIndex>-<partition>. Each file appears whole (copied
  // beside it, then renamed). Throws on a file system error.
  void collect(std::string_view jobId, std::string_view stageId, int64_t taskIndex,
               const std::vector<rest::BlockOutput>& blocks,
               const std::filesystem::path& collectDir) const;

  // The file of a block path "<jobId>/<stageId>/<index>/part-<n>"; nullopt when the path is not
  // one (so no request can read outside the store) or the block is not here.
  std::optional<std::filesystem::path> find(std::string_view blockPath) const;
  // Every block held, as block paths "<jobId>/<stageId>/<index>/part-<n>", sorted: what a
  // resumed executor reports to a new attempt of the AM (issue 12).
  std::vector<std::string> heldBlocks() const;
  // Keeps `file` (on the store's file system) as the block at `blockPath`, moved, not copied;
  // a block already there is replaced. A block taken from a decommissioning executor keeps the
  // path it had there. Throws std::invalid_argument for a path that is not a block path and
  // std::filesystem::filesystem_error on a file system error.
  void adopt(std::string_view blockPath, const std::filesystem::path& file);
  // Deletes every block under "<jobId>/<stageId>" (or "<jobId>"); false for a prefix that is
  // not a plain relative path.
  bool drop(std::string_view prefix);

  // The block path of one partition of one task's output.
  static std::string blockPath(std::string_view jobId, std::string_view stageId, int64_t taskIndex,
                               int64_t partition);
  // "part-<n>" -> n; nullopt for any other name.
  static std::optional<int64_t> partitionOf(std::string_view fileName);
  // A relative path of plain names: no "..", ".", empty or absolute parts.
  static bool isPlainRelativePath(std::string_view path);

 private:
  std::filesystem::path root_;
};

}  // namespace tide::executor
