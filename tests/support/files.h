#pragma once

// Reading and writing the small files tests make and look at.

#include <filesystem>
#include <string>
#include <vector>

namespace tide::testing_support {

// The whole file, byte for byte; "" when it cannot be read.
std::string readFile(const std::filesystem::path& path);

// Writes `text` to `path`, creating the folders above it.
void writeFile(const std::filesystem::path& path, const std::string& text);

// The lines of `text`, without their line ends.
std::vector<std::string> lines(const std::string& text);

}  // namespace tide::testing_support
