#pragma once

// Puts a task's input blocks in its $TIDE_INPUT_DIR before it starts: hard-linked from this
// executor's BlockStore when the block is here, else fetched over HTTP from the executor that
// holds it (GET <url>/blocks/<path>, authenticated with the application secret).
//
// A block in the fallback storage (url "file://<dir>", what a decommissioning executor no peer
// took copied there) is copied from <dir>/<path>.
//
// A fetch that fails for a passing reason (a refused or broken connection, a 5xx) is retried a
// few times with backoff; a block its holder does not have (404) or a holder that stays
// unreachable is a fetch failure, which the AM answers by re-running the task that wrote it.

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/logging.h"
#include "executor/block_store.h"
#include "rest/messages/executor.h"

namespace tide::executor {

// The url of the fallback storage's blocks: "file://<absolute dir>".
inline constexpr std::string_view kFileUrlPrefix = "file://";

struct BlockFetcherOptions {
  std::string executorId;  // this executor: inputs it holds are linked, not fetched
  std::string appSecret;   // sent as "Authorization: Bearer ..."
  std::string caFile;      // tls.caFile: what https:// block servers are verified against
  int maxAttempts = 4;     // per block, the first included
  std::chrono::milliseconds firstBackoff{200};  // doubles per retry
  std::chrono::milliseconds connectTimeout{2000};
  std::chrono::milliseconds requestTimeout{30000};
  // How to wait between attempts; tests record instead of sleeping.
  std::function<void(std::chrono::milliseconds)> sleep;
};

// Why a task could not have one of its inputs.
struct FetchFailure {
  rest::BlockInput input;
  std::string reason;
};

class BlockFetcher {
 public:
  // `store` must outlive the fetcher.
  BlockFetcher(const BlockStore& store, BlockFetcherOptions options);

  // Places every input at inputDir/<stageId>/part-<mapIndex>. Returns the first input that
  // could not be had, or nullopt when all are in place. Thread-safe (one HTTP client per call).
  std::optional<FetchFailure> fetchAll(const std::vector<rest::BlockInput>& inputs,
                                       const std::filesystem::path& inputDir) const;

  // Places one block at `target`: "" when done, else why not (after the retries above).
  std::string fetch(const rest::BlockInput& input, const std::filesystem::path& target) const {
    return fetchOne(input, target);
  }

  // Where an input goes under the input dir.
  static std::filesystem::path inputFile(const std::filesystem::path& inputDir,
                                         const rest::BlockInput& input);

 private:
  // "" when placed, else the reason.
  std::string fetchOne(const rest::BlockInput& input, const std::filesystem::path& target) const;

  const BlockStore& store_;
  BlockFetcherOptions options_;
  Logger log_{"executor"};
};

}  // namespace tide::executor
