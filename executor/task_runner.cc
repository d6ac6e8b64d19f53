#include "executor/task_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>
#include <system_error>
#include <utility>

#include "common/config.h"  // formatDuration
#include "common/pidfd.h"
#include "common/process_tree.h"
#include "common/spawn.h"
#include "executor/executor_settings.h"
#include "executor/task_output.h"

extern char** environ;

namespace tide::executor {
namespace {

constexpr rest::TaskState kFinished = rest::TaskState::kFinished;
constexpr rest::TaskState kFailed = rest::TaskState::kFailed;
constexpr rest::TaskState kKilled = rest::TaskState::kKilled;
// Ended tasks' dirs kept for reuse (beyond one per slot): more than a sync refills at once.
constexpr size_t kMaxEndedTaskDirs = 64;
// What a task that never had a process reports as its exit code.
constexpr int kNoProcessExitCode = -1;

std::string_view variableName(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

std::string errnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// A real directory (not a link) its owner may still read, write and enter, as made.
bool isUsableDirectory(const std::filesystem::file_status& status) {
  using std::filesystem::perms;
  return status.type() == std::filesystem::file_type::directory &&
         (status.permissions() & perms::owner_all) == perms::owner_all;
}

// Whether an ended task's dir may be a new task's: nothing the ended task left (a file in its
// cwd, an output not committed, a changed mode) is ever lost or met by another task, so only a
// dir holding exactly one entry, an empty `output` dir, both as they were made, qualifies.
bool holdsOnlyAnEmptyOutputDir(const std::filesystem::path& dir) {
  std::error_code error;
  if (!isUsableDirectory(std::filesystem::symlink_status(dir, error)) || error) return false;
  int entries = 0;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    if (++entries > 1 || it->path().filename() != "output" ||
        !isUsableDirectory(it->symlink_status(error))) {
      return false;
    }
  }
  return !error && entries == 1 && std::filesystem::is_empty(dir / "output", error) && !error;
}

// One mkdir when the parent exists (every task's but the first), where create_directories
// would first stat every ancestor; a missing parent is made the long way.
std::error_code makeDirectory(const std::filesystem::path& directory) {
  if (::mkdir(directory.c_str(), 0777) == 0) return {};
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  return error;
}

}  // namespace

TaskRunner::OwnedFd& TaskRunner::OwnedFd::operator=(OwnedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

TaskRunner::OwnedFd::~OwnedFd() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (variableName(*entry) != kAppSecretEnv) entries.emplace_back(*entry);
  }
  return entries;
}

TaskRunner::TaskRunner(TaskRunnerOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) ownedClock_ = std::make_unique<SteadyClock>();
  clock_ = options_.clock != nullptr ? options_.clock : ownedClock_.get();
  if (options_.workDir.empty()) options_.workDir = std::filesystem::current_path();
  options_.workDir = std::filesystem::absolute(options_.workDir);
  slots_ = std::max(1, options_.slots);
  for (std::string& entry : options_.environment) {
    if (variableName(entry) != kAppSecretEnv) baseEnvironment_.push_back(std::move(entry));
  }
  options_.environment.clear();
  if (!options_.supervisorPath.empty() && options_.forkSupervisors) {
    // The launcher runs with the executor's environment; each task gets its own with its launch.
    launcher_ = std::make_unique<SupervisorLauncher>(
        options_.supervisorPath, currentEnvironment(),
        std::chrono::milliseconds(options_.supervisorAnswerTimeout));
  }
  wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakeFd_ < 0) {
    throw std::system_error(errno, std::generic_category(), "TaskRunner: eventfd");
  }
  supervisor_ = std::thread([this] { supervise(); });
  filePreparer_ = std::thread([this] { prepareQueuedFiles(); });
}

TaskRunner::~TaskRunner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  prepareWanted_.notify_all();
  prepared_.notify_all();
  wakeSupervisor();
  supervisor_.join();
  filePreparer_.join();
  // A preparer sees stopping_ and starts nothing; its fetch runs out on its own timeouts.
  for (auto& [taskId, preparer] : preparers_) preparer.join();
  // Only this thread is left: take every process group down and reap its leader, so that no
  // task outlives the executor and no zombie is left behind.
  for (auto& [taskId, task] : tasks_) {
    if (task.kind != TaskKind::kCommand) continue;
    ::kill(-task.pid, SIGKILL);
    int status = 0;
    reapTaskProcess(task.pid, status, true);
    ::close(task.pidfd);
    if (task.slotFd >= 0) ::close(task.slotFd);
  }
  ::close(wakeFd_);
}

bool TaskRunner::alreadyRunningLocked(int64_t taskId) {
  if (tasks_.count(taskId) == 0) return false;
  log_.warn() << "task " << taskId << " is already running; ignoring its relaunch";
  return true;
}

