#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "common/logging.h"

namespace tide {
namespace {

using ::testing::HasSubstr;

// Points the log sink at a string stream for one test and restores stderr text logging after.
class LoggingTest : public ::testing::Test {
 protected:
  void capture(Severity level, LogFormat format) { initLogging(LogOptions{level, format}, &out_); }
  void TearDown() override { initLogging(LogOptions{}); }

  std::vector<std::string> lines() {
    flushLogs();
    std::vector<std::string> result;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) result.push_back(line);
    return result;
  }

  std::ostringstream out_;
};

TEST(JsonEscape, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(jsonEscape("plain"), "plain");
  EXPECT_EQ(jsonEscape("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(jsonEscape("C:\\tmp"), "C:\\\\tmp");
  EXPECT_EQ(jsonEscape("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(jsonEscape(std::string("nul\0bell\a", 9)), "nul\\u0000bell\\u0007");
  EXPECT_EQ(jsonEscape("\x1f\x7f"), "\\u001f\\u007f");
}

TEST(JsonEscape, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(jsonEscape("größe → 🌊"), "größe → 🌊");
  EXPECT_EQ(jsonEscape("bad \xff byte"), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(jsonEscape("cut \xE2\x86"), "cut \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(jsonEscape("overlong \xC0\xAF"), "overlong \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(FormatLogRecord, TextAndJson) {
  EXPECT_EQ(formatLogRecord(LogFormat::kText, "2024-05-01T12:34:56.789Z", Severity::kWarn, "am",
                            "target 3 -> 7"),
            "2024-05-01T12:34:56.789Z WARN  [am] target 3 -> 7");
  EXPECT_EQ(formatLogRecord(LogFormat::kJson, "2024-05-01T12:34:56.789Z", Severity::kError, "rm",
                            "bad \"node\"\n"),
            "{\"ts\":\"2024-05-01T12:34:56.789Z\",\"level\":\"error\",\"component\":\"rm\","
            "\"msg\":\"bad \\\"node\\\"\\n\"}");
}

TEST(LogTimestamp, IsIso8601UtcWithMilliseconds) {
  EXPECT_TRUE(
      std::regex_match(logTimestampNow(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << logTimestampNow();
}

TEST(Severity, ParseAndName) {
  EXPECT_EQ(parseSeverity("DEBUG"), Severity::kDebug);
  EXPECT_EQ(parseSeverity("warning"), Severity::kWarn);
  EXPECT_EQ(parseSeverity("loud"), std::nullopt);
  EXPECT_EQ(severityName(Severity::kTrace), "trace");
}

TEST(LogOptions, FromPropertiesNamesTheKeyOnError) {
  Properties p;
  EXPECT_EQ(logOptionsFrom(p).level, Severity::kInfo);
  EXPECT_EQ(logOptionsFrom(p).format, LogFormat::kText);
  p.set("log.level", "DEBUG");
  p.set("log.format", "json");
  EXPECT_EQ(logOptionsFrom(p).level, Severity::kDebug);
  EXPECT_EQ(logOptionsFrom(p).format, LogFormat::kJson);
  p.set("log.level", "loud");
  try {
    logOptionsFrom(p);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("invalid value 'loud' for log.level (--conf)"));
  }
  p.set("log.level", "info");
  p.set("log.format", "xml");
  EXPECT_THROW(logOptionsFrom(p), ConfigError);
}

TEST_F(LoggingTest, JsonLinesAreEscapedAndComplete) {
  capture(Severity::kInfo, LogFormat::kJson);
  Logger log("am");
  log.info() << "quote \" backslash \\ newline\n" << 42;
  const auto got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      got[0], std::regex(R"(\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","level":"info",)"
                         R"("component":"am","msg":"quote \\" backslash \\\\ newline\\n42"\})")))
      << got[0];
}

TEST_F(LoggingTest, TextLines) {
  capture(Severity::kDebug, LogFormat::kText);
  Logger log("rm");
  log.debug() << "node "
              << "n1"
              << " joined";
  const auto got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(std::regex_match(got[0], std::regex(R"(\S+Z DEBUG \[rm\] node n1 joined)")))
      << got[0];
}

TEST_F(LoggingTest, RecordsBelowTheLevelAreDroppedWithoutEvaluation) {
  capture(Severity::kWarn, LogFormat::kText);
  Logger log("am");
  int evaluations = 0;
  auto expensive = [&] {
    ++evaluations;
    return "expensive";
  };
  TIDE_LOG(log, debug) << expensive();
  TIDE_LOG(log, info) << expensive();
  TIDE_LOG(log, warn) << expensive();
  log.info() << "dropped";
  EXPECT_EQ(evaluations, 1);
  EXPECT_FALSE(log.enabled(Severity::kInfo));
  EXPECT_TRUE(log.enabled(Severity::kError));
  const auto got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], HasSubstr("WARN  [am] expensive"));

  setLogLevel(Severity::kTrace);  // a reload lowers the level without a new sink
  log.trace() << "now visible";
  EXPECT_EQ(lines().size(), 2u);
}

TEST_F(LoggingTest, ConcurrentLoggersWriteWholeLines) {
  capture(Severity::kInfo, LogFormat::kJson);
  constexpr int kThreads = 4;
  constexpr int kRecords = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      Logger log("thread" + std::to_string(t));
      for (int i = 0; i < kRecords; ++i) log.info() << "record " << i;
    });
  }
  for (auto& thread : threads) thread.join();
  const auto got = lines();
  ASSERT_EQ(got.size(), static_cast<size_t>(kThreads * kRecords));
  for (const std::string& line : got) {
    ASSERT_TRUE(std::regex_match(line, std::regex(R"(\{"ts":.*"msg":"record \d+"\})"))) << line;
  }
}

TEST_F(LoggingTest, UnknownKeyWarningsAreLogged) {
  capture(Severity::kInfo, LogFormat::kText);
  Properties p;
  p.set("dynamicAllocation.maxExecutor", "3");
  warnUnknownKeys(p);
  const auto got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], HasSubstr("WARN  [config] unknown key 'dynamicAllocation.maxExecutor'"));
}

}  // namespace
}  // namespace tide
