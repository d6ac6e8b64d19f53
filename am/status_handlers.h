#pragma once

// The ApplicationMaster's HTTP API over the narrow MasterControl interface (Kudu's
// MasterPathHandlers): executors' register and sync on the executor port; on the status port
// what a person (or `tide run`, `tide status`, Prometheus, the status page) reads: status,
// executors, jobs, the allocation history and decisions, /metrics and the page itself, plus
// POST of jobs, DELETE of cached stages and PUT of the executor bounds. Handlers parse,
// call the core, and render JSON; outcomes become HTTP codes in one place
// (rest/http_status.h). They hold no lock of the AM's while they render.

#include <string>

#include "am/control_thread.h"
#include "am/master_control.h"
#include "rest/http_server.h"

namespace tide::am {

class StatusHandlers {
 public:
  // `master` must outlive the handlers, and the handlers the servers they are registered on.
  explicit StatusHandlers(MasterControl& master) : master_(master) {}
  StatusHandlers(const StatusHandlers&) = delete;
  StatusHandlers& operator=(const StatusHandlers&) = delete;

  void registerExecutorRoutes(rest::HttpServer& server);
  void registerStatusRoutes(rest::HttpServer& server);

  // The documents, for the routes and for tests.
  std::string statusJson();
  // At most `removedLimit` removed executors (the AM keeps the newest 500).
  std::string executorsJson(size_t removedLimit);
  std::string decisionsJson(size_t limit);
  std::string historyJson(TimeMs sinceMs);

 private:
  // The status port's routes by what they serve: logs, jobs and cached stages, allocation.
  void registerLogRoutes(rest::HttpServer& server);
  void registerJobRoutes(rest::HttpServer& server);
  void registerAllocationRoutes(rest::HttpServer& server);
  // `handler` run on the control thread (control_thread.h).
  rest::RouteHandler onControlThread(rest::RouteHandler handler);
  // The executor that ran a failed attempt the jobs keep; a 404 RestError for any other.
  std::string failedAttemptExecutor(const std::string& stage, int64_t index, int attempt);
  std::string jobsJson(const std::optional<std::string>& jobId);
  std::string cacheJson();
  void handleBoundsUpdate(const httplib::Request& req, httplib::Response& res);
  // Answers with the file `path` of the executor's kept logs (?tail=BYTES: its end).
  void replyLog(const httplib::Request& req, httplib::Response& res, const std::string& executorId,
                const std::string& path);

  MasterControl& master_;
  // Runs the status port's requests that take the AM's lock (its own threads serve at idle
  // priority).
  ControlThread control_;
};

// GET /api/v1/jobs's document for these jobs (their stages and failure samples); times in it
// are AM uptime, counted from `startedAt`.
std::string jobsDocument(const std::vector<JobSummary>& jobs, TimeMs startedAt);

// The run's summary for `tide run --report`.
std::string runReportJson(const RunReport& report);

}  // namespace tide::am
