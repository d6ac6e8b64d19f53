#pragma once

// Runs the tasks the AM launches on this executor and reports how each one ended. It knows
// nothing about HTTP: the ExecutorBackend feeds it launches and kills and collects its reports.
//
// Task kinds:
//   command  a process (common/spawn.h; with options.supervisorPath, below a tide-container
//            slot supervisor of the runner's launcher, supervisor_launcher.h, or exec'd per
//            task when options.forkSupervisors is false) in its own process group, in its task dir
//            (tasks/<stage>-<index>-<attempt>/ under the work dir) or in launch.cwd, with
//            stdout and stderr in files in the task dir (or, with options.logDir, in the same
//            path under the log dir, not linked from the task dir: every link is a file system
//            write per task). Exit 0 is FINISHED, anything else FAILED with the tail of stderr.
//   noop     FINISHED at once, inside launch(): no thread, no timer, no allocation beyond
//            its update, so the scheduler can be measured without process costs.
//   sleep    FINISHED after sleepMs, on the runner's timer list.
//
// Data: a command task writes its output into $TIDE_OUTPUT_DIR (task dir/output) and reads its
// inputs from $TIDE_INPUT_DIR (task dir/input, made only for a task with inputs). A task with
// launch.inputs first has them put there by options.fetchInputs, on a thread of its own (fetching
// may wait on other hosts); a fetch that fails ends the task FETCH_FAILED without starting it. When
// a command task finishes, options.commitOutputs turns its output dir into blocks, listed in its
// update.
//
// Threads: launch(), kill() and collect() run on the caller's thread (the backend loop); one
// supervisor thread owned by the runner waits, in one poll(), for every task process to exit
// (a pidfd per process, so it never reaps a child that is not a task's, unlike waitpid(-1);
// a task below a slot supervisor is that supervisor's child, reaped through it once its pidfd
// says so)
// and for the earliest timer (sleep done, timeout, SIGTERM->SIGKILL escalation), and starts
// the next queued task when one ends. No thread per task.
//
// A task owns its process group and, with a supervisor, its whole process tree: when its process
// exits, whatever it left running is killed too (however it daemonised), and timeouts and kills
// signal the whole group (SIGTERM, then SIGKILL to the tree and group after killGracePeriod).
// With a supervisor, a task also dies with its executor, even when the executor is SIGKILLed.
//
// Time comes from an injected Clock. With a ManualClock, call wake() after moving it so that
// timers are looked at again.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "executor/block_fetcher.h"
#include "executor/supervisor_launcher.h"
#include "rest/messages/executor.h"

