#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/config.h"
#include "tests/support/errors.h"
#include "tests/support/properties.h"
#include "tests/support/temp_dir.h"

namespace tide {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_support::expectedMessageOf;
using testing_support::TempDir;

TEST(KeyTable, DefaultsParseByTheirKind) {
  using Read = void (*)(const Properties&, const std::string&);
  const std::map<ValueKind, Read> readByKind = {
      {ValueKind::kString, [](const Properties& p, const std::string& k) { p.getString(k); }},
      {ValueKind::kBool, [](const Properties& p, const std::string& k) { p.getBool(k); }},
      {ValueKind::kInt, [](const Properties& p, const std::string& k) { p.getInt(k); }},
      {ValueKind::kDouble, [](const Properties& p, const std::string& k) { p.getDouble(k); }},
      {ValueKind::kDuration, [](const Properties& p, const std::string& k) { p.getDuration(k); }},
      {ValueKind::kSize, [](const Properties& p, const std::string& k) { p.getSizeBytes(k); }},
  };
  ASSERT_EQ(readByKind.size(), static_cast<size_t>(ValueKind::kSize) + 1) << "a kind unread";
  const Properties defaults;
  std::set<std::string> names;
  for (const KeyInfo& info : knownKeys()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate key " << info.name;
    EXPECT_FALSE(info.help.empty()) << info.name;
    if (info.defaultValue.empty()) continue;
    EXPECT_NO_THROW(readByKind.at(info.kind)(defaults, info.name)) << info.name;
  }
}

TEST(KeyTable, SparkDefaults) {
  const Properties p;
  EXPECT_TRUE(p.getBool("dynamicAllocation.enabled"));  // tide's own default
  EXPECT_EQ(p.getInt("dynamicAllocation.minExecutors"), 0);
  EXPECT_EQ(p.getInt("dynamicAllocation.maxExecutors"), 2147483647);
  EXPECT_EQ(p.getDouble("dynamicAllocation.executorAllocationRatio"), 1.0);
  EXPECT_EQ(p.getDuration("dynamicAllocation.schedulerBacklogTimeout"), 1000);
  EXPECT_EQ(p.getDuration("dynamicAllocation.executorIdleTimeout"), 60000);
  EXPECT_EQ(p.getDuration("dynamicAllocation.cachedExecutorIdleTimeout"), kInfiniteMs);
  EXPECT_EQ(p.getDuration("dynamicAllocation.shuffleTracking.timeout"), kInfiniteMs);
  EXPECT_EQ(p.getDuration("dynamicAllocation.interval"), 100);
  EXPECT_EQ(p.getSizeBytes("executor.memory"), int64_t{1} << 30);
  EXPECT_EQ(p.getInt("task.maxFailures"), 4);
  EXPECT_EQ(p.getDuration("locality.wait"), 3000);
  EXPECT_EQ(p.getString("scheduler.mode"), "FIFO");
  EXPECT_EQ(p.getDuration("network.timeout"), 120000);
  EXPECT_EQ(p.getString("slurm.apiVersion"), "v0.0.38");
  EXPECT_FALSE(p.getOptionalInt("dynamicAllocation.initialExecutors").has_value());
  EXPECT_FALSE(p.getOptionalDuration("dynamicAllocation.sustainedSchedulerBacklogTimeout"));
  EXPECT_FALSE(p.hasValue("executor.instances"));
  EXPECT_TRUE(p.hasValue("executor.cores"));
}

TEST(KeyTable, BareNumbersUseTheKeysSparkUnit) {
  const Properties p =
      testing_support::propertiesOf({{"dynamicAllocation.executorIdleTimeout", "30"},
                                     {"dynamicAllocation.interval", "250"},
                                     {"locality.wait", "500"},
                                     {"executor.memory", "2048"}});
  EXPECT_EQ(p.getDuration("dynamicAllocation.executorIdleTimeout"), 30000);
  EXPECT_EQ(p.getDuration("dynamicAllocation.interval"), 250);
  EXPECT_EQ(p.getDuration("locality.wait"), 500);
  EXPECT_EQ(p.getSizeBytes("executor.memory"), int64_t{2048} << 20);
}

TEST(KeyTable, FormatListsKeysWithDefaults) {
  const std::string all = formatKeyTable();
  EXPECT_THAT(all, HasSubstr("dynamicAllocation.maxExecutors = 2147483647"));
  EXPECT_THAT(all, HasSubstr("executor.instances (no default)"));
  EXPECT_THAT(all, HasSubstr("bare number: seconds"));
  const std::string nm = formatKeyTable({"nm."});
  EXPECT_THAT(nm, HasSubstr("nm.port = 8042"));
  EXPECT_THAT(nm, ::testing::Not(HasSubstr("rm.port")));
}

// Every integer key is read into an int, and a count of zero or a zero interval would make a
// daemon spin or never act: the key table bounds them, so every reader refuses the same values in
// the same words, and validate() refuses them at start.
TEST(KeyTable, RangesAreEnforcedByEveryGetterAndByValidate) {
  Properties p;
  // 2^32 + 1 would have become 1 core when narrowed to an int.
  p.set("executor.cores", "4294967297");
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getInt("executor.cores"); }),
            "invalid value '4294967297' for executor.cores (--conf): must be between 1 and "
            "1000000");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.validate(); }),
              HasSubstr("executor.cores (--conf): must be between 1 and 1000000"));
  p.set("executor.cores", "1000000");
  EXPECT_EQ(p.getInt("executor.cores"), 1000000);

  p.set("nm.cores", "0");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.getOptionalInt("nm.cores"); }),
              HasSubstr("must be between 1 and 1000000"));
  p.set("ui.port", "65536");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.getInt("ui.port"); }),
              HasSubstr("ui.port (--conf): must be between 0 and 65535"));
  p.set("dynamicAllocation.maxExecutors", "2147483648");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.getInt("dynamicAllocation.maxExecutors"); }),
              HasSubstr("must be between 0 and 2147483647"));

  p.set("am.executorSyncWait", "0");
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getDuration("am.executorSyncWait"); }),
            "invalid value '0' for am.executorSyncWait (--conf): must be greater than 0");
  p.set("am.keepAlive", "0");  // 0 means something here: stop when the job ends
  EXPECT_EQ(p.getDuration("am.keepAlive"), 0);
}

