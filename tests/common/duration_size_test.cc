#include <gtest/gtest.h>

#include <stdexcept>

#include "common/config.h"

namespace tide {
namespace {

constexpr int64_t kSeconds = 1000;
constexpr int64_t kMs = 1;

// A text, the unit a bare number in it has, and the milliseconds it means.
struct DurationCase {
  const char* text;
  int64_t bareUnitMs;
  DurationMs ms;
};

void expectDurations(std::initializer_list<DurationCase> cases) {
  for (const DurationCase& c : cases) {
    EXPECT_EQ(parseDuration(c.text, c.bareUnitMs), c.ms) << "'" << c.text << "'";
  }
}

TEST(ParseDuration, AcceptsEveryUnit) {
  expectDurations({{"250ms", kSeconds, 250},
                   {"3s", kMs, 3000},
                   {"3sec", kMs, 3000},
                   {"2min", kMs, 120000},
                   {"1h", kMs, 3600000},
                   {"1d", kMs, 86400000}});
}

// Spark's JavaUtils.timeStringAs: us, ms, s, m, min, h, d (tide also takes the long forms).
TEST(ParseDuration, AcceptsSparksTimeStringUnits) {
  expectDurations({{"5000us", kMs, 5},
                   {"5m", kMs, 300000},
                   {"5min", kMs, 300000},
                   {"5mins", kMs, 300000},
                   {"5 minutes", kMs, 300000},
                   {"1 minute", kMs, 60000},
                   {"2secs", kMs, 2000},
                   {"2 seconds", kMs, 2000},
                   {"1hour", kMs, 3600000},
                   {"2 hours", kMs, 7200000},
                   {"1 day", kMs, 86400000},
                   {"3days", kMs, 3 * 86400000},
                   {"7 millis", kSeconds, 7},
                   {"7 milliseconds", kSeconds, 7},
                   {"2000 micros", kMs, 2},
                   {"1.5h", kMs, 5400000}});
}

TEST(ParseDuration, IgnoresCaseAndSurroundingBlanks) {
  expectDurations({{"  60S ", kMs, 60000}, {"5 min", kMs, 300000}, {"100MS", kSeconds, 100}});
}

TEST(ParseDuration, BareNumberTakesTheKeysUnit) {
  expectDurations(
      {{"60", kSeconds, 60000}, {"60", kMs, 60}, {"0", kSeconds, 0}, {"1.5", kSeconds, 1500}});
}

TEST(ParseDuration, AcceptsDecimals) {
  expectDurations(
      {{"1.5s", kMs, 1500}, {"0.25min", kMs, 15000}, {"2.0ms", kMs, 2}, {".5s", kMs, 500}});
}

TEST(ParseDuration, Infinity) {
  expectDurations({{"infinity", kMs, kInfiniteMs},
                   {"Infinity", kSeconds, kInfiniteMs},
                   {"inf", kMs, kInfiniteMs}});
}

TEST(ParseDuration, RejectsNegativeGarbageAndUnknownUnits) {
  for (const char* bad : {"-1", "-5s", "", "  ", "abc", "s", "5 parsecs", "5mn", "1.2.3s", "1.5us",
                          "1500us", "0.5ms", "99999999999999999999", "9999999999999999d", "1e3s"}) {
    EXPECT_THROW(parseDuration(bad, kSeconds), std::invalid_argument) << "'" << bad << "'";
  }
}

TEST(ParseDuration, ReasonsAreSpecific) {
  try {
    parseDuration("-5s", kMs);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "negative duration");
  }
  try {
    parseDuration("1500us", kMs);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("millisecond"), std::string::npos) << e.what();
  }
  try {
    parseDuration("5 weeks", kMs);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown unit 'weeks'"), std::string::npos) << e.what();
  }
}

TEST(FormatDuration, WritesWhatAPersonWould) {
  EXPECT_EQ(formatDuration(0), "0ms");
  EXPECT_EQ(formatDuration(250), "250ms");
  EXPECT_EQ(formatDuration(1000), "1s");
  EXPECT_EQ(formatDuration(1500), "1.5s");
  EXPECT_EQ(formatDuration(1250), "1250ms");
  EXPECT_EQ(formatDuration(90000), "90s");
  EXPECT_EQ(formatDuration(120000), "2min");
  EXPECT_EQ(formatDuration(7200000), "2h");
  EXPECT_EQ(formatDuration(86400000), "1d");
  EXPECT_EQ(formatDuration(kInfiniteMs), "infinity");
}

TEST(FormatDuration, RoundTripsThroughParse) {
  for (DurationMs ms :
       {DurationMs{0}, DurationMs{1}, DurationMs{999}, DurationMs{1500}, DurationMs{61000},
        DurationMs{3600000}, DurationMs{123456789}, kInfiniteMs}) {
    EXPECT_EQ(parseDuration(formatDuration(ms), kSeconds), ms) << formatDuration(ms);
  }
}

TEST(ParseSize, UnitsWithOptionalBIgnoringCase) {
  const int64_t kMiB = 1 << 20;
  EXPECT_EQ(parseSize("512b", kMiB), 512);
  EXPECT_EQ(parseSize("64k", 1), 64 * 1024);
  EXPECT_EQ(parseSize("64KB", 1), 64 * 1024);
  EXPECT_EQ(parseSize("512m", 1), 512 * int64_t{kMiB});
  EXPECT_EQ(parseSize("512Mb", 1), 512 * int64_t{kMiB});
  EXPECT_EQ(parseSize("2g", 1), int64_t{2} << 30);
  EXPECT_EQ(parseSize("2GB", 1), int64_t{2} << 30);
  EXPECT_EQ(parseSize("1t", 1), int64_t{1} << 40);
  EXPECT_EQ(parseSize("1.5g", 1), int64_t{3} << 29);
}

TEST(ParseSize, BareNumberTimesBareUnit) {
  EXPECT_EQ(parseSize("512", int64_t{1} << 20), int64_t{512} << 20);
  EXPECT_EQ(parseSize("4096", 1), 4096);
}

TEST(ParseSize, RejectsNegativeGarbageAndOverflow) {
  for (const char* bad : {"-1", "-1g", "", "lots", "5x", "5 gigs", "0.5b", "99999999999p"}) {
    EXPECT_THROW(parseSize(bad, 1), std::invalid_argument) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace tide
