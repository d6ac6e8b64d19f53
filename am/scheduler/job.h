#pragma once

// A job: a DAG of stages read from a JSON job file, checked completely before anything runs.
//
//   {"name": "thumbnails",
//    "stages": [
//      {"id": "resize", "tasks": 200, "command": ["sh", "-c", "convert in/{task}.png ..."]},
//      {"id": "index", "depends_on": ["resize"], "tasks": 1, "builtin": "noop"}]}
//
// Every error names the field a person has to fix ("stages[1].tasks: expected a positive
// integer"), so that a bad file is rejected with one readable line instead of a failed run.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace tide::am {

// A job file (or a job built in code) that cannot run. what() starts with the field path, or
// with the file path when the job came from a file ("jobs/t.json: stages[0].tasks: ...").
class JobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a stage's tasks run: a process (argv) or one of the executor's built-in kinds, which
// run without a process so the scheduler itself can be measured.
enum class TaskKind { kCommand, kNoop, kSleep };

// "command", "noop", "sleep": the `kind` of rest::TaskLaunch.
const char* taskKindName(TaskKind kind);

// The largest stage a job may have; tasks are materialised lazily and done tasks are kept in an
// IndexSet (a counter per 65,536 tasks, bitmaps only where partly done), so this bounds
// counters, not objects.
constexpr int64_t kMaxTasksPerStage = 1000000000;

// Data between stages: a task writes its output into $TIDE_OUTPUT_DIR as part-0, part-1, ...
// (one file per downstream partition). A task of a stage that depends on another finds, in
// $TIDE_INPUT_DIR/<that stage>/part-<m>, partition <its own index> of upstream task m's output
// (a shuffle: N map tasks writing R partitions feed R reduce tasks). A dependency "job-1/words"
// (a job id, '/', a stage id) reads a stage an earlier job of this session persisted.
// A stage's own executor shape (Spark's stage-level ResourceProfile): executors of these cores
// and memory run its tasks, and only its and other stages' of the same shape. What is not given
// is the application's (executor.cores, executor.memory).
struct ExecutorShape {
  std::optional<int> cores;
  std::optional<int64_t> memoryMb;
};

struct StageSpec {
  std::string id;                      // unique within the job; letters, digits, '-', '_', '.'
  std::vector<std::string> dependsOn;  // stages that must all succeed first (see above)
  int64_t numTasks = 1;
  TaskKind kind = TaskKind::kCommand;
  // kCommand: argv; {task}, {stage} and {attempt} are substituted at launch.
  std::vector<std::string> command;
  int64_t sleepMs = 0;  // kSleep
  std::map<std::string, std::string> env;
  std::string cwd;                        // empty: the executor's work dir
  std::optional<int> cpus;                // unset: task.cpus
  std::optional<ExecutorShape> executor;  // unset: the default executors
  DurationMs timeoutMs = 0;               // 0: no timeout
  // Keep the stage's output blocks after the job, for later jobs of the session to read,
  // until unpersisted (DELETE /api/v1/cache/<jobId>/<stage> or a later job's "unpersist").
  bool persist = false;
  // Nodes (node ids or host names) the stage's tasks prefer, besides where their inputs are.
  std::vector<std::string> preferredHosts;
};

struct Job {
  std::string name;
  std::string pool;  // the FAIR scheduling pool ("" = default)
  // A local directory that receives the final stages' output: part-<task index> for a task
  // that wrote only part-0, else part-<task index>-<partition>. The executors running the final
  // tasks copy them there (so it must be a path they can reach: the AM's machine with `tide
  // run`, or a shared file system). With several final stages each gets output/<stage id>/.
  // Absolute; a job file's relative path is taken from the job file's directory.
  std::string output;
  std::vector<StageSpec> stages;  // in file order
  // Persisted stages of earlier jobs ("job-1/words") to drop once this job has ended.
  std::vector<std::string> unpersist;
};

// Whether a depends_on entry names a persisted stage of an earlier job ("job-1/words").
bool isPersistedStageReference(std::string_view dependency);

// Parses and checks a job. Throws JobError naming the field (see checkJob for the DAG rules).
// A missing "name" becomes "job".
Job parseJob(std::string_view json);
// A job as JSON in the job file's schema: parseJob(jobToJson(job)) gives the job back (the
// recovery journal keeps accepted jobs this way).
std::string jobToJson(const Job& job);
// Reads and parses a job file. A missing "name" becomes the file name without its extension.
// "{jobdir}" in commands, env values, cwd and output becomes the job file's directory, and a
// relative output is taken from there. Throws JobError whose message starts with `path`.
Job loadJobFile(const std::string& path);

// The structural rules, for jobs built in code as well as parsed ones: at least one stage,
// stage ids present, well-formed and unique, 1 <= tasks <= 10^9, depends_on naming known stages
// and no cycle (the error shows it: "a -> b -> a"), a non-empty command for command stages,
// cpus >= 1 when given, no negative timeout or sleep. Throws JobError naming the field.
void checkJob(const Job& job);

// Replaces every {task}, {stage} and {attempt} in `text`; other braces are left alone (shell
// and awk use them).
std::string substituteTaskPlaceholders(std::string_view text, std::string_view stageId,
                                       int64_t index, int attempt);

}  // namespace tide::am
