#pragma once

// Graceful decommissioning on the receiving side: this executor takes one task output off a
// decommissioning peer (rest::BlockMigration, from the AM's sync reply). Every block of it is
// fetched from the peer's block server (with the BlockFetcher's retries) into a scratch
// directory of the store, and only once all of them are here are they kept, under the same
// block paths, so that a failed migration leaves nothing half there.
//
// On the leaving side, when no peer takes an output (BlockMigration::fallbackDir): this
// executor copies its own blocks to the fallback storage, <fallbackDir>/<block path>, each one
// written beside its place and renamed, so that a reader never sees half a block.

#include "executor/block_fetcher.h"
#include "executor/block_store.h"
#include "rest/messages/executor.h"

namespace tide::executor {

class BlockMigrator {
 public:
  // `store` and `fetcher` (which must read from `store`) must outlive the migrator.
  BlockMigrator(BlockStore& store, const BlockFetcher& fetcher)
      : store_(store), fetcher_(fetcher) {}

  // Fetches and keeps the migration's blocks; the result says whether it worked, and why not.
  rest::BlockMigrationResult migrate(const rest::BlockMigration& migration);

 private:
  rest::BlockMigrationResult copyToFallback(const rest::BlockMigration& migration);

  BlockStore& store_;
  const BlockFetcher& fetcher_;
  Logger log_{"executor"};
};

}  // namespace tide::executor
