// The kept logs of an application on one node (common/app_logs.h): the listing tide-nm serves,
// the checks that keep a requested path inside the container's directory, and the retention.

#include "common/app_logs.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

constexpr int64_t kDayMs = 24 * 3600 * 1000LL;

class AppLogsTest : public ::testing::Test {
 protected:
  std::string logDir() const { return (dir_.path() / "logs").string(); }
  fs::path write(const std::string& relative, const std::string& content) {
    const fs::path path = dir_.path() / "logs" / relative;
    fs::create_directories(path.parent_path());
    testing_support::writeFile(path, content);
    return path;
  }
  // Sets the modification time of `path` and everything below it to `epochMs`.
  static void setModified(const fs::path& path, int64_t epochMs) {
    const struct timespec when = {static_cast<time_t>(epochMs / 1000), 0};
    const struct timespec times[2] = {when, when};
    if (fs::is_directory(path)) {
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        ASSERT_EQ(::utimensat(AT_FDCWD, entry.path().c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
      }
    }
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }
  Status resolve(const std::string& app, const std::string& container, const std::string& path) {
    std::string absolute;
    return resolveLogFile(logDir(), app, container, path, &absolute);
  }

  testing_support::TempDir dir_;
};

TEST_F(AppLogsTest, ListsEveryContainerWithItsExecutorAndFilesWithSizes) {
  write("app_1/c_2/stderr", "boom\n");
  write("app_1/c_2/stdout", "");
  write("app_1/c_2/tasks/bad-0-1/stderr", "task failed\n");
  write("app_1/c_2/.executor-id", "e1\n");
  write("app_1/c_1/stderr", "am\n");
  std::vector<ContainerLogs> containers;
  ASSERT_TRUE(listApplicationLogs(logDir(), "app_1", &containers).ok());
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0].containerId, "c_1");
  EXPECT_EQ(containers[0].executorId, "");
  EXPECT_EQ(containers[1].executorId, "e1");
  ASSERT_EQ(containers[1].files.size(), 3u);  // the hidden .executor-id is not a log
  EXPECT_EQ(containers[1].files[0].path, "stderr");
  EXPECT_EQ(containers[1].files[0].size, 5);
  EXPECT_EQ(containers[1].files[2].path, "tasks/bad-0-1/stderr");
  EXPECT_EQ(containers[1].files[2].size, 12);

  const Status missing = listApplicationLogs(logDir(), "app_2", &containers);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("app_2"));
  EXPECT_EQ(listApplicationLogs(logDir(), "..", &containers).code(), StatusCode::kInvalidArgument);
}

TEST_F(AppLogsTest, ResolvesOnlyPlainPathsInsideTheContainersDirectory) {
  write("app_1/c_1/tasks/s-0-0/stderr", "x");
  write("app_1/c_1/stderr", "y");
  write("secret", "do not serve");
  std::string path;
  ASSERT_TRUE(resolveLogFile(logDir(), "app_1", "c_1", "tasks/s-0-0/stderr", &path).ok());
  EXPECT_EQ(path, fs::canonical(dir_.path() / "logs/app_1/c_1/tasks/s-0-0/stderr").string());

  for (const char* bad :
       {"../../secret", "tasks/../stderr", "/etc/passwd", "tasks//stderr", ".executor-id", "a b"}) {
    const Status refused = resolve("app_1", "c_1", bad);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(refused.message(), HasSubstr("log path")) << bad;
  }
  EXPECT_THAT(resolve("..", "c_1", "stderr").message(), HasSubstr("bad application id '..'"));
  EXPECT_THAT(resolve("app_1", "../app_1", "stderr").message(), HasSubstr("bad container id"));
  EXPECT_EQ(resolve("app_1", "c_1", "tasks").code(), StatusCode::kInvalidArgument);  // a dir
  const Status missing = resolve("app_1", "c_1", "stdout");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("no file 'stdout'"));

  // A symlink out of the container's directory, or a container directory that is one.
  fs::create_symlink(dir_.path() / "logs" / "secret", dir_.path() / "logs/app_1/c_1/evil");
  const Status link = resolve("app_1", "c_1", "evil");
  EXPECT_EQ(link.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(link.message(), HasSubstr("leads outside"));
  fs::create_symlink(dir_.path(), dir_.path() / "logs/app_1/c_9");
  EXPECT_EQ(resolve("app_1", "c_9", "logs/secret").code(), StatusCode::kInvalidArgument);
}