void TaskRunner::launch(const rest::TaskLaunch& launch) {
  if (launch.queued && launch.kind != "noop") {  // a noop takes no slot: it never waits
    std::lock_guard<std::mutex> lock(mutex_);
    if (alreadyRunningLocked(launch.taskId)) return;
    const bool alreadyQueued =
        std::any_of(queued_.begin(), queued_.end(),
                    [&](const QueuedLaunch& q) { return q.launch.taskId == launch.taskId; });
    if (alreadyQueued) return;
    if (!queued_.empty() || busySlotsLocked() >= slots_) {
      queued_.push_back(QueuedLaunch{launch, clock_->nowMs(), false, false, {}});
      prepareWanted_.notify_all();
      return;
    }
  }
  start(launch);
}

void TaskRunner::startQueued() {
  while (true) {
    QueuedLaunch next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Never two openers of one task's files: the preparer's O_TRUNC would cut a running
      // task's output. Its few file system calls are what the task would wait for anyway.
      prepared_.wait(lock, [&] {
        return stopping_ || queued_.empty() || queued_.front().launch.taskId != preparingTaskId_;
      });
      if (stopping_ || queued_.empty() || busySlotsLocked() >= slots_) return;
      next = std::move(queued_.front());
      queued_.pop_front();
      ++starting_;  // holds its slot until it is in tasks_ (or has ended)
    }
    start(next.launch, next.prepared ? &next.files : nullptr);
    std::lock_guard<std::mutex> lock(mutex_);
    --starting_;
  }
}

TaskRunner::QueuedLaunch* TaskRunner::nextToPrepareLocked() {
  for (QueuedLaunch& queued : queued_) {
    if (!queued.triedPreparing && queued.launch.kind == "command" && queued.launch.inputs.empty()) {
      return &queued;
    }
  }
  return nullptr;
}

void TaskRunner::prepareQueuedFiles() {
  // A task's directories and output files are file system writes that wait for the disk's
  // journal, which on a busy disk take longer than a short task: made on this thread while the
  // slots' tasks run, they are not in the gap between one task and the next, nor do they hold
  // up the supervisor's reaping. Not for a task with inputs (its preparer thread makes them
  // after fetching). A task taken back unstarted has what was made for it removed.
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    prepareWanted_.wait(lock, [&] { return stopping_ || nextToPrepareLocked() != nullptr; });
    if (stopping_) return;
    const QueuedLaunch* queued = nextToPrepareLocked();
    rest::TaskLaunch next;  // what prepareCommandFiles reads
    next.taskId = queued->launch.taskId;
    next.stageId = queued->launch.stageId;
    next.index = queued->launch.index;
    next.attempt = queued->launch.attempt;
    next.cwd = queued->launch.cwd;
    preparingTaskId_ = next.taskId;
    lock.unlock();
    CommandFiles files;
    const bool made = !prepareCommandFiles(next, files);  // else tried again when it starts
    lock.lock();
    preparingTaskId_ = -1;
    auto it = std::find_if(queued_.begin(), queued_.end(),
                           [&](const QueuedLaunch& q) { return q.launch.taskId == next.taskId; });
    if (it == queued_.end()) {
      discardPreparedFiles(files);  // taken out of the queue meanwhile
    } else {
      it->triedPreparing = true;  // a failure is tried again, and reported, when it starts
      if (made) {
        it->files = std::move(files);
        it->prepared = true;
      }
    }
    prepared_.notify_all();
  }
}

void TaskRunner::discardPreparedFiles(CommandFiles& files) {
  // A task that never ran here leaves no empty log behind for `tide logs` to show. Only what
  // is still empty goes (remove() keeps a non-empty directory).
  files.stdoutFd = OwnedFd();
  files.stderrFd = OwnedFd();
  std::error_code ignored;
  for (const std::filesystem::path& path :
       {std::filesystem::path(files.stdoutPath), std::filesystem::path(files.stderrPath),
        std::filesystem::path(files.stdoutPath).parent_path(), files.taskDir / "output",
        files.taskDir}) {
    std::filesystem::remove(path, ignored);
  }
}

int TaskRunner::busySlotsLocked() const {
  return static_cast<int>(tasks_.size()) + starting_;
}

std::vector<int64_t> TaskRunner::heldTaskIds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> held;
  held.reserve(tasks_.size() + updates_.size());
  for (const auto& entry : tasks_) held.push_back(entry.first);
  for (const auto& update : updates_) held.push_back(update.taskId);
  std::sort(held.begin(), held.end());
  return held;
}

