#include "executor/task_output.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/temp_dir.h"

namespace tide::executor {
namespace {

TEST(TaskOutputTest, TaskDirectoryIsUnderTasksAndSanitized) {
  EXPECT_EQ(taskDirectory("/work", "s1", 3, 0), "/work/tasks/s1-3-0");
  EXPECT_EQ(taskDirectory("/work", "../x/y", 0, 2), "/work/tasks/_.._x_y-0-2");
  EXPECT_EQ(taskDirectory("/work", "", 1, 1), "/work/tasks/_-1-1");
}

TEST(TaskOutputTest, ValidUtf8PassesThrough) {
  const std::string text = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 ok\n";
  EXPECT_EQ(toValidUtf8(text), text);
}

TEST(TaskOutputTest, CutAndInvalidBytesAreRepaired) {
  // A tail cut inside "é" starts with its continuation byte.
  EXPECT_EQ(toValidUtf8("\xa9tail"), "tail");
  EXPECT_EQ(toValidUtf8("a\xff"
                        "b"),
            "a?b");
  EXPECT_EQ(toValidUtf8("a\xc3"), "a?");          // cut at the end
  EXPECT_EQ(toValidUtf8("\xc0\xaf"), "??");       // overlong '/'
  EXPECT_EQ(toValidUtf8("\xed\xa0\x80"), "???");  // a surrogate
}

TEST(TaskOutputTest, TailIsBoundedAndKeepsTheEnd) {
  testing_support::TempDir dir;
  const std::string path = dir.writeFile("stderr", std::string(10000, 'x') + "THE END\n");
  const std::string tail = readFileTail(path, 4096);
  EXPECT_EQ(tail.size(), 4096u);
  EXPECT_EQ(tail.substr(tail.size() - 8), "THE END\n");
  EXPECT_EQ(readFileTail(dir.writeFile("short", "abc"), 4096), "abc");
  EXPECT_EQ(readFileTail(dir.path() / "missing", 4096), "");
}

}  // namespace
}  // namespace tide::executor
