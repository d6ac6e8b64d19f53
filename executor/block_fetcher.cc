#include "executor/block_fetcher.h"

#include <fstream>
#include <map>
#include <memory>
#include <system_error>
#include <thread>

#include "rest/http_client.h"

namespace tide::executor {

namespace fs = std::filesystem;

BlockFetcher::BlockFetcher(const BlockStore& store, BlockFetcherOptions options)
    : store_(store), options_(std::move(options)) {
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds delay) { std::this_thread::sleep_for(delay); };
  }
}

fs::path BlockFetcher::inputFile(const fs::path& inputDir, const rest::BlockInput& input) {
  return inputDir / input.stageId / ("part-" + std::to_string(input.mapIndex));
}

std::optional<FetchFailure> BlockFetcher::fetchAll(const std::vector<rest::BlockInput>& inputs,
                                                   const fs::path& inputDir) const {
  for (const rest::BlockInput& input : inputs) {
    const std::string reason = fetchOne(input, inputFile(inputDir, input));
    if (!reason.empty()) return FetchFailure{input, reason};
  }
  return std::nullopt;
}

namespace {

// Linked, not copied: a task's inputs cost no disk when they are already here.
std::string linkLocalBlock(const BlockStore& store, const rest::BlockInput& input,
                           const fs::path& target) {
  std::error_code error;
  const std::optional<fs::path> local = store.find(input.path);
  if (!local) return "block " + input.path + " is not on this executor";
  fs::create_hard_link(*local, target, error);
  if (error) fs::copy_file(*local, target, error);
  if (error) return "cannot link " + local->string() + ": " + error.message();
  return "";
}

// The fallback storage: a directory this executor reaches. Copied, not linked: the task may
// change its input, and the block must stay as it is for the other readers.
std::string copyFromFallback(const rest::BlockInput& input, const fs::path& target,
                             const Logger& log) {
  std::error_code error;
  const fs::path source = fs::path(input.url.substr(kFileUrlPrefix.size())) / input.path;
  const fs::path partial = target.string() + ".partial";
  fs::copy_file(source, partial, fs::copy_options::overwrite_existing, error);
  if (!error) fs::rename(partial, target, error);
  if (error) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    return "block " + input.path + " from the fallback storage (" + source.string() +
           "): " + error.message();
  }
  TIDE_LOG(log, debug) << "read block " << input.path << " from the fallback storage";
  return "";
}

// Written beside the target and renamed, so a reader never sees half a block.
std::string writeBlockFile(const std::string& body, const fs::path& target) {
  const fs::path partial = target.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!out) return "cannot write " + partial.string();
  }
  std::error_code error;
  fs::rename(partial, target, error);
  if (error) return "cannot write " + target.string() + ": " + error.message();
  return "";
}

rest::HttpClientOptions clientOptionsFor(const BlockFetcherOptions& options, const Logger& log) {
  rest::HttpClientOptions clientOptions;
  clientOptions.connectTimeout = options.connectTimeout;
  clientOptions.requestTimeout = options.requestTimeout;
  clientOptions.retry.maxAttempts = 1;  // retried by fetchOne, with the fetcher's own budget
  clientOptions.defaultHeaders = {{"Authorization", "Bearer " + options.appSecret}};
  clientOptions.log = [&log](const std::string& line) { TIDE_LOG(log, debug) << line; };
  clientOptions.caFile = options.caFile;
  return clientOptions;
}

}  // namespace

std::string BlockFetcher::fetchOne(const rest::BlockInput& input, const fs::path& target) const {
  if (!BlockStore::isPlainRelativePath(input.path) ||
      !BlockStore::isPlainRelativePath(input.stageId)) {
    return "not a block path: '" + input.path + "'";
  }
  std::error_code error;
  fs::create_directories(target.parent_path(), error);
  if (error) return "cannot create " + target.parent_path().string() + ": " + error.message();
  fs::remove(target, error);

  if (input.executorId == options_.executorId) return linkLocalBlock(store_, input, target);
  if (input.url.empty()) return "executor " + input.executorId + " holding it is gone";
  if (input.url.rfind(kFileUrlPrefix, 0) == 0) return copyFromFallback(input, target, log_);

  rest::HttpClient client(input.url, clientOptionsFor(options_, log_));
  std::string lastProblem;
  std::chrono::milliseconds backoff = options_.firstBackoff;
  for (int attempt = 1; attempt <= options_.maxAttempts; ++attempt) {
    try {
      const rest::HttpResponse response = client.request("GET", "/blocks/" + input.path);
      if (response.ok()) {
        const std::string written = writeBlockFile(response.body, target);
        if (!written.empty()) return written;
        TIDE_LOG(log_, debug) << "fetched block " << input.path << " (" << response.body.size()
                              << " bytes) from " << input.executorId << " at " << input.url;
        return "";
      }
      lastProblem = "HTTP " + std::to_string(response.status) + " from " + input.url;
      // The holder answered and has no such block: retrying cannot help.
      if (response.status == 404 || response.status == 401 || response.status == 403) {
        return "block " + input.path + ": " + lastProblem;
      }
    } catch (const rest::HttpError& e) {
      lastProblem = e.what();
    }
    if (attempt < options_.maxAttempts) {
      log_.warn() << "fetching block " << input.path << " from " << input.executorId
                  << " failed (attempt " << attempt << " of " << options_.maxAttempts
                  << "): " << lastProblem;
      options_.sleep(backoff);
      backoff *= 2;
    }
  }
  return "block " + input.path + " from executor " + input.executorId + " after " +
         std::to_string(options_.maxAttempts) + " attempts: " + lastProblem;
}

}  // namespace tide::executor
