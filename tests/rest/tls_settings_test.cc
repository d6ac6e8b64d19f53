// tls.certFile, tls.keyFile and tls.caFile as every tide process reads them: both halves of a
// server's identity or neither, readable PEM files, errors that name the key and the path (and
// never a key's content), the node manager's TIDE_TLS_* variables under explicit keys.

#include "rest/tls_settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "common/config.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace tide::rest {
namespace {

using testing::AllOf;
using testing::HasSubstr;
using testing::Not;
using testing_support::expectedMessageOf;

const char kCertificate[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const char kKey[] = "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYBYTES\n-----END PRIVATE KEY-----\n";

class TlsSettingsTest : public testing::Test {
 protected:
  Properties props(std::map<std::string, std::string> values) {
    Properties properties;
    for (const auto& [key, value] : values) properties.set(key, value);
    return properties;
  }
  testing_support::TempDir dir_;
  const std::string cert_ = dir_.writeFile("node.pem", kCertificate);
  const std::string key_ = dir_.writeFile("node.key", kKey);
  const std::string ca_ = dir_.writeFile("ca.pem", kCertificate);
};

TEST_F(TlsSettingsTest, TheKeysAreInTheTableWithoutDefaults) {
  for (const char* name : {"tls.certFile", "tls.keyFile", "tls.caFile"}) {
    const KeyInfo* info = findKey(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->defaultValue, "") << name;
    EXPECT_NE(findKey(std::string("spark.") + name), nullptr) << "the spark. alias of " << name;
  }
}

TEST_F(TlsSettingsTest, NothingSetIsPlainHttp) {
  const TlsSettings tls = TlsSettings::fromProperties(Properties{});
  EXPECT_FALSE(tls.enabled());
  EXPECT_EQ(tls.urlOf("127.0.0.1:8042"), "http://127.0.0.1:8042");
  EXPECT_TRUE(tls.containerEnvironment().empty());
  EXPECT_TRUE(tls.conf().empty());
}

TEST_F(TlsSettingsTest, CertificateAndKeyServeHttps) {
  const TlsSettings tls = TlsSettings::fromProperties(
      props({{"tls.certFile", cert_}, {"tls.keyFile", key_}, {"tls.caFile", ca_}}));
  EXPECT_TRUE(tls.enabled());
  EXPECT_EQ(tls.urlOf("127.0.0.1:8042"), "https://127.0.0.1:8042");
  HttpServerOptions server;
  tls.applyTo(server);
  EXPECT_EQ(server.tlsCertFile, cert_);
  EXPECT_EQ(server.tlsKeyFile, key_);
  HttpClientOptions client;
  tls.applyTo(client);
  EXPECT_EQ(client.caFile, ca_);
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(tls.containerEnvironment(), (Pairs{{"TIDE_TLS_CERT_FILE", cert_},
                                               {"TIDE_TLS_KEY_FILE", key_},
                                               {"TIDE_TLS_CA_FILE", ca_}}));
  EXPECT_EQ(tls.conf(),
            (Pairs{{"tls.certFile", cert_}, {"tls.keyFile", key_}, {"tls.caFile", ca_}}));
}

TEST_F(TlsSettingsTest, ACaAloneMakesAClientThatVerifies) {
  const TlsSettings tls = TlsSettings::fromProperties(props({{"tls.caFile", ca_}}));
  EXPECT_FALSE(tls.enabled()) << "no certificate: it serves plain HTTP";
  EXPECT_EQ(tls.caFile, ca_);
}

TEST_F(TlsSettingsTest, ACertificateWithoutAKeyNamesBothKeys) {
  const std::string message = expectedMessageOf<ConfigError>([&] {
    TlsSettings::fromProperties(props({{"tls.certFile", cert_}}));
  });
  EXPECT_THAT(message, HasSubstr("tls.certFile=" + cert_));
  EXPECT_THAT(message, HasSubstr("tls.keyFile is not set"));
  const std::string reverse = expectedMessageOf<ConfigError>([&] {
    TlsSettings::fromProperties(props({{"tls.keyFile", key_}}));
  });
  EXPECT_THAT(reverse, HasSubstr("tls.keyFile=" + key_));
  EXPECT_THAT(reverse, HasSubstr("tls.certFile is not set"));
}

TEST_F(TlsSettingsTest, AnUnreadableFileIsNamed) {
  const std::string missing = (dir_.path() / "absent.pem").string();
  const std::string message = expectedMessageOf<ConfigError>([&] {
    TlsSettings::fromProperties(props({{"tls.certFile", cert_}, {"tls.keyFile", missing}}));
  });
  EXPECT_THAT(message, HasSubstr("tls.keyFile"));
  EXPECT_THAT(message, HasSubstr("cannot read " + missing));
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] {
                TlsSettings::fromProperties(props({{"tls.caFile", missing}}));
              }),
              HasSubstr("tls.caFile=" + missing));
}

