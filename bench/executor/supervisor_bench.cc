// What starting a command task's process costs, side by side in one run (one at a time, wall
// time per task, each ending with `true` exiting and being reaped):
//   BareSpawn           posix_spawn of `true` and waitpid: what xargs pays
//   ExecdSupervisor     `tide-container --die-with-parent .. -- true` exec'd per task
//   SlotSupervisor      below a slot supervisor of the executor's launcher, kept from task to
//                       task (executor/supervisor_launcher.h), watched by pidfd, reaped by it
// Run: build/bin/supervisor_bench  (compare the three `Time` columns)

#include <benchmark/benchmark.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/pidfd.h"
#include "common/spawn.h"
#include "executor/supervisor_launcher.h"

namespace tide::executor {
namespace {

constexpr char kTrue[] = "/bin/true";
constexpr char kSupervisor[] = TIDE_BIN_DIR "/tide-container";

int waitStatusOf(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  return status;
}

void BM_BareSpawn(benchmark::State& state) {
  SpawnOptions spawn;
  spawn.argv = {kTrue};
  for (auto _ : state) benchmark::DoNotOptimize(waitStatusOf(spawnProcess(spawn)));
}
BENCHMARK(BM_BareSpawn)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ExecdSupervisor(benchmark::State& state) {
  SpawnOptions spawn;
  spawn.argv = {kSupervisor, "--die-with-parent", std::to_string(::getpid()), "--", kTrue};
  spawn.grouping = ProcessGrouping::kNewProcessGroup;
  for (auto _ : state) benchmark::DoNotOptimize(waitStatusOf(spawnProcess(spawn)));
}
BENCHMARK(BM_ExecdSupervisor)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_SlotSupervisor(benchmark::State& state) {
  SupervisorLauncher launcher(kSupervisor, {});
  LaunchRequest request;
  request.argv = {kTrue};
  request.workDir = "/";
  for (auto _ : state) {
    const pid_t pid = launcher.launch(request, STDOUT_FILENO, STDERR_FILENO);
    const int pidfd = tide::openPidfd(pid);
    pollfd exited{pidfd, POLLIN, 0};
    while (::poll(&exited, 1, -1) < 0) {
    }
    ::close(pidfd);
    benchmark::DoNotOptimize(launcher.reap(pid));
  }
}
BENCHMARK(BM_SlotSupervisor)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace tide::executor

BENCHMARK_MAIN();
