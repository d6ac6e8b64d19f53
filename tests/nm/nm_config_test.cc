// tide-nm's configuration: defaults, units, derived values and errors naming the key.

#include "deploy/nm/nm_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/command_line.h"
#include "tests/support/errors.h"

namespace tide::nm {
namespace {

NodeManagerConfig configFrom(const std::vector<std::string>& confs) {
  CommandLine cli("tide-nm", "");
  std::vector<std::string> args;
  for (const std::string& conf : confs) {
    args.push_back("--conf");
    args.push_back(conf);
  }
  cli.parse(args);
  return NodeManagerConfig::fromProperties(cli.properties());
}

std::string errorOf(const std::vector<std::string>& confs) {
  return testing_support::messageOf<ConfigError>([&] { configFrom(confs); });
}

TEST(NodeManagerConfigTest, Defaults) {
  const NodeManagerConfig config = configFrom({});
  EXPECT_EQ(config.rmUrl, "http://127.0.0.1:8088");
  EXPECT_EQ(config.host, "127.0.0.1");
  EXPECT_EQ(config.port, 8042);
  EXPECT_EQ(config.capability.vCores, detectCores());
  EXPECT_EQ(config.capability.memoryMb, detectMemoryMb());
  EXPECT_GE(config.capability.vCores, 1);
  EXPECT_GE(config.capability.memoryMb, 1);
  EXPECT_EQ(config.workDir, "");
  EXPECT_FALSE(config.heartbeatInterval.has_value());
  EXPECT_EQ(config.defaultHeartbeatInterval, 1000);
  EXPECT_EQ(config.memoryEnforcement, MemoryEnforcement::kAuto);
  EXPECT_EQ(config.stopGracePeriod, 2000);
}

TEST(NodeManagerConfigTest, LogDirAndRetention) {
  EXPECT_EQ(configFrom({}).logDir, "");  // tide-nm then uses <nm.workDir>/logs
  EXPECT_EQ(configFrom({}).logRetention, 7 * 24 * 3600 * 1000LL);
  const NodeManagerConfig config = configFrom({"nm.logDir=/var/log/tide", "nm.logRetention=2h"});
  EXPECT_EQ(config.logDir, "/var/log/tide");
  EXPECT_EQ(config.logRetention, 2 * 3600 * 1000);
  EXPECT_EQ(configFrom({"nm.logRetention=infinity"}).logRetention, kInfiniteMs);
  EXPECT_NE(errorOf({"nm.logRetention=0"}).find("nm.logRetention"), std::string::npos);
}

TEST(NodeManagerConfigTest, ExplicitValuesAndUnits) {
  const NodeManagerConfig config = configFrom(
      {"nm.rm=http://rm:9000/", "nm.port=0", "nm.cores=3", "nm.memory=2g", "nm.workDir=/srv/nm",
       "nm.heartbeatInterval=250ms", "nm.memoryEnforcement=Watchdog", "nm.stopGracePeriod=5s"});
  EXPECT_EQ(config.rmUrl, "http://rm:9000");
  EXPECT_EQ(config.port, 0);
  EXPECT_EQ(config.capability.vCores, 3);
  EXPECT_EQ(config.capability.memoryMb, 2048);
  EXPECT_EQ(config.workDir, "/srv/nm");
  EXPECT_EQ(config.heartbeatInterval, std::optional<DurationMs>(250));
  EXPECT_EQ(config.memoryEnforcement, MemoryEnforcement::kWatchdog);
  EXPECT_EQ(config.stopGracePeriod, 5000);

  EXPECT_EQ(configFrom({"nm.memory=512"}).capability.memoryMb, 512);       // bare number: MiB
  EXPECT_EQ(configFrom({"nm.stopGracePeriod=300"}).stopGracePeriod, 300);  // bare: ms
}

TEST(NodeManagerConfigTest, ErrorsNameTheKey) {
  EXPECT_NE(errorOf({"nm.port=70000"}).find("nm.port"), std::string::npos);
  EXPECT_NE(errorOf({"nm.cores=0"}).find("nm.cores"), std::string::npos);
  EXPECT_NE(errorOf({"nm.memory=100k"}).find("nm.memory"), std::string::npos);
  EXPECT_NE(errorOf({"nm.rm=ftp://x"}).find("nm.rm"), std::string::npos);
  EXPECT_NE(errorOf({"nm.heartbeatInterval=0"}).find("nm.heartbeatInterval"), std::string::npos);
  const std::string mode = errorOf({"nm.memoryEnforcement=strict"});
  EXPECT_NE(mode.find("nm.memoryEnforcement"), std::string::npos) << mode;
  EXPECT_NE(mode.find("strict"), std::string::npos) << mode;
  EXPECT_NE(errorOf({"nm.stopGracePeriod=soon"}).find("nm.stopGracePeriod"), std::string::npos);
}

TEST(NodeManagerConfigTest, MemoryEnforcementNames) {
  for (MemoryEnforcement mode : {MemoryEnforcement::kAuto, MemoryEnforcement::kCgroup,
                                 MemoryEnforcement::kWatchdog, MemoryEnforcement::kOff}) {
    EXPECT_EQ(parseMemoryEnforcement(memoryEnforcementName(mode)), mode);
  }
  EXPECT_FALSE(parseMemoryEnforcement("rss").has_value());
}

TEST(NodeManagerConfigTest, DefaultWorkDirUsesThePortOrAFreshDirectory) {
  EXPECT_NE(defaultWorkDir(8042).find("/tide-nm-8042"), std::string::npos);
  const std::string first = defaultWorkDir(0);
  const std::string second = defaultWorkDir(0);
  EXPECT_TRUE(std::filesystem::is_directory(first));
  EXPECT_NE(first, second);
  std::filesystem::remove_all(first);
  std::filesystem::remove_all(second);
}

}  // namespace
}  // namespace tide::nm
