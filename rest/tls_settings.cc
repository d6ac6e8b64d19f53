#include "rest/tls_settings.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/config.h"

namespace tide::rest {
namespace {

// One tls.* value and where it came from, for messages.
struct Setting {
  std::string value;
  std::string described;  // "tls.certFile=/etc/tide/node.pem (--conf)"
};

std::string absolute(const std::string& path) {
  std::error_code error;
  std::filesystem::path full = std::filesystem::absolute(path, error);
  return error ? path : full.lexically_normal().string();
}

Setting settingOf(const Properties& properties, const char* key, const char* variable,
                  const TlsSettings::EnvironmentLookup& environment) {
  if (properties.has(key)) return {absolute(properties.getString(key)), properties.describe(key)};
  if (environment) {
    if (std::optional<std::string> value = environment(variable); value && !value->empty()) {
      return {absolute(*value), std::string(key) + "=" + *value + " (from " + variable +
                                    ", set by the node manager)"};
    }
  }
  return {};
}

// Reads at most the first 64 KiB: enough to see the PEM armour of any certificate chain or key
// (what is read is never shown; a key's content must not reach a message or a log).
std::string readHead(const Setting& setting) {
  std::ifstream in(setting.value, std::ios::binary);
  if (!in) {
    const int error = errno;
    throw ConfigError(setting.described + ": cannot read " + setting.value + ": " +
                      std::strerror(error));
  }
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

void requirePem(const Setting& setting, const std::string& armour, const std::string& what) {
  if (readHead(setting).find(armour) != std::string::npos) return;
  throw ConfigError(setting.described + ": " + setting.value + " is not " + what + " (no '" +
                    armour + "' in it)");
}

}  // namespace

void TlsSettings::applyTo(HttpServerOptions& options) const {
  options.tlsCertFile = certFile;
  options.tlsKeyFile = keyFile;
}

void TlsSettings::applyTo(HttpClientOptions& options) const {
  options.caFile = caFile;
}

TlsSettings TlsSettings::fromProperties(const Properties& properties,
                                        const EnvironmentLookup& environment) {
  const Setting cert = settingOf(properties, "tls.certFile", kTlsCertFileEnv, environment);
  const Setting key = settingOf(properties, "tls.keyFile", kTlsKeyFileEnv, environment);
  const Setting ca = settingOf(properties, "tls.caFile", kTlsCaFileEnv, environment);
  if (!cert.value.empty() && key.value.empty()) {
    throw ConfigError(cert.described +
                      " but tls.keyFile is not set: a server needs both its certificate "
                      "(tls.certFile) and its private key (tls.keyFile)");
  }
  if (cert.value.empty() && !key.value.empty()) {
    throw ConfigError(key.described +
                      " but tls.certFile is not set: a server needs both its certificate "
                      "(tls.certFile) and its private key (tls.keyFile)");
  }
  if (!cert.value.empty()) {
    requirePem(cert, "-----BEGIN CERTIFICATE-----", "a PEM certificate");
    requirePem(key, "PRIVATE KEY-----", "a PEM private key");
  }
  if (!ca.value.empty()) requirePem(ca, "-----BEGIN CERTIFICATE-----", "a PEM CA certificate");
  return TlsSettings{cert.value, key.value, ca.value};
}

TlsSettings::EnvironmentLookup TlsSettings::processEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::vector<std::pair<std::string, std::string>> TlsSettings::containerEnvironment() const {
  std::vector<std::pair<std::string, std::string>> variables;
  if (!certFile.empty()) variables.emplace_back(kTlsCertFileEnv, certFile);
  if (!keyFile.empty()) variables.emplace_back(kTlsKeyFileEnv, keyFile);
  if (!caFile.empty()) variables.emplace_back(kTlsCaFileEnv, caFile);
  return variables;
}

std::vector<std::pair<std::string, std::string>> TlsSettings::conf() const {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!certFile.empty()) pairs.emplace_back("tls.certFile", certFile);
  if (!keyFile.empty()) pairs.emplace_back("tls.keyFile", keyFile);
  if (!caFile.empty()) pairs.emplace_back("tls.caFile", caFile);
  return pairs;
}

}  // namespace tide::rest