namespace tide::executor {

// The environment variables every command task gets besides launch.env.
inline constexpr char kTaskIndexEnv[] = "TIDE_TASK_INDEX";
inline constexpr char kStageIdEnv[] = "TIDE_STAGE_ID";
inline constexpr char kAttemptEnv[] = "TIDE_ATTEMPT";
inline constexpr char kJobIdEnv[] = "TIDE_JOB_ID";
inline constexpr char kTaskIdEnv[] = "TIDE_TASK_ID";
inline constexpr char kOutputDirEnv[] = "TIDE_OUTPUT_DIR";
inline constexpr char kInputDirEnv[] = "TIDE_INPUT_DIR";

// Which task an output belongs to, for turning it into blocks.
struct TaskOutputOwner {
  std::string jobId;
  std::string stageId;
  int64_t index = 0;
  std::string collectDir;  // launch.collectDir
  int64_t taskId = 0;      // the attempt, for the AM's commit decision
};
// Thrown by a CommitOutputsFunction when the AM did not authorise this attempt to commit
// (another attempt of the task did): the output is discarded and the task reported KILLED
// with "commit denied: <why>", which is not a failure of the task.
class CommitDenied : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Places a task's inputs under inputDir; nullopt when all are there.
using FetchInputsFunction = std::function<std::optional<FetchFailure>(
    const std::vector<rest::BlockInput>& inputs, const std::filesystem::path& inputDir)>;
// Keeps a finished task's output dir as blocks (and collects them); throws to fail the task,
// CommitDenied when it may not commit.
using CommitOutputsFunction = std::function<std::vector<rest::BlockOutput>(
    const TaskOutputOwner& owner, const std::filesystem::path& outputDir)>;

// The reported exit code of a command that could not be started (as a shell reports it).
inline constexpr int kSpawnFailedExitCode = 127;

struct TaskRunnerOptions {
  // Task dirs go under workDir/tasks/. Empty: the current directory (the container dir the
  // node manager started the executor in).
  std::filesystem::path workDir;
  // Where each task's stdout and stderr are written, as tasks/<stage>-<index>-<attempt>/ below
  // it (the node's kept log dir, TIDE_LOG_DIR). Empty: in the task dir itself.
  std::filesystem::path logDir;
  // Tasks that may run at once. More launches than free slots still run (the AM decides);
  // freeSlots() then reports 0.
  int slots = 1;
  // "NAME=value" entries every command task inherits; TIDE_APP_SECRET is always left out.
  std::vector<std::string> environment;
  // The container supervisor (tide-container) each command task runs below, so that nothing a
  // task starts outlives it or the executor. Empty: tasks are spawned directly (then only their
  // process group is contained; for tests of the runner itself).
  std::string supervisorPath;
  // With supervisorPath: each task runs below a slot supervisor, forked by one launcher per
  // runner (`supervisorPath --serve`, executor/supervisor_launcher.h, started with the first
  // command task) and kept from task to task: one fork and one exec per task, as under xargs.
  // false: a supervisor exec'd per task (two of each).
  bool forkSupervisors = true;
  // How long a request to the launcher or a slot supervisor may wait for its answer
  // (SupervisorLauncher: longer means it is stopped or stuck).
  DurationMs supervisorAnswerTimeout = SupervisorLauncher::kDefaultAnswerTimeout.count();
  // Between the SIGTERM and the SIGKILL sent to a task's process group.
  DurationMs killGracePeriod = 1000;
  // How much of a failed task's stderr its update carries.
  size_t stderrTailBytes = 4096;
  // Null: a SteadyClock owned by the runner.
  const Clock* clock = nullptr;
  // Unset: a task with inputs fails FETCH_FAILED; outputs stay in the task dir.
  FetchInputsFunction fetchInputs;
  CommitOutputsFunction commitOutputs;
};

// Everything the AM hears in one sync, taken in one step so that each task is either still
// running or has its update here, never neither.
struct RunnerReport {
  std::vector<rest::TaskStatusUpdate> updates;  // since the last collect()
  std::vector<int64_t> running;                 // started, not yet reported
  int freeSlots = 0;
  // A task running, being started (out of the queue, not yet running) or queued: the runner
  // has work, so a sync must not ask the AM to hold it.
  bool holdsWork = false;
};

// The environment of the current process as "NAME=value" entries (without TIDE_APP_SECRET).
std::vector<std::string> currentEnvironment();

class TaskRunner {
 public:
  explicit TaskRunner(TaskRunnerOptions options);
  // Kills every task still running (SIGKILL to its group) and reaps it; reports nothing more.
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // Starts a task; its update comes later through collect(). A task id that is already running
  // is ignored (a launch the AM sent twice). Never throws for a task that cannot start: that is
  // a FAILED update.
  void launch(const rest::TaskLaunch& launch);
  // Stops a running task; its KILLED update follows once its process has exited. A queued one
  // is taken out of the queue and reported KILLED at once. Unknown ids are ignored: the task
  // has already ended and its update is on its way.
  void kill(int64_t taskId);

  // Pipelining. A launch marked `queued` (handed out ahead of a free slot) starts in launch()
  // when a slot is free, else waits in the queue, in arrival order, for startQueued(). Queued
  // tasks are not running: collect() does not list them and they take no slot.
  //   - starts queued tasks while slots are free; the runner's own thread also does so as soon
  //     as a task ends, so a freed slot does not wait for the executor's next sync
  void startQueued();
  // Tasks started and not yet collected as ended, and ended ones not yet collected: what the
  // AM must hear of (a re-registration with a new AM attempt reports them).
  std::vector<int64_t> heldTaskIds() const;
  //   - takes out, unstarted, the queued tasks among `taskIds` (the AM asked for them back) and
  //     returns their ids; ids not queued (started or unknown) are left alone
  std::vector<int64_t> takeBackQueued(const std::vector<int64_t>& taskIds);
  //   - takes out, unstarted, the tasks queued at or before `queuedAtOrBefore`
  std::vector<int64_t> takeBackQueuedSince(TimeMs queuedAtOrBefore);
  //   - every queued task, taken out unstarted
  std::vector<int64_t> dropQueued();
  size_t queuedCount() const;
  // When the oldest queued task was queued; nullopt with none queued.
  std::optional<TimeMs> oldestQueuedAtMs() const;
  TimeMs nowMs() const { return clock_->nowMs(); }
  // kill() for every running and queued task (the executor is leaving).
  void killAll();

