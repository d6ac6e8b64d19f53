// docs/api's OpenAPI files pass a real validator (issue 14, item 10): scripts/check-openapi,
// JSON::Validator's OpenAPI 3 schema. A broken copy shows the validator does catch the kind of
// mistake these files had (an unquoted comma in a flow mapping splitting a description).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::filesystem::path kSource = TIDE_SOURCE_DIR;

testing_support::CommandResult checkOpenApi(const testing_support::TempDir& dir,
                                            const std::vector<std::string>& files) {
  std::vector<std::string> argv = {(kSource / "scripts" / "check-openapi").string()};
  argv.insert(argv.end(), files.begin(), files.end());
  return testing_support::runCommand(argv, (dir.path() / "check.log").string(), 120s);
}

std::vector<std::string> apiFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "docs" / "api")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(OpenApi, EveryApiDocumentIsValidOpenApi3) {
  testing_support::TempDir dir;
  const std::vector<std::string> files = apiFiles();
  ASSERT_EQ(files.size(), 4u);  // tide-am, tide-history, tide-nm, tide-rm
  const auto result = checkOpenApi(dir, files);
  EXPECT_EQ(result.status, 0) << result.output;
  for (const std::string& file : files) {
    EXPECT_THAT(result.output, HasSubstr(file + ": valid\n"));
  }
}

TEST(OpenApi, AnUnquotedCommaInAFlowMappingIsCaughtAndNamed) {
  testing_support::TempDir dir;
  std::ifstream in(kSource / "docs" / "api" / "tide-rm.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string spec = text.str();
  const std::string quoted = R"(description: "epoch ms, 0 while not final"})";
  const size_t at = spec.find(quoted);
  ASSERT_NE(at, std::string::npos);
  spec.replace(at, quoted.size(), "description: epoch ms, 0 while not final}");
  const std::string broken = dir.writeFile("broken.yaml", spec);
  const auto result = checkOpenApi(dir, {broken});
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("/components/schemas/ApplicationReport/properties/"
                                       "finishedTime"));
}

}  // namespace
}  // namespace tide