TEST_F(TlsSettingsTest, AFileOfTheWrongKindIsNamedWithoutItsContent) {
  // The key where the certificate belongs, and the other way round: neither is shown.
  const std::string swapped = expectedMessageOf<ConfigError>([&] {
    TlsSettings::fromProperties(props({{"tls.certFile", key_}, {"tls.keyFile", cert_}}));
  });
  EXPECT_THAT(swapped, HasSubstr(key_ + " is not a PEM certificate"));
  EXPECT_THAT(swapped, Not(HasSubstr("TOPSECRETKEYBYTES")));
  const std::string notKey = expectedMessageOf<ConfigError>([&] {
    TlsSettings::fromProperties(props({{"tls.certFile", cert_}, {"tls.keyFile", ca_}}));
  });
  EXPECT_THAT(notKey, HasSubstr(ca_ + " is not a PEM private key"));
  EXPECT_THAT(expectedMessageOf<ConfigError>([&] {
                TlsSettings::fromProperties(props({{"tls.caFile", key_}}));
              }),
              AllOf(HasSubstr("tls.caFile"), HasSubstr("not a PEM CA certificate"),
                    Not(HasSubstr("TOPSECRETKEYBYTES"))));
}

TEST_F(TlsSettingsTest, RelativePathsBecomeAbsolute) {
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir_.path());
  TlsSettings tls;
  try {
    tls = TlsSettings::fromProperties(
        props({{"tls.certFile", "node.pem"}, {"tls.keyFile", "./node.key"}}));
  } catch (...) {
    std::filesystem::current_path(before);
    throw;
  }
  std::filesystem::current_path(before);
  EXPECT_EQ(tls.certFile, cert_);
  EXPECT_EQ(tls.keyFile, key_);
}

TEST_F(TlsSettingsTest, TheNodeManagersVariablesFillWhatIsNotGiven) {
  const std::string otherCa = dir_.writeFile("other-ca.pem", kCertificate);
  const std::map<std::string, std::string> variables = {
      {"TIDE_TLS_CERT_FILE", cert_}, {"TIDE_TLS_KEY_FILE", key_}, {"TIDE_TLS_CA_FILE", ca_}};
  const TlsSettings::EnvironmentLookup environment =
      [&](const std::string& name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
  const TlsSettings fromNode = TlsSettings::fromProperties(Properties{}, environment);
  EXPECT_EQ(fromNode.certFile, cert_);
  EXPECT_EQ(fromNode.keyFile, key_);
  EXPECT_EQ(fromNode.caFile, ca_);
  // An explicit key wins over the node's variable.
  const TlsSettings explicitCa =
      TlsSettings::fromProperties(props({{"tls.caFile", otherCa}}), environment);
  EXPECT_EQ(explicitCa.caFile, otherCa);
  EXPECT_EQ(explicitCa.certFile, cert_);
  // A bad variable is named as the node manager's.
  const std::map<std::string, std::string> halfVariables = {{"TIDE_TLS_CERT_FILE", cert_}};
  const std::string message = expectedMessageOf<ConfigError>([&] {
    TlsSettings::fromProperties(Properties{}, [&](const std::string& name) {
      auto it = halfVariables.find(name);
      return it == halfVariables.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
  });
  EXPECT_THAT(message, HasSubstr("TIDE_TLS_CERT_FILE, set by the node manager"));
  EXPECT_THAT(message, HasSubstr("tls.keyFile is not set"));
}

}  // namespace
}  // namespace tide::rest
