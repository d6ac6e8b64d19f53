#include "executor/executor_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tide::executor {
namespace {

EnvironmentLookup fakeEnvironment(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

std::map<std::string, std::string> completeEnvironment() {
  return {{kAmAddressEnv, "http://127.0.0.1:9000/"},
          {kAppSecretEnv, "s3cret"},
          {kExecutorIdEnv, "e3"},
          {kContainerIdEnv, "c_7"}};
}

TEST(ExecutorSettingsTest, ReadsEnvironmentAndKeys) {
  Properties properties;
  properties.set("executor.cores", "8");
  properties.set("task.cpus", "2");
  properties.set("network.timeout", "2s");
  ExecutorSettings settings =
      readExecutorSettings(properties, fakeEnvironment(completeEnvironment()));
  EXPECT_EQ(settings.amAddress, "http://127.0.0.1:9000");
  EXPECT_EQ(settings.appSecret, "s3cret");
  EXPECT_EQ(settings.executorId, "e3");
  EXPECT_EQ(settings.containerId, "c_7");
  EXPECT_EQ(settings.taskSlots(), 4);
  EXPECT_EQ(settings.networkTimeout, 2000);
  EXPECT_EQ(settings.describe().find("s3cret"), std::string::npos);
}

TEST(ExecutorSettingsTest, DefaultsAreOneSlotAndTwoMinutes) {
  ExecutorSettings settings =
      readExecutorSettings(Properties(), fakeEnvironment(completeEnvironment()));
  EXPECT_EQ(settings.taskSlots(), 1);
  EXPECT_EQ(settings.networkTimeout, 120'000);
}

TEST(ExecutorSettingsTest, TheHostIsTheNodesOrElseTheHostName) {
  std::map<std::string, std::string> variables = completeEnvironment();
  EXPECT_EQ(readExecutorSettings(Properties(), fakeEnvironment(variables)).host, localHostName());
  variables[kNodeHostEnv] = "127.0.0.3";
  EXPECT_EQ(readExecutorSettings(Properties(), fakeEnvironment(variables)).host, "127.0.0.3");
}

TEST(ExecutorSettingsTest, AmOptionOverridesTheEnvironment) {
  std::map<std::string, std::string> variables = completeEnvironment();
  variables.erase(kAmAddressEnv);
  ExecutorSettings settings = readExecutorSettings(Properties(), fakeEnvironment(variables),
                                                   std::string("http://127.0.0.1:1234"));
  EXPECT_EQ(settings.amAddress, "http://127.0.0.1:1234");
}

TEST(ExecutorSettingsTest, EachMissingVariableIsNamed) {
  for (const char* name : {kAmAddressEnv, kAppSecretEnv, kExecutorIdEnv, kContainerIdEnv}) {
    std::map<std::string, std::string> variables = completeEnvironment();
    variables.erase(name);
    try {
      readExecutorSettings(Properties(), fakeEnvironment(variables));
      ADD_FAILURE() << "accepted an environment without " << name;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  }
}

TEST(ExecutorSettingsTest, AllMissingVariablesAreNamedAtOnce) {
  try {
    readExecutorSettings(Properties(), fakeEnvironment({}));
    FAIL() << "accepted an empty environment";
  } catch (const ConfigError& error) {
    for (const char* name : {kAmAddressEnv, kAppSecretEnv, kExecutorIdEnv, kContainerIdEnv}) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  }
}

TEST(ExecutorSettingsTest, RefusesBadValues) {
  Properties properties;
  properties.set("task.cpus", "2");
  EXPECT_THROW(readExecutorSettings(properties, fakeEnvironment(completeEnvironment())),
               ConfigError);
  std::map<std::string, std::string> variables = completeEnvironment();
  variables[kAmAddressEnv] = "127.0.0.1:9000";
  EXPECT_THROW(readExecutorSettings(Properties(), fakeEnvironment(variables)), ConfigError);
}

}  // namespace
}  // namespace tide::executor