  // Moves the pending updates into `report` (appending) and fills in running and freeSlots.
  void collect(RunnerReport& report);
  bool hasUpdates() const;
  int runningCount() const;
  int freeSlots() const;
  int slots() const;
  // The AM has the last word on the number of slots (its registration answer).
  void setSlots(int slots);
  DurationMs killGracePeriod() const { return options_.killGracePeriod; }

  // Blocks until an update is pending, `deadline` passes, or interruptWaits() was called.
  // Returns whether an update is pending.
  bool waitForUpdates(std::chrono::steady_clock::time_point deadline);
  // Blocks until `count` updates are pending, fewer than `queuedAtLeast` tasks are queued (the
  // slots may soon idle), `deadline` passes, or waits are interrupted.
  void waitForUpdateBatch(std::chrono::steady_clock::time_point deadline, size_t count,
                          size_t queuedAtLeast);
  // Blocks until no task runs or `deadline` passes; returns whether none runs.
  bool waitUntilIdle(std::chrono::steady_clock::time_point deadline);
  // Makes every present and future waitForUpdates() return at once (the executor is stopping).
  void interruptWaits();
  // Looks at the timers again: after a ManualClock moved.
  void wake();

 private:
  // kPreparing: a command task whose inputs are being fetched; it has no process yet.
  enum class TaskKind { kCommand, kSleep, kPreparing };
  // A task that has started and not ended. Kept small: the launch itself is not kept.
  struct RunningTask {
    TaskKind kind = TaskKind::kSleep;
    TimeMs startedAt = 0;
    int64_t timeoutMs = 0;
    pid_t pid = -1;  // command: the process, which leads its own process group
    int pidfd = -1;  // command: readable once the process has exited
    // Command below a slot supervisor: hangs up if the supervisor dies under the task
    // (SupervisorLauncher::watchSlot); -1 once seen.
    int slotFd = -1;
    bool supervisorDied = false;
    bool killRequested = false;
    bool timedOut = false;
    std::string stderrPath;  // command
    TaskOutputOwner owner;   // command
    std::filesystem::path outputDir;
    bool dirReusable = false;  // command: its task dir may become a later task's (reusedTaskDir)
  };
  enum class TimerKind { kSleepDone, kTimeout, kForceKill };
  struct Timer {
    TimerKind kind;
    int64_t taskId;
  };

  // A descriptor closed with its owner.
  class OwnedFd {
   public:
    OwnedFd() = default;
    explicit OwnedFd(int fd) : fd_(fd) {}
    OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept;
    ~OwnedFd();
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