template <typename Predicate>
std::vector<int64_t> TaskRunner::takeQueuedLocked(Predicate take) {
  std::vector<int64_t> taken;
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (take(*it)) {
      taken.push_back(it->launch.taskId);
      if (it->prepared) discardPreparedFiles(it->files);
      it = queued_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

std::vector<int64_t> TaskRunner::takeBackQueued(const std::vector<int64_t>& taskIds) {
  if (taskIds.empty()) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  return takeQueuedLocked([&](const QueuedLaunch& q) {
    return std::find(taskIds.begin(), taskIds.end(), q.launch.taskId) != taskIds.end();
  });
}

std::vector<int64_t> TaskRunner::takeBackQueuedSince(TimeMs queuedAtOrBefore) {
  std::lock_guard<std::mutex> lock(mutex_);
  return takeQueuedLocked([&](const QueuedLaunch& q) { return q.queuedAt <= queuedAtOrBefore; });
}

std::vector<int64_t> TaskRunner::dropQueued() {
  std::lock_guard<std::mutex> lock(mutex_);
  return takeQueuedLocked([](const QueuedLaunch&) { return true; });
}

size_t TaskRunner::queuedCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.size();
}

std::optional<TimeMs> TaskRunner::oldestQueuedAtMs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (queued_.empty()) return std::nullopt;
  return queued_.front().queuedAt;
}

void TaskRunner::start(const rest::TaskLaunch& launch, CommandFiles* prepared) {
  const TimeMs now = clock_->nowMs();
  if (launch.kind == "noop") {
    // The hot path: one lock, one update.
    std::lock_guard<std::mutex> lock(mutex_);
    if (tasks_.count(launch.taskId) != 0) return;
    finishWithoutProcessLocked(launch.taskId, kFinished, 0, "", now, now);
    return;
  }
  if (launch.kind == "sleep") {
    std::lock_guard<std::mutex> lock(mutex_);
    if (alreadyRunningLocked(launch.taskId)) return;
    RunningTask task;
    task.kind = TaskKind::kSleep;
    task.startedAt = now;
    task.timeoutMs = launch.timeoutMs;
    tasks_.emplace(launch.taskId, std::move(task));
    addTimerLocked(addSaturating(now, launch.sleepMs), TimerKind::kSleepDone, launch.taskId);
    if (launch.timeoutMs > 0 && launch.timeoutMs < launch.sleepMs) {
      addTimerLocked(now + launch.timeoutMs, TimerKind::kTimeout, launch.taskId);
    }
    return;
  }
  if (launch.kind == "command") {
    startCommandOrItsInputs(launch, now, prepared);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  finishWithoutProcessLocked(launch.taskId, kFailed, kNoProcessExitCode,
                             "unknown task kind '" + launch.kind + "'", now, now);
}

void TaskRunner::startCommandOrItsInputs(const rest::TaskLaunch& launch, TimeMs now,
                                         CommandFiles* prepared) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (alreadyRunningLocked(launch.taskId)) return;
    if (!launch.inputs.empty()) {
      // Running (for the AM and the slot count) from now on, though it has no process yet.
      RunningTask task;
      task.kind = TaskKind::kPreparing;
      task.startedAt = now;
      tasks_.emplace(launch.taskId, std::move(task));
    }
  }
  // Both the backend's thread and the supervisor's (starting a queued task) come here: one at a
  // time adds or joins preparers.
  std::lock_guard<std::mutex> preparersLock(preparersMutex_);
  std::vector<int64_t> finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished.swap(finishedPreparers_);
  }
  for (int64_t taskId : finished) {
    auto preparer = preparers_.find(taskId);
    if (preparer == preparers_.end()) continue;
    preparer->second.join();
    preparers_.erase(preparer);
  }
  if (!launch.inputs.empty()) {
    // An earlier preparer of the same id (never from one AM, which numbers tasks uniquely)
    // is done with it, since the task is not running: join before replacing.
    auto earlier = preparers_.find(launch.taskId);
    if (earlier != preparers_.end()) {
      earlier->second.join();
      std::lock_guard<std::mutex> lock(mutex_);
      finishedPreparers_.erase(
          std::remove(finishedPreparers_.begin(), finishedPreparers_.end(), launch.taskId),
          finishedPreparers_.end());
    }
    preparers_[launch.taskId] = std::thread([this, launch, now] {
      prepareAndStart(launch, now);
      std::lock_guard<std::mutex> lock(mutex_);
      finishedPreparers_.push_back(launch.taskId);
    });
    return;
  }
  startCommand(launch, now, prepared);
}

