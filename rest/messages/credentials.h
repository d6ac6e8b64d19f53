#pragma once

// The credentials tide's components present to each other, and how they are derived
// (docs/security.md has the threat model):
//
// - The cluster secret: the content of tide-rm's rm.secretFile (mode 0600). It is also the
//   cluster's admin token: whoever can read the file may send `Authorization: Bearer <it>`.
// - A client token, HMAC-SHA256(secret, "tide-client"): what `tide submit`, `tide status` and
//   REST callers without the secret file present to tide-rm's client API.
// - The node credential, HMAC-SHA256(secret, "tide-node"): what tide-nm presents to register.
//   A registered node then heartbeats with the node secret the RM gave it.
// - An application's control token, HMAC-SHA256(application secret, "tide-control"): what
//   the AM's state-changing endpoints (and, with ui.auth=all, all of them) require.
//
// Every token is hex; comparisons are constant-time (secretsEqual).

#include <optional>
#include <string>

namespace tide {
class Properties;
}

namespace tide::rest {

// Hex HMAC-SHA256 of `message` under `key`.
std::string hmacSha256Hex(const std::string& key, const std::string& message);

std::string clientTokenOf(const std::string& clusterSecret);
std::string nodeCredentialOf(const std::string& clusterSecret);
std::string controlTokenOf(const std::string& applicationSecret);
// HMAC-SHA256(client token, "tide-logs"): what tide-rm gives each node manager at registration
// to check that a bearer token is the cluster's client token (docs/security.md).
std::string logReaderDigestOf(const std::string& clientToken);

// What a bearer token presented to tide-rm allows.
enum class RmCredential { kNone, kClient, kNode, kAdmin };
// Which credential `token` is (kNone for anything else), compared in constant time.
RmCredential classifyRmToken(const std::string& clusterSecret, const std::string& token);

// The token of "Authorization: Bearer <token>" in a header value, or "" when it is not one.
std::string bearerTokenOf(const std::string& authorizationHeader);

// The path tide-rm and the tide commands use when rm.secretFile is not set:
// $HOME/.tide/rm.secret (or ./.tide/rm.secret without a HOME).
std::string defaultSecretFilePath();

// rm.secretFile, or defaultSecretFilePath() when it is not set: where tide-rm keeps the
// cluster secret and where tide-nm and the tide commands look for it.
std::string clusterSecretFile(const Properties& properties);

// The token a tide command sends to tide-rm: the content of rm.tokenFile when set (an error
// when unreadable), else $TIDE_RM_TOKEN when set, else the cluster secret when its file
// (clusterSecretFile) is readable; nullopt when there is none.
std::optional<std::string> rmClientToken(const Properties& properties);

// The credential tide-nm registers with: rm.tokenFile's content when set (a node credential
// handed out on its own), else the node credential derived from the readable secret file;
// nullopt when there is none.
std::optional<std::string> rmNodeCredential(const Properties& properties);

// Reads a secret or token file: its content without surrounding whitespace. Throws
// std::runtime_error naming the file when it cannot be read or is empty.
std::string readSecretFile(const std::string& path);

// Reads the cluster secret, or creates the file (and its directory) with a fresh secret,
// mode 0600, when it does not exist; `created` says which. Refuses (throws) a file that
// others than its owner may read, and one shorter than 32 characters.
std::string loadOrCreateClusterSecret(const std::string& path, bool* created);

}  // namespace tide::rest