TEST(KeyTable, EveryDefaultIsWithinItsKeysRangeAndTheHelpShowsTheRange) {
  Properties defaults;
  EXPECT_NO_THROW(defaults.validate());
  for (const KeyInfo& info : knownKeys()) {
    if (info.defaultValue.empty()) continue;
    if (info.kind == ValueKind::kInt) {
      EXPECT_NO_THROW(defaults.getInt(info.name)) << info.name;
    } else if (info.kind == ValueKind::kDuration) {
      EXPECT_NO_THROW(defaults.getDuration(info.name)) << info.name;
    }
  }
  const std::string table = formatKeyTable();
  EXPECT_THAT(table, HasSubstr("task.cpus = 1  [integer 1 to 1000000]"));
  EXPECT_THAT(table, HasSubstr("dynamicAllocation.minExecutors = 0  [integer]"));
  EXPECT_THAT(table, HasSubstr("rm.nodeExpiry = 10s  [duration > 0; bare number: milliseconds]"));
}

TEST(Properties, LoadsEverySeparatorCommentsAndBlankLines) {
  TempDir dir;
  const std::string file = dir.writeFile("tide.conf",
                                         "# a comment\n"
                                         "! another comment\n"
                                         "\n"
                                         "dynamicAllocation.minExecutors 2\n"
                                         "dynamicAllocation.maxExecutors=10   \n"
                                         "executor.cores: 4\n"
                                         "  executor.memory   =   2g\t\n"
                                         "nm.rm http://host:8088/x?a=b#c\r\n"
                                         "scheduler.mode\t\tFAIR\n");
  Properties p;
  p.loadFile(file);
  EXPECT_EQ(p.sourceFile(), file);
  EXPECT_EQ(p.getInt("dynamicAllocation.minExecutors"), 2);
  EXPECT_EQ(p.getInt("dynamicAllocation.maxExecutors"), 10);
  EXPECT_EQ(p.getInt("executor.cores"), 4);
  EXPECT_EQ(p.getSizeBytes("executor.memory"), int64_t{2} << 30);
  EXPECT_EQ(p.getString("nm.rm"), "http://host:8088/x?a=b#c");
  EXPECT_EQ(p.getString("scheduler.mode"), "FAIR");
  ASSERT_TRUE(p.entry("executor.cores"));
  EXPECT_EQ(p.entry("executor.cores")->origin.describe(), file + ":6");
  EXPECT_EQ(p.entries().size(), 6u);
}