void TaskRunner::prepareAndStart(rest::TaskLaunch launch, TimeMs launchedAt) {
  const std::filesystem::path taskDir =
      taskDirectory(options_.workDir, launch.stageId, launch.index, launch.attempt);
  std::optional<FetchFailure> failure;
  if (options_.fetchInputs) {
    failure = options_.fetchInputs(launch.inputs, taskDir / "input");
  } else {
    failure = FetchFailure{launch.inputs.front(), "this executor cannot fetch blocks"};
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = tasks_.find(launch.taskId);
    if (it == tasks_.end()) return;
    const TimeMs now = clock_->nowMs();
    if (stopping_ || it->second.killRequested) {
      tasks_.erase(it);
      finishWithoutProcessLocked(launch.taskId, kKilled, kNoProcessExitCode,
                                 "killed while fetching its inputs", launchedAt, now);
      return;
    }
    if (failure) {
      log_.warn() << "task " << launch.taskId << " cannot fetch its input: " << failure->reason;
      tasks_.erase(it);
      rest::TaskStatusUpdate update;
      update.taskId = launch.taskId;
      update.state = rest::TaskState::kFetchFailed;
      update.exitCode = kNoProcessExitCode;
      update.reason = "fetch failed: " + failure->reason;
      update.durationMs = std::max<TimeMs>(0, now - launchedAt);
      update.failedInput = failure->input;
      reportLocked(std::move(update));
      return;
    }
    // startCommand registers the process under the same id; a kill arriving from here on
    // finds the preparing entry and is honoured there.
  }
  startCommand(launch, launchedAt);
}

