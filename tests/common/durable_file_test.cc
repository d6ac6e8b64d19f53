// common/durable_file: the crash-safe rewrite that tide-rm's state store, the AM's journal and
// event log and tide-nm's container records share. What a caller relies on: the whole text is
// in the file with its permissions and the returned descriptor appends after it; a failure names
// the step and the file and leaves nothing open.

#include "common/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using testing_support::readFile;
using testing_support::TempDir;

int openDescriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

TEST(DurableFileTest, TheWholeTextIsWrittenPrivatelyAndTheFileStaysOpenForAppending) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  std::string error;
  const std::string text(1 << 20, 'x');  // more than one write() may take
  const int fd = createFileDurably(path, text, error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_EQ(::write(fd, "\n", 1), 1);
  ::close(fd);
  EXPECT_EQ(readFile(path), text + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(DurableFileTest, AnExistingFileIsReplacedNotAppendedTo) {
  TempDir dir;
  const std::string path = dir.writeFile("records", "old contents that are longer");
  std::string error;
  const int fd = createFileDurably(path, "new", error);
  ASSERT_GE(fd, 0) << error;
  ::close(fd);
  EXPECT_EQ(readFile(path), "new");
}

TEST(DurableFileTest, ASymlinkInItsPlaceIsRefusedAndWhatItNamesIsLeftAlone) {
  TempDir dir;
  const std::string victim = dir.writeFile("precious", "keep me");
  const std::string path = (dir.path() / "state.json.tmp").string();
  std::filesystem::create_symlink(victim, path);
  std::string error;
  EXPECT_EQ(createFileDurably(path, "overwritten", error), -1);
  EXPECT_NE(error.find("cannot create " + path), std::string::npos) << error;
  EXPECT_EQ(readFile(victim), "keep me");
}

TEST(DurableFileTest, AFileThatCannotBeCreatedIsNamedWithTheStepAndLeavesNothingOpen) {
  TempDir dir;
  const std::string path = (dir.path() / "missing-dir" / "state.json").string();
  const int before = openDescriptors();
  std::string error;
  EXPECT_EQ(createFileDurably(path, "text", error), -1);
  EXPECT_NE(error.find("cannot create " + path), std::string::npos) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_EQ(openDescriptors(), before);
}

TEST(DurableFileTest, SyncingADirectoryNamesAMissingOne) {
  TempDir dir;
  EXPECT_TRUE(syncDirectory(dir.path().string()).ok());
  const std::string missing = (dir.path() / "gone").string();
  const Status status = syncDirectory(missing);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("cannot open directory " + missing), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace tide
