#include "rest/messages/credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/config.h"
#include "rest/messages/node.h"

namespace tide::rest {
namespace {

constexpr size_t kMinimumSecretLength = 32;

std::string trimmed(const std::string& text) {
  const char* space = " \t\r\n";
  const size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

}  // namespace

std::string hmacSha256Hex(const std::string& key, const std::string& message) {
  // containerToken is exactly this: the hex HMAC-SHA256 of its second argument.
  return containerToken(key, message);
}

std::string clientTokenOf(const std::string& clusterSecret) {
  return hmacSha256Hex(clusterSecret, "tide-client");
}

std::string nodeCredentialOf(const std::string& clusterSecret) {
  return hmacSha256Hex(clusterSecret, "tide-node");
}

std::string controlTokenOf(const std::string& applicationSecret) {
  return hmacSha256Hex(applicationSecret, "tide-control");
}

std::string logReaderDigestOf(const std::string& clientToken) {
  return hmacSha256Hex(clientToken, "tide-logs");
}

RmCredential classifyRmToken(const std::string& clusterSecret, const std::string& token) {
  if (token.empty() || clusterSecret.empty()) return RmCredential::kNone;
  // Every comparison runs, so the time taken does not say which one matched.
  const bool admin = secretsEqual(token, clusterSecret);
  const bool client = secretsEqual(token, clientTokenOf(clusterSecret));
  const bool node = secretsEqual(token, nodeCredentialOf(clusterSecret));
  if (admin) return RmCredential::kAdmin;
  if (client) return RmCredential::kClient;
  if (node) return RmCredential::kNode;
  return RmCredential::kNone;
}

std::string bearerTokenOf(const std::string& value) {
  constexpr size_t kSchemeLength = 7;  // "Bearer "
  if (value.size() <= kSchemeLength || strncasecmp(value.c_str(), "Bearer ", kSchemeLength) != 0) {
    return "";
  }
  return trimmed(value.substr(kSchemeLength));
}

std::string defaultSecretFilePath() {
  const char* home = std::getenv("HOME");
  const std::string base = home != nullptr && *home != '\0' ? home : ".";
  return base + "/.tide/rm.secret";
}

std::string clusterSecretFile(const Properties& properties) {
  const std::string path =
      properties.has("rm.secretFile") ? properties.getString("rm.secretFile") : std::string();
  return path.empty() ? defaultSecretFilePath() : path;
}

namespace {

std::optional<std::string> tokenFileOf(const Properties& properties) {
  if (!properties.has("rm.tokenFile") || properties.getString("rm.tokenFile").empty()) {
    return std::nullopt;
  }
  try {
    return readSecretFile(properties.getString("rm.tokenFile"));
  } catch (const std::runtime_error& error) {
    throw ConfigError(properties.describe("rm.tokenFile") + ": " + error.what());
  }
}

std::optional<std::string> readableSecret(const Properties& properties) {
  const std::string path = clusterSecretFile(properties);
  if (::access(path.c_str(), R_OK) != 0) {
    if (properties.has("rm.secretFile")) {
      throw ConfigError(properties.describe("rm.secretFile") + ": cannot read " + path + ": " +
                        std::strerror(errno));
    }
    return std::nullopt;
  }
  try {
    return readSecretFile(path);
  } catch (const std::runtime_error& error) {
    throw ConfigError(error.what());
  }
}

}  // namespace

std::optional<std::string> rmClientToken(const Properties& properties) {
  if (auto token = tokenFileOf(properties)) return token;
  if (const char* token = std::getenv("TIDE_RM_TOKEN"); token != nullptr && *token != '\0') {
    return trimmed(token);
  }
  return readableSecret(properties);
}

std::optional<std::string> rmNodeCredential(const Properties& properties) {
  if (auto token = tokenFileOf(properties)) return token;
  if (auto secret = readableSecret(properties)) return nodeCredentialOf(*secret);
  return std::nullopt;
}

std::string readSecretFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  }
  std::stringstream content;
  content << in.rdbuf();
  std::string secret = trimmed(content.str());
  if (secret.empty()) throw std::runtime_error(path + " is empty: expected a secret or token");
  return secret;
}

std::string loadOrCreateClusterSecret(const std::string& path, bool* created) {
  if (created != nullptr) *created = false;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno != ENOENT) {
      throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    }
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
      if (ec) throw std::runtime_error("cannot create " + parent.string() + ": " + ec.message());
    }
    const std::string secret = newRandomSecret();
    // O_EXCL: of two processes creating it at once, one writes and the other reads it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      const std::string line = secret + "\n";
      const bool written =
          ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
      ::close(fd);
      if (!written) {
        ::unlink(path.c_str());
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
      }
      if (created != nullptr) *created = true;
      return secret;
    }
    if (errno != EEXIST) {
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    }
    if (::stat(path.c_str(), &info) != 0) {
      throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    }
  }
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw std::runtime_error(path + " may be read by others (mode " +
                             [&] {
                               std::ostringstream mode;
                               mode << std::oct << (info.st_mode & 0777);
                               return mode.str();
                             }() +
                             "): the cluster secret must be mode 0600 (chmod 600 " + path + ")");
  }
  std::string secret = readSecretFile(path);
  if (secret.size() < kMinimumSecretLength) {
    throw std::runtime_error(path + " holds a secret of " + std::to_string(secret.size()) +
                             " characters: at least " + std::to_string(kMinimumSecretLength) +
                             " are needed");
  }
  return secret;
}

}  // namespace tide::rest
