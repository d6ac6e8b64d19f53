#pragma once

// Calls to slurmrestd: where it is (slurm.url: http://HOST:PORT or unix:/path/to/socket), who
// we are (X-SLURM-USER-NAME / X-SLURM-USER-TOKEN), and its answers turned into SlurmJob and
// errors that say whether trying again can help. Used by the AM's Slurm backend and by
// `tide submit --master slurm+...`.

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "am/slurm/api.h"
#include "am/slurm/json.h"
#include "rest/http_client.h"

namespace tide {
class Properties;
}

namespace tide::am {

// slurmrestd could not do it now (unreachable, HTTP 5xx, slurmctld busy, token refused):
// worth trying again later.
class SlurmUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Slurm refused the request itself (bad partition, account, QOS, an impossible size): trying
// again cannot help. what() is Slurm's own message.
class SlurmRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SlurmConnection {
  std::string url = "http://127.0.0.1:6820";  // or unix:/path/to/slurmrestd.socket
  SlurmApi api;
  std::string user;       // X-SLURM-USER-NAME; "" = the user this process runs as
  std::string tokenFile;  // the JWT is read from here; "" = $SLURM_JWT

  // slurm.url, slurm.apiVersion, slurm.user, slurm.tokenFile. Throws ConfigError for an
  // unsupported API version.
  static SlurmConnection fromProperties(const Properties& props);
};

// The JWT for slurmrestd, from $SLURM_JWT or a file. The file is read again whenever its
// modification time or size changes (checked before each call), so short-lived tokens can be
// rotated under a running AM. Accepts the file as `scontrol token` prints it (SLURM_JWT=...).
class SlurmToken {
 public:
  explicit SlurmToken(std::string tokenFile);
  // The token, or nullopt when there is none (rest_auth/local over a unix socket needs none).
  // Throws SlurmUnavailable when the file cannot be read.
  std::optional<std::string> current();
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::optional<std::string> token_;
  bool loaded_ = false;
  struct timespec mtime_ {};
  off_t size_ = -1;
  ino_t inode_ = 0;
};

// The user name the process runs as (for X-SLURM-USER-NAME).
std::string currentUserName();

class SlurmRestClient {
 public:
  // `log` receives retries and Slurm's warnings; tokens never reach it.
  explicit SlurmRestClient(SlurmConnection connection, rest::LogFunction log = {});

  const SlurmConnection& connection() const { return connection_; }
  // A description for messages: "slurmrestd at http://127.0.0.1:6820 (v0.0.38)".
  std::string describe() const;

  // Checks that slurmctld answers and the token is accepted. Throws SlurmUnavailable.
  void ping();
  // Submits a batch job; returns its id. Throws SlurmRejected or SlurmUnavailable.
  int64_t submit(const SlurmJobSpec& spec);
  // Every job slurmctld knows (one call). Throws SlurmUnavailable.
  std::vector<SlurmJob> jobs();
  // One job; nullopt when Slurm does not know it (any more). Throws SlurmUnavailable.
  std::optional<SlurmJob> job(int64_t jobId);
  // Cancels a job. Returns false when Slurm no longer knows it or it has already ended (so
  // there is nothing left to cancel). Throws SlurmUnavailable.
  bool cancel(int64_t jobId);
  // Sets the job's comment (e.g. the AM's status URL). Throws SlurmUnavailable/SlurmRejected.
  void setComment(int64_t jobId, const std::string& comment);

 private:
  struct Reply {
    long status = 0;
    rapidjson::Document body;
    std::vector<SlurmError> errors;
  };
  Reply call(const std::string& method, const std::string& path, const std::string& body);
  [[noreturn]] void throwUnavailable(const std::string& what, const Reply& reply) const;

  SlurmConnection connection_;
  rest::LogFunction log_;
  std::mutex tokenMutex_;
  SlurmToken token_;
  rest::HttpClient http_;
};

}  // namespace tide::am