std::vector<std::string> TaskRunner::taskEnvironment(const rest::TaskLaunch& launch) const {
  std::map<std::string, std::string> overrides(launch.env.begin(), launch.env.end());
  overrides.erase(kAppSecretEnv);
  overrides[kTaskIndexEnv] = std::to_string(launch.index);
  overrides[kStageIdEnv] = launch.stageId;
  overrides[kAttemptEnv] = std::to_string(launch.attempt);
  overrides[kJobIdEnv] = launch.jobId;
  overrides[kTaskIdEnv] = std::to_string(launch.taskId);
  const std::filesystem::path taskDir =
      taskDirectory(options_.workDir, launch.stageId, launch.index, launch.attempt);
  overrides[kOutputDirEnv] = (taskDir / "output").string();
  overrides[kInputDirEnv] = (taskDir / "input").string();
  std::vector<std::string> entries;
  entries.reserve(baseEnvironment_.size() + overrides.size());
  for (const std::string& entry : baseEnvironment_) {
    if (overrides.count(std::string(variableName(entry))) == 0) entries.push_back(entry);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

void TaskRunner::startCommand(const rest::TaskLaunch& launch, TimeMs now, CommandFiles* prepared) {
  const auto fail = [&](int exitCode, std::string reason) {
    log_.warn() << "task " << launch.taskId << " could not start: " << reason;
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.erase(launch.taskId);  // a task that was preparing its inputs
    finishWithoutProcessLocked(launch.taskId, kFailed, exitCode, std::move(reason), now,
                               clock_->nowMs());
  };
  CommandFiles files;
  if (prepared != nullptr) {
    files = std::move(*prepared);
  } else if (std::optional<std::string> problem = prepareCommandFiles(launch, files)) {
    fail(kNoProcessExitCode, std::move(*problem));
    return;
  }
  // posix_spawnp's rule, with the executor's PATH (not launch.env's), like a shell would before
  // applying `env VAR=x prog`; a relative path with a '/' is taken from the task's cwd.
  const char* executorPath = std::getenv("PATH");
  const std::optional<std::string> program =
      findProgram(launch.argv[0], executorPath != nullptr ? executorPath : "");
  if (!program) {
    fail(kSpawnFailedExitCode,
         "spawn failed: cannot run '" + launch.argv[0] + "': " + errnoText(ENOENT));
    return;
  }
  pid_t pid = -1;
  try {
    pid = spawnCommand(launch, files, *program);
  } catch (const SpawnError& e) {
    fail(kSpawnFailedExitCode,
         "spawn failed: cannot run '" + launch.argv[0] + "': " + e.code().message());
    return;
  }
  const int pidfd = openPidfd(pid);
  if (pidfd < 0) {
    const int openError = errno;
    ::kill(-pid, SIGKILL);
    int status = 0;
    reapTaskProcess(pid, status, true);
    fail(kNoProcessExitCode,
         "cannot watch the task's process: pidfd_open: " + errnoText(openError));
    return;
  }
  TIDE_LOG(log_, debug) << "task " << launch.taskId << " started as pid " << pid << " in "
                        << files.cwd.string();
  const int slotFd = launcher_ != nullptr ? launcher_->watchSlot(pid) : -1;
  addCommandTask(launch, now, pid, pidfd, slotFd, std::move(files));
  // The supervisor's poll() must start watching the new pidfd.
  wakeSupervisor();
}

bool TaskRunner::reusedTaskDir(const std::filesystem::path& taskDir) {
  std::filesystem::path candidate;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (endedTaskDirs_.empty()) return false;
    candidate = std::move(endedTaskDirs_.back());
    endedTaskDirs_.pop_back();
  }
  return holdsOnlyAnEmptyOutputDir(candidate) && ::rename(candidate.c_str(), taskDir.c_str()) == 0;
}

std::optional<std::string> TaskRunner::prepareCommandFiles(const rest::TaskLaunch& launch,
                                                           CommandFiles& files) {
  // Every directory made here is a journaled metadata write that waits for the file system's
  // journal, which on a busy disk costs more than the task's fork and exec: only what the task
  // uses is made (the input dir when it has inputs), and one mkdir each in the common case.
  files.taskDir = taskDirectory(options_.workDir, launch.stageId, launch.index, launch.attempt);
  std::error_code error;
  if (!launch.inputs.empty() || !reusedTaskDir(files.taskDir)) {
    error = makeDirectory(files.taskDir);
    if (!error) error = makeDirectory(files.taskDir / "output");
  }
  if (!error && !launch.inputs.empty()) error = makeDirectory(files.taskDir / "input");
  if (error) {
    return "cannot create task directory " + files.taskDir.string() + ": " + error.message();
  }
  files.cwd = files.taskDir;
  if (!launch.cwd.empty()) {
    files.cwd = options_.workDir / launch.cwd;  // an absolute launch.cwd replaces workDir
    if (!std::filesystem::is_directory(files.cwd, error)) {
      return "working directory " + files.cwd.string() + " does not exist";
    }
  }
  // In the kept log dir when there is one: written there directly, so a killed task or
  // executor loses nothing (`tide logs` and the NM's log API read them there).
  std::filesystem::path logDir = files.taskDir;
  if (!options_.logDir.empty()) {
    logDir = taskDirectory(options_.logDir, launch.stageId, launch.index, launch.attempt);
    if (error = makeDirectory(logDir); error) {
      return "cannot create log directory " + logDir.string() + ": " + error.message();
    }
  }
  files.stdoutPath = (logDir / "stdout").string();
  files.stderrPath = (logDir / "stderr").string();
  for (auto [path, fd] : {std::pair{&files.stdoutPath, &files.stdoutFd},
                          std::pair{&files.stderrPath, &files.stderrFd}}) {
    *fd = OwnedFd(::open(path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd->get() < 0) return "cannot create " + *path + ": " + errnoText(errno);
  }
  return std::nullopt;
}

pid_t TaskRunner::spawnCommand(const rest::TaskLaunch& launch, const CommandFiles& files,
                               const std::string& program) const {
  SpawnOptions spawn;
  spawn.workDir = files.cwd.string();
  spawn.stdoutFd = files.stdoutFd.get();
  spawn.stderrFd = files.stderrFd.get();
  spawn.environment = taskEnvironment(launch);
  // Its own process group (pgid = its pid) so that one kill() reaches everything it starts that
  // stays in the group; default signal dispositions and an empty mask, since the executor
  // blocks SIGTERM in its threads and ignores SIGPIPE. The executor's descriptors (the AM
  // connection, pidfds) are not inherited.
  spawn.grouping = ProcessGrouping::kNewProcessGroup;
  if (launcher_ != nullptr) {
    // The same supervisor, forked by the launcher with these descriptors and directory.
    LaunchRequest request;
    request.argv = launch.argv;
    request.argv[0] = program;
    request.environment = std::move(*spawn.environment);
    request.workDir = spawn.workDir;
    return launcher_->launch(request, spawn.stdoutFd, spawn.stderrFd);
  }
  if (!options_.supervisorPath.empty()) {
    // The task runs below a supervisor that keeps everything it starts below it (a subreaper),
    // kills all of it when the task ends, and dies with the executor (even by SIGKILL).
    spawn.argv = {options_.supervisorPath,
                  "--die-with-parent",
                  std::to_string(::getpid()),
                  "--grace",
                  std::to_string(options_.killGracePeriod),
                  "--",
                  program};
    spawn.argv.insert(spawn.argv.end(), launch.argv.begin() + 1, launch.argv.end());
  } else {
    spawn.argv = launch.argv;
    spawn.argv[0] = program;
  }
  return spawnProcess(spawn);
}

void TaskRunner::addCommandTask(const rest::TaskLaunch& launch, TimeMs now, pid_t pid, int pidfd,
                                int slotFd, CommandFiles files) {
  std::lock_guard<std::mutex> lock(mutex_);
  RunningTask task;
  task.kind = TaskKind::kCommand;
  task.startedAt = now;
  task.timeoutMs = launch.timeoutMs;
  task.pid = pid;
  task.pidfd = pidfd;
  task.slotFd = slotFd;
  task.stderrPath = std::move(files.stderrPath);
  task.owner =
      TaskOutputOwner{launch.jobId, launch.stageId, launch.index, launch.collectDir, launch.taskId};
  task.outputDir = files.taskDir / "output";
  // Its dir holds its logs without a log dir, its inputs with inputs, and is not its own with a
  // cwd; without a supervisor, something it started may still write there.
  task.dirReusable = launch.cwd.empty() && launch.inputs.empty() && !options_.logDir.empty() &&
                     !options_.supervisorPath.empty();
  // A task that was preparing its inputs may have been asked to stop meanwhile.
  auto preparing = tasks_.find(launch.taskId);
  const bool killedWhilePreparing = preparing != tasks_.end() && preparing->second.killRequested;
  RunningTask& stored = tasks_[launch.taskId];
  stored = std::move(task);
  if (launch.timeoutMs > 0) {
    addTimerLocked(now + launch.timeoutMs, TimerKind::kTimeout, launch.taskId);
  }
  if (killedWhilePreparing || stopping_) killLocked(launch.taskId, stored, clock_->nowMs());
}

void TaskRunner::kill(int64_t taskId) {
  std::lock_guard<std::mutex> lock(mutex_);
  const TimeMs now = clock_->nowMs();
  if (!takeQueuedLocked([&](const QueuedLaunch& q) { return q.launch.taskId == taskId; }).empty()) {
    finishWithoutProcessLocked(taskId, kKilled, kNoProcessExitCode, "killed before it started", now,
                               now);
    return;
  }
  auto it = tasks_.find(taskId);
  if (it == tasks_.end()) {
    TIDE_LOG(log_, debug) << "kill of task " << taskId << ": not running (already ended)";
    return;
  }
  killLocked(taskId, it->second, now);
}

void TaskRunner::killAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  const TimeMs now = clock_->nowMs();
  for (int64_t taskId : takeQueuedLocked([](const QueuedLaunch&) { return true; })) {
    finishWithoutProcessLocked(taskId, kKilled, kNoProcessExitCode, "killed before it started", now,
                               now);
  }
  std::vector<int64_t> ids;
  ids.reserve(tasks_.size());
  for (const auto& entry : tasks_) ids.push_back(entry.first);
  for (int64_t taskId : ids) {
    auto it = tasks_.find(taskId);
    if (it != tasks_.end()) killLocked(taskId, it->second, now);
  }
}

void TaskRunner::killLocked(int64_t taskId, RunningTask& task, TimeMs now) {
  if (task.kind == TaskKind::kPreparing) {
    // No process yet: its preparer reports it KILLED (or kills the process it just started).
    task.killRequested = true;
    return;
  }
  if (task.kind == TaskKind::kSleep) {
    const TimeMs startedAt = task.startedAt;
    tasks_.erase(taskId);  // its timers go stale and are dropped when due
    finishWithoutProcessLocked(taskId, kKilled, kNoProcessExitCode, "killed", startedAt, now);
    return;
  }
  if (task.killRequested) return;
  task.killRequested = true;
  ::kill(-task.pid, SIGTERM);
  // Its slot supervisor also reaches what the task orphaned (a supervisor exec'd per task
  // passes the SIGTERM above on to its whole tree itself).
  if (launcher_ != nullptr) launcher_->stop(task.pid);
  addTimerLocked(now + options_.killGracePeriod, TimerKind::kForceKill, taskId);
}

void TaskRunner::collect(RunnerReport& report) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (report.updates.empty()) {
    report.updates.swap(updates_);
  } else {
    std::move(updates_.begin(), updates_.end(), std::back_inserter(report.updates));
    updates_.clear();
  }
  report.running.clear();
  report.running.reserve(tasks_.size());
  for (const auto& entry : tasks_) report.running.push_back(entry.first);
  std::sort(report.running.begin(), report.running.end());
  report.freeSlots = std::max(0, slots_ - busySlotsLocked());
  report.holdsWork = busySlotsLocked() > 0 || !queued_.empty();
}

