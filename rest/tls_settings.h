#pragma once

// TLS for every tide server and client (tls.certFile, tls.keyFile, tls.caFile).
//
// TLS is cluster-wide, as YARN's https-only policy: a process given a certificate serves HTTPS
// on every port it opens, and reaches the other tide servers it finds by host:port (node
// managers, executors' block servers) with https://. Every client verifies its peer (and the
// peer's host name) against tls.caFile, or the system's CAs without it. URLs a process is
// handed (nm.rm, --master, TIDE_RM_ADDRESS, TIDE_AM_ADDRESS, tracking URLs) carry their scheme.
//
// Containers learn their node's TLS files from the node manager, which sets the variables below
// in every container's environment (paths only: never a key's content); an explicit tls.* key
// of the process wins over them.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rest/http_client.h"
#include "rest/http_server.h"

namespace tide {
class Properties;
}

namespace tide::rest {

inline constexpr char kTlsCertFileEnv[] = "TIDE_TLS_CERT_FILE";
inline constexpr char kTlsKeyFileEnv[] = "TIDE_TLS_KEY_FILE";
inline constexpr char kTlsCaFileEnv[] = "TIDE_TLS_CA_FILE";

struct TlsSettings {
  std::string certFile;  // PEM certificate (chain) this process serves with; empty = plain HTTP
  std::string keyFile;   // PEM private key of certFile (unencrypted)
  std::string caFile;    // PEM CA certificate(s) clients verify peers against; empty = system's

  // Whether this process serves HTTPS (and so calls the tide servers it addresses by host:port
  // over HTTPS too).
  bool enabled() const { return !certFile.empty(); }
  // "https" or "http".
  std::string scheme() const { return enabled() ? "https" : "http"; }
  // "https://host:port" (or http://) for a "host:port".
  std::string urlOf(const std::string& hostPort) const { return scheme() + "://" + hostPort; }

  // Sets the server's certificate and key.
  void applyTo(HttpServerOptions& options) const;
  // Sets the CA the client verifies peers against.
  void applyTo(HttpClientOptions& options) const;

  // The tls.* keys of `properties`, each not given there taken from `environment` (the
  // TIDE_TLS_* variables a node manager sets in its containers) when that is set. Throws
  // ConfigError when only one of certificate and key is set (naming both keys), or when a
  // file cannot be read or is not PEM of the expected kind (naming the key and the path).
  // Relative paths are made absolute (from the current directory): they are handed on to
  // processes that run elsewhere (containers).
  using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
  static TlsSettings fromProperties(const Properties& properties,
                                    const EnvironmentLookup& environment = nullptr);
  // The process environment's TIDE_TLS_* variables, for fromProperties.
  static EnvironmentLookup processEnvironment();

  // The TIDE_TLS_* variables for a container's environment (those that are set).
  std::vector<std::pair<std::string, std::string>> containerEnvironment() const;
  // The tls.* keys that are set, as --conf pairs for a child process.
  std::vector<std::pair<std::string, std::string>> conf() const;
};

}  // namespace tide::rest
