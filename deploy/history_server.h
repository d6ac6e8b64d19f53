#pragma once

// `tide history`'s server (Spark's History Server): the ended applications of a history.dir,
// replayed from their event logs (am/status/event_log_replay.h). For each, at
// /history/<application id>/, the AM's own page and its read API (api/v1/status, executors,
// jobs, jobs/<id>, allocation/decisions, allocation/history) as the AM served them at its end;
// at / a list of the applications and at /api/v1/applications its JSON. A log that cannot be
// read is listed with its error (file and line) and the others are shown as usual.
//
// The pages hold no data and need no credential; every /api/v1 read needs
// "Authorization: Bearer <token>" (docs/security.md: the cluster's client token). Nothing is
// written: other methods on the API get 405.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "am/status/event_log_replay.h"
#include "rest/http_server.h"
#include "rest/tls_settings.h"

namespace tide::deploy {

struct HistoryServerOptions {
  std::string dir;  // history.dir
  std::string host = "127.0.0.1";
  int port = 18080;  // 0: any free port
  std::string token;
  rest::TlsSettings tls;  // tls.*: HTTPS with a certificate, as every tide listener
};

class HistoryServer {
 public:
  explicit HistoryServer(HistoryServerOptions options);
  ~HistoryServer();
  // Returns the port.
  int start();
  void stop();

  // The documents, for the routes and for `tide status APP`.
  std::string applicationsJson();

 private:
  // The application's replay, read again when its file changed; throws rest::RestError 404 for
  // none, 500 naming the file and line for one that does not read.
  std::shared_ptr<const am::ReplayedApplication> application(const std::string& id);
  void registerRoutes();

  struct Cached {
    int64_t mtimeNs = -1;
    uintmax_t size = 0;
    std::shared_ptr<const am::ReplayedApplication> app;
    std::string error;
  };
  // Replays `path` unless the cache has it as it is now.
  Cached load(const std::string& path);

  HistoryServerOptions options_;
  std::mutex mu_;
  std::map<std::string, Cached> cache_;  // by path
  std::unique_ptr<rest::HttpServer> server_;
};

// Whether `id` may name an event log: letters, digits, '_', '-' and '.', not starting with
// '.', at most 128 characters (no '/': an id never leaves history.dir).
bool validApplicationId(const std::string& id);

}  // namespace tide::deploy