bool TaskRunner::hasUpdates() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !updates_.empty();
}

int TaskRunner::runningCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(tasks_.size());
}

int TaskRunner::freeSlots() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::max(0, slots_ - busySlotsLocked());
}

int TaskRunner::slots() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_;
}

void TaskRunner::setSlots(int slots) {
  std::lock_guard<std::mutex> lock(mutex_);
  slots_ = std::max(1, slots);
}

bool TaskRunner::waitForUpdates(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, deadline, [this] { return !updates_.empty() || waitsInterrupted_; });
  return !updates_.empty();
}

void TaskRunner::waitForUpdateBatch(std::chrono::steady_clock::time_point deadline, size_t count,
                                    size_t queuedAtLeast) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, deadline, [&] {
    return updates_.size() >= count || queued_.size() < queuedAtLeast || waitsInterrupted_;
  });
}

bool TaskRunner::waitUntilIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_until(lock, deadline, [this] { return tasks_.empty(); });
}

void TaskRunner::interruptWaits() {
  std::lock_guard<std::mutex> lock(mutex_);
  waitsInterrupted_ = true;
  changed_.notify_all();
}

void TaskRunner::wake() {
  wakeSupervisor();
}

void TaskRunner::addTimerLocked(TimeMs at, TimerKind kind, int64_t taskId) {
  const bool newEarliest = timers_.empty() || at < timers_.begin()->first;
  timers_.emplace(at, Timer{kind, taskId});
  // Waking costs a syscall, so only when the supervisor's current poll() would sleep too long.
  if (newEarliest) wakeSupervisor();
}

