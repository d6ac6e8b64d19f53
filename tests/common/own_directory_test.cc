// common/own_directory.h on a real file system: a directory tide keeps state in is made when it is
// missing, and refused, with the reason, when it is a file, a symlink tide did not expect, or
// another user's.

#include "common/own_directory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace tide {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(OwnDirectoryTest, AMissingDirectoryIsMadeWithItsParents) {
  testing_support::TempDir dir;
  const std::string path = (dir.path() / "a" / "b").string();
  EXPECT_EQ(makeOwnDirectory(path), "");
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(makeOwnDirectory(path), "") << "one that is there already will do";
}

TEST(OwnDirectoryTest, AFileOrAnUnexpectedSymlinkIsRefused) {
  testing_support::TempDir dir;
  const std::string file = (dir.path() / "file").string();
  std::ofstream(file) << "x";
  EXPECT_THAT(makeOwnDirectory(file), HasSubstr("cannot create " + file));
  const std::string link = (dir.path() / "link").string();
  fs::create_symlink(dir.path(), link);
  EXPECT_EQ(makeOwnDirectory(link), link + " is not a directory");
  EXPECT_EQ(makeOwnDirectory(link, {/*rootMayOwn=*/false, /*followSymlink=*/true}), "");
}

TEST(OwnDirectoryTest, AnotherUsersDirectoryIsRefusedEvenThroughASymlink) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a directory of another user needs root";
  testing_support::TempDir dir;
  const std::string theirs = (dir.path() / "theirs").string();
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_EQ(makeOwnDirectory(theirs), theirs + " belongs to uid 65534, not to this user");
  EXPECT_EQ(makeOwnDirectory(theirs, {/*rootMayOwn=*/true, /*followSymlink=*/false}),
            theirs + " belongs to uid 65534, not to this user");
  const std::string link = (dir.path() / "link").string();
  fs::create_symlink(theirs, link);
  EXPECT_EQ(makeOwnDirectory(link, {/*rootMayOwn=*/false, /*followSymlink=*/true}),
            link + " belongs to uid 65534, not to this user");
}

}  // namespace
}  // namespace tide