   private:
    int fd_ = -1;
  };
  // Where a command task runs and writes its stdout and stderr: its directories made and its
  // output files opened (the process gets the descriptors), ahead of time for a queued task.
  struct CommandFiles {
    std::filesystem::path taskDir;
    std::filesystem::path cwd;
    std::string stdoutPath;
    std::string stderrPath;
    OwnedFd stdoutFd;
    OwnedFd stderrFd;
  };
  // Starts a task now (launch() once it is not to be queued). `prepared`: a command task's files,
  // made while it was queued.
  void start(const rest::TaskLaunch& launch, CommandFiles* prepared = nullptr);
  // A command task: now, or (with inputs) on a preparer thread once they are fetched.
  void startCommandOrItsInputs(const rest::TaskLaunch& launch, TimeMs now, CommandFiles* prepared);
  void startCommand(const rest::TaskLaunch& launch, TimeMs now, CommandFiles* prepared = nullptr);
  // Closes and removes what prepareQueuedFiles made for a task that is not to run here.
  static void discardPreparedFiles(CommandFiles& files);
  // Makes the task's directories and opens its output files; the reason when it cannot.
  // Renames the dir of a task that ended, if it holds nothing but an empty output dir, to
  // `taskDir`: one rename where two mkdirs (each an inode and a block allocated, journaled)
  // would be. false: none was left empty, make them.
  bool reusedTaskDir(const std::filesystem::path& taskDir);
  std::optional<std::string> prepareCommandFiles(const rest::TaskLaunch& launch,
                                                 CommandFiles& files);
  // Starts the process (below the supervisor when there is one); throws SpawnError.
  pid_t spawnCommand(const rest::TaskLaunch& launch, const CommandFiles& files,
                     const std::string& program) const;
  // Records the started process as the running task (slotFd: RunningTask::slotFd).
  void addCommandTask(const rest::TaskLaunch& launch, TimeMs now, pid_t pid, int pidfd, int slotFd,
                      CommandFiles files);
  // The slot supervisor of a running task died (its slotFd hung up): the task, orphaned, is
  // killed with its group, and its end is reported as the supervisor's death when it is reaped.
  void supervisorDiedLocked(int64_t taskId);
  // Callers hold mutex_: takes the queued launches `take` accepts out of the queue and returns
  // their ids, in queue order.
  template <typename Predicate>
  std::vector<int64_t> takeQueuedLocked(Predicate take);
  // The thread of a task with inputs: fetch, then start (unless it was killed meanwhile).
  void prepareAndStart(rest::TaskLaunch launch, TimeMs launchedAt);
  std::vector<std::string> taskEnvironment(const rest::TaskLaunch& launch) const;
  // Callers hold mutex_.
  // True (and logged) when `taskId` is already running: a relaunch is ignored.
  bool alreadyRunningLocked(int64_t taskId);
  void addTimerLocked(TimeMs at, TimerKind kind, int64_t taskId);
  void killLocked(int64_t taskId, RunningTask& task, TimeMs now);
  void fireDueTimersLocked(TimeMs now);
  void reapLocked(int64_t taskId, TimeMs now);
  // Reaps a task's exited process (through the launcher when it forked it); as waitpid: the
  // pid, 0 when it has not exited after all (own children only), -1 with errno when lost.
  pid_t reapTaskProcess(pid_t pid, int& status, bool block);
  void reportLocked(rest::TaskStatusUpdate update);
  // Slots taken: running tasks and queued ones being started.
  int busySlotsLocked() const;
  void finishWithoutProcessLocked(int64_t taskId, rest::TaskState state, int exitCode,
                                  std::string reason, TimeMs startedAt, TimeMs now);

  void supervise();
  void wakeSupervisor();

  TaskRunnerOptions options_;
  std::unique_ptr<Clock> ownedClock_;
  const Clock* clock_;
  std::unique_ptr<SupervisorLauncher> launcher_;  // with supervisorPath and forkSupervisors
  std::vector<std::string> baseEnvironment_;
  Logger log_{"executor"};

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // an update was reported or a task ended
  std::unordered_map<int64_t, RunningTask> tasks_;
  struct QueuedLaunch {
    rest::TaskLaunch launch;
    TimeMs queuedAt = 0;
    bool triedPreparing = false;  // by prepareQueuedFiles
    bool prepared = false;        // files made
    CommandFiles files;
  };
  std::deque<QueuedLaunch> queued_;  // launch.queued tasks waiting for a slot, oldest first
  // The thread that makes queued command tasks' files ahead of their start, one at a time.
  void prepareQueuedFiles();
  // Callers hold mutex_: the first queued command task not yet prepared; null when none.
  QueuedLaunch* nextToPrepareLocked();
  std::thread filePreparer_;
  std::condition_variable prepareWanted_;  // a task was queued, or the runner is stopping
  std::condition_variable prepared_;       // the preparer is done with preparingTaskId_
  int64_t preparingTaskId_ = -1;           // the queued task whose files are being made
  int starting_ = 0;                       // taken from queued_, being started (not yet in tasks_)
  std::multimap<TimeMs, Timer> timers_;    // stale entries (task gone) are dropped when due
  std::vector<rest::TaskStatusUpdate> updates_;
  // Dirs of ended tasks, newest last, for reusedTaskDir (64 and one per slot; others stay put).
  std::vector<std::filesystem::path> endedTaskDirs_;
  int slots_;
  bool waitsInterrupted_ = false;
  bool stopping_ = false;

  // Threads of tasks fetching their inputs, by task id; a finished one is joined at the next
  // launch (a thread not joined keeps its stack), the rest when the runner goes.
  std::mutex preparersMutex_;  // guards preparers_ (taken before mutex_, never inside it)
  std::map<int64_t, std::thread> preparers_;
  std::vector<int64_t> finishedPreparers_;  // guarded by mutex_
  int wakeFd_ = -1;                         // eventfd: wakes the supervisor's poll()
  std::thread supervisor_;
};

}  // namespace tide::executor