void TaskRunner::reportLocked(rest::TaskStatusUpdate update) {
  updates_.push_back(std::move(update));
  changed_.notify_all();
}

void TaskRunner::finishWithoutProcessLocked(int64_t taskId, rest::TaskState state, int exitCode,
                                            std::string reason, TimeMs startedAt, TimeMs now) {
  rest::TaskStatusUpdate update;
  update.taskId = taskId;
  update.state = state;
  update.exitCode = exitCode;
  update.reason = std::move(reason);
  update.durationMs = std::max<TimeMs>(0, now - startedAt);
  reportLocked(std::move(update));
}

void TaskRunner::fireDueTimersLocked(TimeMs now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    const Timer timer = timers_.begin()->second;
    timers_.erase(timers_.begin());
    auto it = tasks_.find(timer.taskId);
    if (it == tasks_.end()) continue;  // stale: the task has already ended
    RunningTask& task = it->second;
    switch (timer.kind) {
      case TimerKind::kSleepDone: {
        const TimeMs startedAt = task.startedAt;
        tasks_.erase(it);
        finishWithoutProcessLocked(timer.taskId, kFinished, 0, "", startedAt, now);
        break;
      }
      case TimerKind::kTimeout:
        if (task.kind == TaskKind::kSleep) {
          const TimeMs startedAt = task.startedAt;
          const int64_t timeoutMs = task.timeoutMs;
          tasks_.erase(it);
          finishWithoutProcessLocked(timer.taskId, kFailed, kNoProcessExitCode,
                                     "timed out after " + formatDuration(timeoutMs), startedAt,
                                     now);
        } else if (!task.timedOut && !task.killRequested) {
          log_.warn() << "task " << timer.taskId << " timed out after "
                      << formatDuration(task.timeoutMs) << "; killing its process group";
          task.timedOut = true;
          killLocked(timer.taskId, task, now);
        }
        break;
      case TimerKind::kForceKill:
        // The leader still runs (else the task would be gone): its tree ignored SIGTERM. The
        // leader is stopped first, so that it neither exits nor lets its tree go (its orphans
        // would leave the tree) while everything below it is killed; then the group goes.
        ::kill(task.pid, SIGSTOP);
        killDescendants(task.pid);
        ::kill(-task.pid, SIGKILL);
        break;
    }
  }
}

void TaskRunner::reapLocked(int64_t taskId, TimeMs now) {
  auto it = tasks_.find(taskId);
  if (it == tasks_.end()) return;
  RunningTask& task = it->second;
  // The leader is a zombie now, so its pid (and group id) cannot have been reused: kill what
  // the task left behind in its group before reaping, then reap. Below a slot supervisor the
  // supervisor does that as it reaps (it holds the zombie; if it died, someone else may have
  // reaped the task and its pid may be another process's by now).
  if (launcher_ == nullptr) ::kill(-task.pid, SIGKILL);
  int status = 0;
  const pid_t reaped = reapTaskProcess(task.pid, status, false);
  const int reapError = errno;
  if (reaped == 0) return;  // not exited after all (spurious readiness)
  ::close(task.pidfd);
  if (task.slotFd >= 0) ::close(task.slotFd);

  rest::TaskStatusUpdate update;
  update.taskId = taskId;
  update.durationMs = std::max<TimeMs>(0, now - task.startedAt);
  std::string howItEnded;
  if (reaped < 0) {
    update.exitCode = kNoProcessExitCode;
    if (task.supervisorDied) {
      howItEnded = "its slot supervisor died under it (the task was killed)";
    } else if (reapError == ETIMEDOUT) {
      howItEnded = "lost track of its process: its slot supervisor did not answer within " +
                   formatDuration(options_.supervisorAnswerTimeout) + " (stopped or stuck)";
    } else {
      howItEnded = "lost track of its process: " + errnoText(reapError);
    }
  } else if (WIFSIGNALED(status)) {
    update.exitCode = 128 + WTERMSIG(status);
    howItEnded = "killed by signal " + std::to_string(WTERMSIG(status));
  } else {
    update.exitCode = WEXITSTATUS(status);
    howItEnded = "exited with code " + std::to_string(update.exitCode);
  }
  if (task.timedOut) {
    update.state = kFailed;
    update.reason = "timed out after " + formatDuration(task.timeoutMs);
  } else if (task.killRequested) {
    update.state = kKilled;
    update.reason = "killed (" + howItEnded + ")";
  } else if (reaped > 0 && WIFEXITED(status) && update.exitCode == 0) {
    update.state = kFinished;
  } else {
    update.state = kFailed;
    update.reason = std::move(howItEnded);
  }
  if (update.state == kFinished && options_.commitOutputs) {
    try {
      update.blocks = options_.commitOutputs(task.owner, task.outputDir);
    } catch (const CommitDenied& e) {
      update.state = kKilled;
      update.reason = std::string("commit denied: ") + e.what();
      std::error_code ignored;
      std::filesystem::remove_all(task.outputDir, ignored);  // never anyone's output
    } catch (const std::exception& e) {
      update.state = kFailed;
      update.reason = std::string("cannot keep its output: ") + e.what();
    }
  }
  if (update.state == kFailed) {
    update.stderrTail = readFileTail(task.stderrPath, options_.stderrTailBytes);
  }
  TIDE_LOG(log_, debug) << "task " << taskId << " " << rest::taskStateName(update.state)
                        << (update.reason.empty() ? "" : ": ") << update.reason;
  // As many as a refill of queued tasks takes at once (their files are made ahead, in a burst).
  if (update.state == kFinished && task.dirReusable &&
      endedTaskDirs_.size() < kMaxEndedTaskDirs + static_cast<size_t>(slots_)) {
    endedTaskDirs_.push_back(task.outputDir.parent_path());  // checked when it is taken
  }
  tasks_.erase(it);
  reportLocked(std::move(update));
}

