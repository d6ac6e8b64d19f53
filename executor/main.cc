// tide-executor: runs a job's tasks for its application master. Started by a node manager in a
// container whose environment says where the AM is (TIDE_AM_ADDRESS) and who this executor is
// (TIDE_EXECUTOR_ID, TIDE_CONTAINER_ID, TIDE_APP_SECRET).

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "common/child_process.h"  // selfDirectory
#include "common/command_line.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "executor/block_fetcher.h"
#include "executor/block_migrator.h"
#include "executor/block_server.h"
#include "executor/block_store.h"
#include "executor/executor_backend.h"
#include "executor/executor_settings.h"
#include "executor/task_runner.h"

namespace {

using namespace tide;

// SIGTERM and SIGINT are taken by one thread with sigwait() instead of a handler, so that
// stopping may lock and log (tasks get an empty mask from posix_spawn); SIGUSR1 ends that
// thread. SIGPWR asks for graceful decommissioning (Spark's executor, with
// decommission.enabled): it is told to the AM, which decides.
sigset_t takeOverSignals() {
  // A task's or the AM's closed pipe must be an error code, not the end of the executor.
  ::signal(SIGPIPE, SIG_IGN);
  return blockSignals({SIGTERM, SIGINT, SIGUSR1, SIGPWR});
}

executor::BlockFetcherOptions fetcherOptionsFor(const executor::ExecutorSettings& settings) {
  executor::BlockFetcherOptions fetcherOptions;
  fetcherOptions.executorId = settings.executorId;
  fetcherOptions.appSecret = settings.appSecret;
  fetcherOptions.caFile = settings.tls.caFile;
  return fetcherOptions;
}

// Exactly-once outputs: only the attempt the AM authorises keeps its output (as blocks and in
// the job's output directory); any other discards it. An attempt that wrote no blocks has
// nothing to keep and does not ask: that round trip to the AM was most of what a short command
// task cost. Nor does it touch the blocks an earlier attempt of its task left here.
std::vector<rest::BlockOutput> commitTaskOutputs(executor::BlockStore& blocks,
                                                 executor::ExecutorBackend* backend,
                                                 const executor::TaskOutputOwner& owner,
                                                 const std::filesystem::path& outputDir) {
  if (!executor::BlockStore::holdsBlocks(outputDir)) return std::vector<rest::BlockOutput>{};
  const std::string denied = backend == nullptr ? "the executor is not connected to its AM"
                                                : backend->askToCommit(owner.taskId);
  if (!denied.empty()) throw executor::CommitDenied(denied);
  std::vector<rest::BlockOutput> kept =
      blocks.commit(owner.jobId, owner.stageId, owner.index, outputDir);
  if (!owner.collectDir.empty()) {
    blocks.collect(owner.jobId, owner.stageId, owner.index, kept, owner.collectDir);
  }
  return kept;
}

// `backendForCommits` is set once the backend exists; tasks only run after it does.
executor::TaskRunnerOptions runnerOptionsFor(const executor::ExecutorSettings& settings,
                                             executor::BlockStore& blocks,
                                             executor::BlockFetcher& fetcher,
                                             executor::ExecutorBackend*& backendForCommits) {
  executor::TaskRunnerOptions runnerOptions;
  runnerOptions.slots = settings.taskSlots();
  runnerOptions.logDir = settings.logDir;
  runnerOptions.environment = executor::currentEnvironment();
  // Every command task runs below a supervisor: nothing it starts outlives it or us.
  runnerOptions.supervisorPath = selfDirectory() + "/tide-container";
  if (::access(runnerOptions.supervisorPath.c_str(), X_OK) != 0) {
    throw std::runtime_error("the task supervisor " + runnerOptions.supervisorPath +
                             " is missing or not executable");
  }
  runnerOptions.fetchInputs = [&fetcher](const std::vector<rest::BlockInput>& inputs,
                                         const std::filesystem::path& inputDir) {
    return fetcher.fetchAll(inputs, inputDir);
  };
  runnerOptions.commitOutputs = [&blocks, &backendForCommits](
                                    const executor::TaskOutputOwner& owner,
                                    const std::filesystem::path& outputDir) {
    return commitTaskOutputs(blocks, backendForCommits, owner, outputDir);
  };
  return runnerOptions;
}

int runExecutor(const CommandLine& cli) {
  initLogging(cli.properties());
  warnUnknownKeys(cli.properties());
  executor::ExecutorSettings settings = executor::readExecutorSettings(
      cli.properties(), executor::processEnvironment(), cli.option("am"));
  // Read once, then gone from this process's environment: no task can inherit it, however it
  // is started.
  ::unsetenv(executor::kAppSecretEnv);
  const sigset_t stopSignals = takeOverSignals();

  // Blocks live in the container's directory, so the node manager's cleanup of the container
  // takes them too.
  executor::BlockStore blocks(std::filesystem::current_path() / "blocks");
  executor::BlockServer blockServer(blocks, settings.appSecret, settings.host, settings.tls);
  settings.blockPort = blockServer.start();
  Logger("executor").info() << "serving blocks at " << blockServer.baseUrl();
  executor::BlockFetcher fetcher(blocks, fetcherOptionsFor(settings));

  executor::ExecutorBackend* backendForCommits = nullptr;
  executor::TaskRunner runner(runnerOptionsFor(settings, blocks, fetcher, backendForCommits));
  executor::ExecutorBackend backend(std::move(settings), runner, &blocks);
  backendForCommits = &backend;
  executor::BlockMigrator migrator(blocks, fetcher);
  backend.setMigrate(
      [&migrator](const rest::BlockMigration& migration) { return migrator.migrate(migration); });
  // Declared after the backend, so that it is gone (joined) before the backend is.
  const SignalThread stopOnSignal(stopSignals, SIGUSR1, [&backend](int signal) {
    if (signal == SIGPWR) {
      backend.requestDecommission();
      return true;
    }
    backend.requestStop(std::string("stopped by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT"));
    return true;
  });
  const int status = backend.run();
  flushLogs();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine cli("tide-executor",
                  "Runs a job's tasks for its application master. Reads TIDE_AM_ADDRESS, "
                  "TIDE_APP_SECRET, TIDE_EXECUTOR_ID and TIDE_CONTAINER_ID from the environment.");
  cli.addOption("am", "URL", "The AM's address, http://host:port (overrides TIDE_AM_ADDRESS)");
  cli.showConfigKeys({"executor.", "task.", "network.", "tls.", "log."});
  return parseAndRun(
      cli, argc, argv, [&]() -> int { return runExecutor(cli); }, "tide-executor");
}
