#include "executor/block_migrator.h"

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace tide::executor {

namespace fs = std::filesystem;

rest::BlockMigrationResult BlockMigrator::migrate(const rest::BlockMigration& migration) {
  if (!migration.fallbackDir.empty()) return copyToFallback(migration);
  rest::BlockMigrationResult result;
  result.id = migration.id;
  // On the store's file system, so that keeping a block is a rename; named by the migration so
  // that two never share one.
  const fs::path scratch = store_.root() / (".migrating-" + std::to_string(migration.id));
  std::error_code error;
  fs::remove_all(scratch, error);
  std::vector<std::pair<std::string, fs::path>> fetched;
  for (size_t i = 0; i < migration.blocks.size() && result.reason.empty(); ++i) {
    const std::string& path = migration.blocks[i];
    rest::BlockInput input;
    input.executorId = migration.fromExecutor;
    input.url = migration.url;
    input.path = path;
    const size_t slash = path.rfind('/');
    input.stageId = slash == std::string::npos ? path : path.substr(0, slash);
    const fs::path target = scratch / std::to_string(i);
    result.reason = fetcher_.fetch(input, target);
    if (result.reason.empty()) fetched.emplace_back(path, target);
  }
  if (result.reason.empty()) {
    try {
      for (const auto& [path, file] : fetched) store_.adopt(path, file);
    } catch (const std::exception& e) {
      result.reason = std::string("cannot keep the blocks: ") + e.what();
    }
  }
  fs::remove_all(scratch, error);
  result.ok = result.reason.empty();
  if (result.ok) {
    log_.info() << "took " << migration.blocks.size() << " blocks from decommissioning executor "
                << migration.fromExecutor;
  } else {
    log_.warn() << "could not take blocks from decommissioning executor " << migration.fromExecutor
                << ": " << result.reason;
  }
  return result;
}

rest::BlockMigrationResult BlockMigrator::copyToFallback(const rest::BlockMigration& migration) {
  rest::BlockMigrationResult result;
  result.id = migration.id;
  const fs::path dir = migration.fallbackDir;
  std::error_code error;
  for (const std::string& path : migration.blocks) {
    const std::optional<fs::path> block = store_.find(path);
    if (!block) {
      result.reason = "block " + path + " is not on this executor";
      break;
    }
    const fs::path target = dir / path;
    fs::create_directories(target.parent_path(), error);
    if (error) {
      result.reason = "cannot create " + target.parent_path().string() + ": " + error.message();
      break;
    }
    // Beside it, then renamed: a reader never sees half a block.
    const fs::path partial = target.string() + ".partial";
    fs::copy_file(*block, partial, fs::copy_options::overwrite_existing, error);
    if (!error) fs::rename(partial, target, error);
    if (error) {
      result.reason = "cannot write " + target.string() + ": " + error.message();
      fs::remove(partial, error);
      break;
    }
  }
  result.ok = result.reason.empty();
  if (result.ok) {
    log_.info() << "copied " << migration.blocks.size() << " blocks to the fallback storage "
                << dir.string();
  } else {
    log_.warn() << "could not copy blocks to the fallback storage: " << result.reason;
  }
  return result;
}

}  // namespace tide::executor
