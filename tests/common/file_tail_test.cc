#include "common/file_tail.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using testing_support::TempDir;

TEST(LastLinesOf, KeepsTheLastNonEmptyLines) {
  TempDir dir;
  const std::string path = dir.writeFile("stderr", "one\ntwo\n\nthree\r\nfour\nfive");
  EXPECT_EQ(lastLinesOf(path, 3), "three\nfour\nfive");
  EXPECT_EQ(lastLinesOf(path, 10), "one\ntwo\nthree\nfour\nfive");
  EXPECT_EQ(lastLinesOf(path, 0), "");
}

TEST(LastLinesOf, ReadsOnlyTheEndAndDropsAPartialFirstLine) {
  TempDir dir;
  const std::string path = dir.writeFile("stderr", std::string(10000, 'x') + "\nlast words\n");
  EXPECT_EQ(lastLinesOf(path, 5, 100), "last words");
  // A window that starts exactly at a line keeps that line.
  const std::string exact = dir.writeFile("exact", "abc\ndef\n");
  EXPECT_EQ(lastLinesOf(exact, 5, 4), "def");
  EXPECT_EQ(lastLinesOf(exact, 5, 5), "def");  // "\ndef\n": the window starts at a newline
}

TEST(LastLinesOf, AMissingOrEmptyFileGivesNothing) {
  TempDir dir;
  EXPECT_EQ(lastLinesOf((dir.path() / "absent").string(), 5), "");
  EXPECT_EQ(lastLinesOf(dir.writeFile("empty", ""), 5), "");
  EXPECT_EQ(lastLinesOf(dir.writeFile("blank", "\n\n\n"), 5), "");
}

}  // namespace
}  // namespace tide