TEST(Properties, LaterDefinitionsWin) {
  TempDir dir;
  Properties p;
  p.loadFile(dir.writeFile("a.conf", "executor.cores 2\nexecutor.cores 3\n"));
  EXPECT_EQ(p.getInt("executor.cores"), 3);
  EXPECT_EQ(p.entry("executor.cores")->origin.line, 2);
}

TEST(Properties, KeyWithoutValueNamesFileAndLine) {
  TempDir dir;
  const std::string file = dir.writeFile("bad.conf", "executor.cores 2\n\nexecutor.memory\n");
  Properties p;
  const std::string message = expectedMessageOf<ConfigError>([&] { p.loadFile(file); });
  EXPECT_THAT(message, HasSubstr(file + ":3"));
  EXPECT_THAT(message, HasSubstr("'executor.memory' has no value"));
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.loadFile(dir.writeFile("b.conf", "x=\n")); }),
              HasSubstr("b.conf:1"));
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.loadFile(dir.writeFile("c.conf", "= 5\n")); }),
              HasSubstr("c.conf:1: line has a value but no key"));
}

TEST(Properties, UnreadableFileNamesIt) {
  TempDir dir;
  Properties p;
  const std::string missing = (dir.path() / "missing.conf").string();
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.loadFile(missing); }),
              HasSubstr("cannot read properties file '" + missing + "'"));
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.loadFile(dir.path().string()); }),
              HasSubstr("directory"));
}

TEST(Properties, SparkPrefixIsAnAlias) {
  TempDir dir;
  Properties p;
  p.loadFile(dir.writeFile("spark.conf", "spark.dynamicAllocation.maxExecutors 7\n"));
  EXPECT_TRUE(p.has("dynamicAllocation.maxExecutors"));
  EXPECT_TRUE(p.has("spark.dynamicAllocation.maxExecutors"));
  EXPECT_EQ(p.getInt("spark.dynamicAllocation.maxExecutors"), 7);
  EXPECT_EQ(p.entries().count("dynamicAllocation.maxExecutors"), 1u);
  p.set("spark.dynamicAllocation.maxExecutors", "9");
  EXPECT_EQ(p.getInt("dynamicAllocation.maxExecutors"), 9);
  EXPECT_EQ(p.entries().size(), 1u);
  EXPECT_TRUE(p.unknownKeyWarnings().empty());
}

TEST(Properties, SetTrimsAndEmptyValueUnsets) {
  Properties p;
  p.set(" executor.cores ", " 8 ");
  EXPECT_EQ(p.getInt("executor.cores"), 8);
  p.set("executor.cores", "");
  EXPECT_FALSE(p.has("executor.cores"));
  EXPECT_EQ(p.getInt("executor.cores"), 1);
  p.set("executor.cores", "3");
  p.unset("spark.executor.cores");
  EXPECT_FALSE(p.has("executor.cores"));
}

