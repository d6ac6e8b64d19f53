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
  // The node manager's node this executor runs on (TIDE_NODE_ID): the "host" of locality, so
  // that two node managers on one machine are still two places.
  std::string node;
  int cores = 1;
  int64_t pid = 0;
  // Registering again with a new attempt of the AM (its earlier attempt failed): the tasks it
  // is still running, or has finished and not yet reported, which the new attempt adopts.
  bool resumed = false;
  std::vector<int64_t> running;
  // With `resumed`: the blocks it holds ("<jobId>/<stageId>/<index>/part-<n>"). The new
  // attempt keeps the outputs it journaled on this executor only where they are all there,
  // and makes the others again. `blocksReported` false: the field was absent (nothing known).
  bool blocksReported = false;
  std::vector<std::string> blocks;
};

struct ExecutorRegistered {
  int64_t heartbeatIntervalMs = 1000;  // sync at least this often, even with nothing to say
  int taskSlots = 1;                   // executor.cores / task.cpus
  // How long a queued launch (TaskLaunch::queued) may wait for a free slot before the executor
  // hands it back unstarted (ExecutorSync::returned); 0: it waits as long as it takes.
  int64_t queuedTaskWaitMs = 0;
};

// One block a task reads before it starts: partition `index of the reading task` of one upstream
// task's output. The executor puts it at $TIDE_INPUT_DIR/<stageId>/part-<mapIndex>.
struct BlockInput {
  std::string stageId;     // the upstream stage as the reading stage names it in depends_on
  int64_t mapIndex = 0;    // the upstream task that wrote it
  std::string executorId;  // where it is
  // That executor's block server, "http://addr:port" ("": unreachable), or "file://<dir>" for
  // a block in the fallback storage (executorId "fallback"): the file <dir>/<path>.
  std::string url;
  std::string path;  // on that executor: "<jobId>/<stageId>/<mapIndex>/part-<partition>"
  int64_t size = 0;
};

// One file a finished task left in $TIDE_OUTPUT_DIR, now a block on its executor.
struct BlockOutput {
  int64_t partition = 0;  // part-<partition>
  int64_t size = 0;
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
  std::vector<BlockInput> inputs;  // fetched (or hard-linked when local) before it starts
  // Non-empty for a job's final stage with a local `output`: the executor copies the task's
  // part files there as part-<index> (one file) or part-<index>-<partition>.
  std::string collectDir;
  bool speculative = false;  // a second copy of a slow task
  // Handed out ahead of a free slot (scheduler.queuedTasksPerExecutor): the executor starts it
  // as soon as one of its slots is free, or hands it back unstarted (ExecutorSync::returned)
  // when asked to (ExecutorSyncReply::takeBack) or once it has waited queuedTaskWaitMs.
  bool queued = false;
};

// How a task attempt ended. On the wire (and only there): "FINISHED", "FAILED", "KILLED",
// "FETCH_FAILED" (an input block could not be had after retries: `failedInput` names it; never
// counted as the task's fault).
enum class TaskState { kFinished, kFailed, kKilled, kFetchFailed };
const char* taskStateName(TaskState state);  // its wire name, for the codec and logs

// The end of a task.
struct TaskStatusUpdate {
  int64_t taskId = 0;
  TaskState state = TaskState::kFinished;
  int exitCode = 0;        // the process's exit code, 128 + signal, or -1 when it never ran
  std::string reason;      // e.g. "exited with code 1", "timed out after 5s", "spawn failed: ..."
  std::string stderrTail;  // the last few KiB of the task's stderr
  int64_t durationMs = 0;
  std::vector<BlockOutput> blocks;  // FINISHED: the task's output blocks, kept on the executor
  BlockInput failedInput;           // FETCH_FAILED
};

// Graceful decommissioning (decommission.enabled with storage.decommission.enabled): the AM asks
// a peer to take one task output off an executor that is leaving. The peer fetches `blocks`
// from `url` (the leaving executor's block server, as a task fetches its inputs), keeps them
// under the same block paths, and reports how it went in its next sync.
//
// With `fallbackDir` the migration is the decommissioning executor's own: no peer takes the
// output, so it copies its blocks to <fallbackDir>/<block path> (the fallback storage,
// storage.decommission.fallbackStorage.path/<application id>), from where readers fetch them
// (BlockInput::url "file://<fallbackDir>").
struct BlockMigration {
  int64_t id = 0;                   // the AM's, echoed in the result
  std::string fromExecutor;         // the decommissioning executor
  std::string url;                  // its block server
  std::vector<std::string> blocks;  // "<jobId>/<stageId>/<index>/part-<n>", one task's output
  std::string fallbackDir;          // absolute; "" for a peer's migration
};

struct BlockMigrationResult {
  int64_t id = 0;
  bool ok = false;
  std::string reason;  // why not, when it failed
};

struct ExecutorSync {
  std::vector<TaskStatusUpdate> updates;
  std::vector<BlockMigrationResult> migrated;  // migrations done (or failed) since the last one
  std::vector<int64_t> running;  // tasks still running here, so the AM can spot lost ones
  // Queued launches handed back unstarted: they never ran here and never will.
  std::vector<int64_t> returned;
  int freeSlots = 0;
  int64_t maxWaitMs = 0;  // how long the AM may hold this request when it has nothing to send
  // Asked to leave gracefully (SIGPWR, as Spark's executors take it): with decommission.enabled
  // the AM decommissions it, else it is ignored.
  bool decommissioning = false;
};

struct ExecutorSyncReply {
  std::vector<TaskLaunch> launches;
  std::vector<int64_t> kills;
  // Queued launches the AM wants back (another executor is idle): each one not yet started is
  // listed in the next sync's `returned`; one already started just runs.
  std::vector<int64_t> takeBack;
  bool shutdown = false;  // the executor is released: finish up and exit
  // Block prefixes "<jobId>/<stageId>" whose files the executor deletes (shuffle data of an
  // ended job, unpersisted stages).
  std::vector<std::string> dropBlocks;
  // Outputs of a decommissioning executor this executor is to take (BlockMigration).
  std::vector<BlockMigration> migrations;
};

// The output commit protocol (Spark's OutputCommitCoordinator): a command task that exited 0
// asks before its output becomes blocks and files in the job's output,
//   executor -> am  POST /api/v1/executors/{id}/commit      CommitRequest -> CommitDecision
// and the AM authorises one attempt per task: the first running attempt to ask. A denied
// attempt discards its output and is reported KILLED ("commit denied: ..."), not a failure.
struct CommitRequest {
  int64_t taskId = 0;
};

struct CommitDecision {
  bool allowed = false;
  std::string reason;  // why not, when denied
};

std::string toJson(const CommitRequest& value);
std::string toJson(const CommitDecision& value);
CommitRequest commitRequestFromJson(const rapidjson::Value& json);
CommitDecision commitDecisionFromJson(const rapidjson::Value& json);

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