TEST_F(AppLogsTest, ReadsAFileOrItsTail) {
  const fs::path file = write("app_1/c_1/stdout", "0123456789");
  std::string content;
  ASSERT_TRUE(readLogFile(file.string(), std::nullopt, &content).ok());
  EXPECT_EQ(content, "0123456789");
  ASSERT_TRUE(readLogFile(file.string(), 3, &content).ok());
  EXPECT_EQ(content, "789");
  ASSERT_TRUE(readLogFile(file.string(), 100, &content).ok());
  EXPECT_EQ(content, "0123456789");
}

TEST_F(AppLogsTest, RetentionDeletesOnlyApplicationsUntouchedForLongerThanIt) {
  const int64_t now = 1'800'000'000'000;
  write("app_old/c_1/stderr", "old");
  write("app_new/c_1/stderr", "new");
  write("app_running/c_1/stderr", "quiet but running");
  setModified(dir_.path() / "logs" / "app_old", now - 8 * kDayMs);
  setModified(dir_.path() / "logs" / "app_running", now - 8 * kDayMs);
  setModified(dir_.path() / "logs" / "app_new", now - 8 * kDayMs);
  // One file written yesterday keeps its whole application.
  setModified(dir_.path() / "logs/app_new/c_1/stderr", now - kDayMs);

  const std::vector<std::string> removed =
      removeExpiredApplicationLogs(logDir(), 7 * kDayMs, now, {"app_running"});
  EXPECT_EQ(removed, std::vector<std::string>{"app_old"});
  EXPECT_FALSE(fs::exists(dir_.path() / "logs" / "app_old"));
  EXPECT_TRUE(fs::exists(dir_.path() / "logs" / "app_new"));
  EXPECT_TRUE(fs::exists(dir_.path() / "logs" / "app_running"));
  EXPECT_TRUE(removeExpiredApplicationLogs((dir_.path() / "none").string(), 1, now).empty());
}

// A sweep asked to stop ends before the next application (a node manager stopping does not
// wait for a whole log dir to be deleted).
TEST_F(AppLogsTest, RetentionStopsBeforeTheNextApplicationWhenAsked) {
  const int64_t now = 1'800'000'000'000;
  write("app_a/c_1/stderr", "old");
  write("app_b/c_1/stderr", "old");
  int asked = 0;
  const std::vector<std::string> removed =
      removeExpiredApplicationLogs(logDir(), 7 * kDayMs, now, {}, [&] { return ++asked > 1; });
  EXPECT_EQ(removed.size(), 1u);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(removeExpiredApplicationLogs(logDir(), 7 * kDayMs, now, {}, [] { return true; }),
            std::vector<std::string>{});
  EXPECT_EQ(removeExpiredApplicationLogs(logDir(), 7 * kDayMs, now).size(), 1u);
}

TEST(TaskDirName, KeepsPlainStageIdsAndNeutralisesTheRest) {
  EXPECT_EQ(taskDirName("bad", 0, 2), "bad-0-2");
  EXPECT_EQ(taskDirName("../x", 1, 0), "_.._x-1-0");
  EXPECT_EQ(taskDirName(".hidden", 1, 0), "_.hidden-1-0");
  EXPECT_EQ(taskDirName("", 3, 1), "_-3-1");
}

}  // namespace
}  // namespace tide
