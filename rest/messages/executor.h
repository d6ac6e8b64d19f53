#pragma once

// The wire schema between tide-am and tide-executor. Batched for throughput: one sync request
// carries every status update since the last one, and its answer carries every task launch
// (and kill) the AM has for that executor, so one round trip can finish and start many tasks.
//
//   executor -> am  POST /api/v1/executors/register        ExecutorRegistration ->
//   ExecutorRegistered executor -> am  POST /api/v1/executors/{id}/sync       ExecutorSync ->
//   ExecutorSyncReply
// The AM may hold a sync that brings nothing (no updates) for up to `maxWaitMs` until it has
// work for the executor (a long poll); a sync is also the executor's heartbeat. Every request
// carries `Authorization: Bearer <application secret>` (TIDE_APP_SECRET in the container's
// environment); others get 401. An executor the AM does not know (any more) gets 404 and exits.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <rapidjson/document.h>

namespace tide::rest {

struct ExecutorRegistration {
  std::string executorId;   // assigned by the AM at launch (TIDE_EXECUTOR_ID): e1, e2, ...
  std::string containerId;  // TIDE_CONTAINER_ID
  std::string host;
  int port = 0;  // where the executor serves its blocks (0: none yet)
  int cores = 1;
  int64_t pid = 0;
};

struct ExecutorRegistered {
  int64_t heartbeatIntervalMs = 1000;  // sync at least this often, even with nothing to say
  int taskSlots = 1;                   // executor.cores / task.cpus
};

// What a task is. "command": run `argv` as a process; "noop" and "sleep": built-in kinds that
// run inside the executor without a process, for measuring the scheduler itself.
struct TaskLaunch {
  int64_t taskId = 0;  // unique within the application
  std::string jobId;
  std::string stageId;
  int64_t index = 0;                       // the task's index within its stage
  int attempt = 0;                         // 0 for the first attempt
  std::string kind;                        // "command" | "noop" | "sleep"
  std::vector<std::string> argv;           // {task}, {stage}, {attempt} already substituted
  std::map<std::string, std::string> env;  // besides TIDE_TASK_INDEX/STAGE_ID/ATTEMPT
  std::string cwd;                         // empty: the executor's work dir
  int64_t timeoutMs = 0;                   // 0: none; kills the process group
  int64_t sleepMs = 0;                     // for "sleep"
  int cpus = 1;
};

// The end of a task. state: "FINISHED", "FAILED" or "KILLED".
struct TaskStatusUpdate {
  int64_t taskId = 0;
  std::string state;
  int exitCode = 0;        // the process's exit code, 128 + signal, or -1 when it never ran
  std::string reason;      // e.g. "exited with code 1", "timed out after 5s", "spawn failed: ..."
  std::string stderrTail;  // the last few KiB of the task's stderr
  int64_t durationMs = 0;
};

struct ExecutorSync {
  std::vector<TaskStatusUpdate> updates;
  std::vector<int64_t> running;  // tasks still running here, so the AM can spot lost ones
  int freeSlots = 0;
  int64_t maxWaitMs = 0;  // how long the AM may hold this request when it has nothing to send
};

struct ExecutorSyncReply {
  std::vector<TaskLaunch> launches;
  std::vector<int64_t> kills;
  bool shutdown = false;  // the executor is released: finish up and exit
};

std::string toJson(const ExecutorRegistration& value);
std::string toJson(const ExecutorRegistered& value);
std::string toJson(const TaskLaunch& value);
std::string toJson(const TaskStatusUpdate& value);
std::string toJson(const ExecutorSync& value);
std::string toJson(const ExecutorSyncReply& value);

// Decoders throw JsonFieldError naming the bad field.
ExecutorRegistration executorRegistrationFromJson(const rapidjson::Value& json);
ExecutorRegistered executorRegisteredFromJson(const rapidjson::Value& json);
TaskLaunch taskLaunchFromJson(const rapidjson::Value& json, const std::string& path = "");
TaskStatusUpdate taskStatusUpdateFromJson(const rapidjson::Value& json,
                                          const std::string& path = "");
ExecutorSync executorSyncFromJson(const rapidjson::Value& json);
ExecutorSyncReply executorSyncReplyFromJson(const rapidjson::Value& json);

}  // namespace tide::rest
