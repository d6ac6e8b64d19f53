#pragma once

// Where a command task's files go and how its stderr is summed up for the AM.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tide::executor {

// The task's own folder under the executor's work (or log) dir: tasks/<stage>-<index>-<attempt>
// (common/app_logs.h, taskDirName).
std::filesystem::path taskDirectory(const std::filesystem::path& workDir, std::string_view stageId,
                                    int64_t index, int attempt);

// At most the last `maxBytes` bytes of the file, made valid UTF-8 (see toValidUtf8) so that it
// can travel in JSON. "" when the file cannot be read.
std::string readFileTail(const std::filesystem::path& file, size_t maxBytes);

// `bytes` with a leading partial UTF-8 sequence (from cutting a file's tail) dropped and every
// other invalid byte replaced by '?'. Never longer than its input: a tail bounded in bytes
// stays bounded. The AM parses syncs strictly, so one stray byte of a task's output would
// otherwise make the whole sync a 400.
std::string toValidUtf8(std::string_view bytes);

}  // namespace tide::executor
