// am/recovery/staging_directory.h on a real file system: an application finds its own staging
// directory again in every attempt, and never shares one with another application that has the
// same id (another cluster's), whose journal it must neither replay nor write into nor remove.

#include "am/recovery/staging_directory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::readFile;

constexpr char kId[] = "application_1700000000000_0001";

TEST(StagingDirectoryTest, EveryAttemptOfAnApplicationFindsTheSameDirectory) {
  testing_support::TempDir dir;
  const std::string root = (dir.path() / "staging").string();
  const StagingClaim first = claimStagingDirectory(root, kId, "secret-a");
  ASSERT_TRUE(first.directory.has_value()) << first.note;
  EXPECT_EQ(*first.directory, root + "/" + kId);
  EXPECT_EQ(first.note, "");
  struct stat info {};
  ASSERT_EQ(::stat(first.directory->c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  const StagingClaim second = claimStagingDirectory(root, kId, "secret-a");
  EXPECT_EQ(second.directory, first.directory);
  EXPECT_EQ(second.note, "");
  // The owner file names the application without giving its secret away.
  EXPECT_THAT(readFile(*first.directory + "/owner"), Not(HasSubstr("secret-a")));
  EXPECT_EQ(readFile(*first.directory + "/owner"), stagingOwnerOf("secret-a") + "\n");
}

TEST(StagingDirectoryTest, AnotherApplicationWithTheSameIdGetsADirectoryOfItsOwn) {
  testing_support::TempDir dir;
  const std::string root = (dir.path() / "staging").string();
  const StagingClaim mine = claimStagingDirectory(root, kId, "secret-a");
  ASSERT_TRUE(mine.directory.has_value());
  std::ofstream(*mine.directory + "/am-journal") << "the first application's journal\n";

  const StagingClaim theirs = claimStagingDirectory(root, kId, "secret-b");
  ASSERT_TRUE(theirs.directory.has_value()) << theirs.note;
  EXPECT_NE(*theirs.directory, *mine.directory);
  EXPECT_EQ(*theirs.directory, root + "/" + kId + "-" + stagingOwnerOf("secret-b").substr(0, 16));
  EXPECT_THAT(theirs.note, HasSubstr(*mine.directory + " belongs to another application"));
  EXPECT_FALSE(fs::exists(*theirs.directory + "/am-journal"));
  // Its next attempt finds it again; the first application's is untouched.
  EXPECT_EQ(claimStagingDirectory(root, kId, "secret-b").directory, theirs.directory);
  EXPECT_EQ(readFile(*mine.directory + "/am-journal"), "the first application's journal\n");
  EXPECT_EQ(claimStagingDirectory(root, kId, "secret-a").directory, mine.directory);
}

TEST(StagingDirectoryTest, WhenBothPlacesAreTakenNoneIsClaimedAndTheNoteSaysWhy) {
  testing_support::TempDir dir;
  const std::string root = (dir.path() / "staging").string();
  const std::string fallback = root + "/" + kId + "-" + stagingOwnerOf("secret-c").substr(0, 16);
  fs::create_directories(fallback);
  std::ofstream(fallback + "/owner") << "someone else\n";
  ASSERT_TRUE(claimStagingDirectory(root, kId, "secret-a").directory.has_value());
  const StagingClaim none = claimStagingDirectory(root, kId, "secret-c");
  EXPECT_FALSE(none.directory.has_value());
  EXPECT_THAT(none.note, HasSubstr(root + "/" + kId + " belongs to another application"));
  EXPECT_THAT(none.note, HasSubstr(fallback + " belongs to another application"));
}

TEST(StagingDirectoryTest, ADirectoryWithoutAnOwnerGoesToItsFirstClaimant) {
  testing_support::TempDir dir;
  const std::string root = (dir.path() / "staging").string();
  fs::create_directories(root + "/" + kId);
  std::ofstream(root + "/" + kId + "/am-journal") << "written by a tide without owner files\n";
  const StagingClaim claim = claimStagingDirectory(root, kId, "secret-a");
  EXPECT_EQ(claim.directory, root + "/" + kId);
  EXPECT_EQ(readFile(root + "/" + kId + "/am-journal"), "written by a tide without owner files\n");
}

// Under a shared root (/tmp without a HOME) another user may have made the directory first, or a
// symlink in its place: neither is used, and the note says whose it is.
TEST(StagingDirectoryTest, ADirectoryOfAnotherUserOrASymlinkIsNeverUsed) {
  testing_support::TempDir dir;
  const std::string root = (dir.path() / "staging").string();
  fs::create_directories(dir.path() / "elsewhere");
  fs::create_directories(root);
  fs::create_symlink(dir.path() / "elsewhere", root + "/" + kId);
  const StagingClaim linked = claimStagingDirectory(root, kId, "secret-a");
  ASSERT_TRUE(linked.directory.has_value()) << linked.note;
  EXPECT_NE(*linked.directory, root + "/" + kId);
  EXPECT_THAT(linked.note, HasSubstr(root + "/" + kId + " is not a directory"));
  EXPECT_FALSE(fs::exists(dir.path() / "elsewhere" / "owner"));

  if (::geteuid() != 0) GTEST_SKIP() << "making a directory of another user needs root";
  const std::string theirs = (dir.path() / "theirs").string();
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  const StagingClaim underTheirs = claimStagingDirectory(theirs, kId, "secret-a");
  EXPECT_FALSE(underTheirs.directory.has_value());
  EXPECT_THAT(underTheirs.note, HasSubstr(theirs + " belongs to uid 65534, not to this user"));
  EXPECT_FALSE(fs::exists(theirs + "/" + kId));
  // A directory another user made where this application's would be is passed over.
  fs::create_directories(root + "2/" + kId);
  ASSERT_EQ(::chown((root + "2/" + kId).c_str(), 65534, 65534), 0);
  const StagingClaim passedOver = claimStagingDirectory(root + "2", kId, "secret-a");
  ASSERT_TRUE(passedOver.directory.has_value()) << passedOver.note;
  EXPECT_NE(*passedOver.directory, root + "2/" + kId);
  EXPECT_THAT(passedOver.note, HasSubstr(root + "2/" + kId + " belongs to uid 65534"));
}

TEST(StagingDirectoryTest, AnUnwritableRootIsSaidNotThrown) {
  testing_support::TempDir dir;
  const std::string file = (dir.path() / "a-file").string();
  std::ofstream(file) << "not a directory\n";
  const StagingClaim claim = claimStagingDirectory(file, kId, "secret-a");
  EXPECT_FALSE(claim.directory.has_value());
  EXPECT_THAT(claim.note, HasSubstr("cannot create " + file + ": "));
}

}  // namespace
}  // namespace tide::am