pid_t TaskRunner::reapTaskProcess(pid_t pid, int& status, bool block) {
  if (launcher_ != nullptr) {
    // Its pidfd said it exited, so the launcher's waitpid returns at once.
    const std::optional<int> reaped = launcher_->reap(pid);
    if (!reaped) return -1;
    status = *reaped;
    return pid;
  }
  pid_t reaped;
  do {
    reaped = ::waitpid(pid, &status, block ? 0 : WNOHANG);
  } while (reaped < 0 && errno == EINTR);
  return reaped;
}

void TaskRunner::supervisorDiedLocked(int64_t taskId) {
  auto it = tasks_.find(taskId);
  if (it == tasks_.end() || it->second.slotFd < 0) return;
  RunningTask& task = it->second;
  ::close(task.slotFd);
  task.slotFd = -1;
  task.supervisorDied = true;
  log_.warn() << "task " << taskId << ": its slot supervisor died; killing the task";
  // While the leader lives (signal 0 through its pidfd, which no other process can stand for),
  // its pid is its group's id and cannot be another's: kill the group, then the leader itself.
  if (signalByPidfd(task.pidfd, 0) == 0) ::kill(-task.pid, SIGKILL);
  signalByPidfd(task.pidfd, SIGKILL);
}

void TaskRunner::wakeSupervisor() {
  const uint64_t one = 1;
  // A full counter (never in practice) still wakes the poll(), so a failed write is harmless.
  [[maybe_unused]] ssize_t ignored = ::write(wakeFd_, &one, sizeof one);
}

void TaskRunner::supervise() {
  std::vector<pollfd> watched;
  // The task of watched[i + 1], and whether that entry is its slot supervisor's socket (else
  // its pidfd).
  std::vector<std::pair<int64_t, bool>> watchedTasks;
  while (true) {
    int timeoutMs = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      watched.assign(1, pollfd{wakeFd_, POLLIN, 0});
      watchedTasks.clear();
      for (const auto& [taskId, task] : tasks_) {
        if (task.pidfd < 0) continue;
        watched.push_back(pollfd{task.pidfd, POLLIN, 0});
        watchedTasks.emplace_back(taskId, false);
        if (task.slotFd >= 0) {
          // Only a hang-up: a slot's answers to requests are read by the launcher.
          watched.push_back(pollfd{task.slotFd, POLLRDHUP, 0});
          watchedTasks.emplace_back(taskId, true);
        }
      }
      if (!timers_.empty()) {
        const TimeMs wait = timers_.begin()->first - clock_->nowMs();
        timeoutMs = static_cast<int>(std::clamp<TimeMs>(wait, 0, INT_MAX));
      }
    }
    const int ready = ::poll(watched.data(), watched.size(), timeoutMs);
    if (ready < 0 && errno != EINTR) {
      log_.error() << "task supervisor: poll failed: " << errnoText(errno);
    }
    if (watched[0].revents != 0) {
      uint64_t count = 0;
      [[maybe_unused]] ssize_t ignored = ::read(wakeFd_, &count, sizeof count);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const TimeMs now = clock_->nowMs();
      // Exits first: a task whose supervisor died after it exited is reaped, not killed.
      for (size_t i = 1; i < watched.size(); ++i) {
        const auto [taskId, isSlot] = watchedTasks[i - 1];
        if (watched[i].revents != 0 && !isSlot) reapLocked(taskId, now);
      }
      for (size_t i = 1; i < watched.size(); ++i) {
        const auto [taskId, isSlot] = watchedTasks[i - 1];
        if (watched[i].revents != 0 && isSlot) supervisorDiedLocked(taskId);
      }
      fireDueTimersLocked(now);
    }
    // A slot that freed goes to the next queued task now, not once the executor has told the
    // AM (its sync may be waiting for the AM's journal): pipelining keeps the slot busy.
    startQueued();
  }
}

}  // namespace tide::executor