TEST(Properties, UnknownKeysAreKeptAndGetADidYouMean) {
  TempDir dir;
  const std::string file = dir.writeFile("t.conf",
                                         "dynamicAllocation.enabled true\n"
                                         "dynamicAllocation.maxExecutor 5\n"
                                         "spark.app.name wordcount\n");
  Properties p;
  p.loadFile(file);
  p.set("dynamicallocation.minexecutors", "1");
  p.set("spark.executor.coress", "2");
  EXPECT_EQ(p.entry("spark.app.name")->value, "wordcount");
  EXPECT_THAT(p.unknownKeyWarnings(),
              ElementsAre("unknown key 'dynamicAllocation.maxExecutor' (" + file +
                              ":2); did you mean 'dynamicAllocation.maxExecutors'?",
                          "unknown key 'dynamicallocation.minexecutors' (--conf); did you mean "
                          "'dynamicAllocation.minExecutors'?",
                          "unknown key 'spark.app.name' (" + file + ":3) is ignored",
                          "unknown key 'spark.executor.coress' (--conf); did you mean "
                          "'executor.cores'?"));
}

// Found by fuzz_config: a BOM was stripped from the first line only, so the first key of a
// concatenated file saved with one was unknown, and toText() did not load back.
TEST(Properties, AByteOrderMarkStartingAnyLineIsIgnored) {
  Properties p;
  const std::string bom = "\xEF\xBB\xBF";
  p.loadText(bom + "executor.cores=2\n" + bom + "task.cpus=1\n", "a.conf");
  EXPECT_EQ(p.getInt("executor.cores"), 2);
  EXPECT_EQ(p.getInt("task.cpus"), 1);
  EXPECT_TRUE(p.unknownKeyWarnings().empty());
  Properties again;
  again.loadText(p.toText(), "b.conf");
  EXPECT_EQ(again.toText(), p.toText());
}

// Found by fuzz_config: a BOM after blanks (form feeds) was kept as a key of its own, which
// toText() wrote first on a line, where loading strips it and finds no key.
TEST(Properties, AByteOrderMarkAfterBlanksIsNoKey) {
  const std::string bom = "\xEF\xBB\xBF";
  Properties p;
  p.loadText("\f\f" + bom + "\f\fexecutor.cores  2\n", "a.conf");
  EXPECT_EQ(p.getInt("executor.cores"), 2);
  p.set(" " + bom + "task.cpus", "1");
  EXPECT_EQ(p.getInt("task.cpus"), 1);
  EXPECT_THROW(p.set(bom, "1"), ConfigError);
  Properties again;
  again.loadText(p.toText(), "b.conf");
  EXPECT_EQ(again.toText(), p.toText());
}

// Found by fuzz_config: every unknown key was measured against every known key, so a file of
// long unknown keys took seconds to warn about. Keys too far apart in length are skipped now;
// the warnings are the same.
TEST(Properties, LongUnknownKeysAreIgnoredWithoutASuggestion) {
  Properties p;
  const std::string longKey = "dynamicAllocation.maxExecutors" + std::string(100000, 'x');
  p.set(longKey, "1");
  p.set("executor.coresx", "2");
  p.set("xx", "3");
  EXPECT_THAT(p.unknownKeyWarnings(),
              ElementsAre("unknown key '" + longKey + "' (--conf) is ignored",
                          "unknown key 'executor.coresx' (--conf); did you mean "
                          "'executor.cores'?",
                          "unknown key 'xx' (--conf) is ignored"));
}

TEST(Properties, TypedGetterErrorsNameKeyValueAndOrigin) {
  TempDir dir;
  const std::string file = dir.writeFile("tide.conf",
                                         "# bounds\n"
                                         "dynamicAllocation.minExecutors 1\n"
                                         "\n"
                                         "dynamicAllocation.maxExecutors abc\n");
  Properties p;
  p.loadFile(file);
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getInt("dynamicAllocation.maxExecutors"); }),
            "invalid value 'abc' for dynamicAllocation.maxExecutors (" + file +
                ":4): expected an integer");

  p.set("executor.cores", "99999999999999999999");
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getInt("executor.cores"); }),
            "invalid value '99999999999999999999' for executor.cores (--conf): integer out of "
            "range");
  p.set("executor.cores", "4x");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.getInt("executor.cores"); }),
              HasSubstr("expected an integer"));
  p.set("executor.cores", "-3");
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getInt("executor.cores"); }),
            "invalid value '-3' for executor.cores (--conf): must be between 1 and 1000000");

  p.set("speculation", "maybe");
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getBool("speculation"); }),
            "invalid value 'maybe' for speculation (--conf): expected true or false");

  p.set("dynamicAllocation.executorAllocationRatio", "half");
  EXPECT_THAT(expectedMessageOf<ConfigError>(
                  [&] { p.getDouble("dynamicAllocation.executorAllocationRatio"); }),
              HasSubstr("'half' for dynamicAllocation.executorAllocationRatio (--conf): expected "
                        "a number"));

  p.set("dynamicAllocation.executorIdleTimeout", "-5s", Origin{"runtime", 0});
  EXPECT_THAT(expectedMessageOf<ConfigError>(
                  [&] { p.getDuration("dynamicAllocation.executorIdleTimeout"); }),
              HasSubstr("invalid value '-5s' for dynamicAllocation.executorIdleTimeout "
                        "(runtime): expected a duration"));

  p.set("executor.memory", "lots");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.getSizeBytes("executor.memory"); }),
              HasSubstr("invalid value 'lots' for executor.memory (--conf): expected a size"));

  p.set("scheduler.mode", "random");
  EXPECT_EQ(expectedMessageOf<ConfigError>([&] { p.getString("scheduler.mode"); }),
            "invalid value 'random' for scheduler.mode (--conf): expected FIFO or FAIR");
  p.set("scheduler.mode", "fair");
  EXPECT_EQ(p.getString("scheduler.mode"), "FAIR");
}

TEST(Properties, BoolSpellings) {
  Properties p;
  for (const char* yes : {"true", "TRUE", "yes", "Yes", "1"}) {
    p.set("speculation", yes);
    EXPECT_TRUE(p.getBool("speculation")) << yes;
  }
  for (const char* no : {"false", "False", "no", "NO", "0"}) {
    p.set("speculation", no);
    EXPECT_FALSE(p.getBool("speculation")) << no;
  }
}

TEST(Properties, MissingValueWithoutDefault) {
  Properties p;
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.getString("nm.workDir"); }),
              HasSubstr("missing value for nm.workDir"));
  EXPECT_FALSE(p.getOptionalString("nm.workDir"));
  p.set("nm.workDir", "/var/lib/tide");
  EXPECT_EQ(p.getOptionalString("nm.workDir"), "/var/lib/tide");
}

TEST(Properties, ProgrammingErrorsAreLogicErrors) {
  Properties p;
  EXPECT_THROW(p.getInt("no.such.key"), std::logic_error);
  EXPECT_THROW(p.getInt("executor.memory"), std::logic_error);  // a size, not an int
  EXPECT_NO_THROW(p.getDouble("executor.cores"));               // ints read fine as doubles
}

TEST(Properties, ValidateReportsTheFirstBadKnownKeyOnly) {
  Properties p;
  p.set("unknown.key", "whatever");
  p.set("executor.cores", "2");
  EXPECT_NO_THROW(p.validate());
  p.set("locality.wait", "soon");
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] { p.validate(); }),
              HasSubstr("'soon' for locality.wait"));
}

TEST(Properties, DescribeAndSerialise) {
  Properties p;
  p.set("executor.cores", "2");
  EXPECT_EQ(p.describe("executor.cores"), "executor.cores=2 (--conf)");
  EXPECT_EQ(p.describe("spark.executor.memory"), "executor.memory=1g (default)");
  EXPECT_EQ(p.describe("executor.instances"), "executor.instances (not set)");
  p.set("ui.port", "0");
  EXPECT_EQ(p.toText(), "executor.cores=2\nui.port=0\n");
  EXPECT_THAT(p.toConfArgs(), ElementsAre("--conf", "executor.cores=2", "--conf", "ui.port=0"));
}

TEST(Origin, Describe) {
  EXPECT_EQ(Origin{}.describe(), "--conf");
  EXPECT_EQ((Origin{"conf/tide.conf", 12}).describe(), "conf/tide.conf:12");
  EXPECT_EQ((Origin{"REST", 0}).describe(), "REST");
}

}  // namespace
}  // namespace tide
