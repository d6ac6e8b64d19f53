// Noop tasks per second through one real tide-executor process, fed by the executor tests'
// in-process AM (tests/executor/fake_am.h) on loopback: the executor's own overhead per task
// (sync round trips, slot bookkeeping, updates), without the real AM's scheduling.
//
// Each iteration starts a fresh executor with SLOTS task slots, hands it TASKS noop tasks and
// times the first launch to the last update. The tests check that every task finishes exactly
// once (tests/executor/tide_executor_test.cc); this only measures how fast.
// Run: build/bin/executor_bench  (`tasks` is tasks per second; aim: thousands per second)

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "tests/executor/fake_am.h"

namespace tide::executor {
namespace {

using testing::FakeAm;

// A fresh working directory for the executors (they keep their files in their cwd).
std::filesystem::path makeWorkDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tide-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::vector<rest::TaskLaunch> noopTasks(int count) {
  std::vector<rest::TaskLaunch> launches(count);
  for (int i = 0; i < count; ++i) {
    launches[i].taskId = i;
    launches[i].jobId = "j1";
    launches[i].stageId = "s1";
    launches[i].index = i;
    launches[i].kind = "noop";
  }
  return launches;
}

void BM_NoopTasksThroughOneExecutor(benchmark::State& state) {
  const int slots = static_cast<int>(state.range(0));
  const int count = static_cast<int>(state.range(1));
  const std::filesystem::path workDir = makeWorkDir();
  const std::filesystem::path previousDir = std::filesystem::current_path();
  std::filesystem::current_path(workDir);
  int64_t tasks = 0;
  double busySeconds = 0;
  for (auto _ : state) {
    FakeAm am(FakeAm::Options{"bench-secret", 200, slots});
    ChildSpec spec;
    spec.argv = {TIDE_BIN_DIR "/tide-executor", "--conf", "executor.cores=" + std::to_string(slots),
                 "--conf", "log.level=warn"};
    spec.environment = {{"TIDE_AM_ADDRESS", am.url()},
                        {"TIDE_APP_SECRET", "bench-secret"},
                        {"TIDE_EXECUTOR_ID", "e1"},
                        {"TIDE_CONTAINER_ID", "container_e1"}};
    spec.logPath = (workDir / "executor.log").string();
    ChildProcess executor(spec);
    am.addTasks(noopTasks(count));
    const bool done = am.waitFor([&] { return am.updateCount >= static_cast<size_t>(count); },
                                 std::chrono::minutes(5));
    const double seconds =
        std::chrono::duration<double>(am.lastUpdateAt - am.firstLaunchAt).count();
    am.shutdownExecutors();
    executor.waitFor(std::chrono::seconds(10));
    if (!done) {
      state.SkipWithError("the executor did not finish its tasks (see executor.log)");
      break;
    }
    state.SetIterationTime(seconds);
    tasks += count;
    busySeconds += seconds;
  }
  // Tasks per second of the timed spans (a kIsRate counter would divide by CPU time).
  state.counters["tasks"] = busySeconds > 0 ? static_cast<double>(tasks) / busySeconds : 0;
  std::filesystem::current_path(previousDir);
  std::error_code ignored;
  std::filesystem::remove_all(workDir, ignored);
}
BENCHMARK(BM_NoopTasksThroughOneExecutor)
    ->ArgNames({"slots", "tasks"})
    ->Args({1, 20000})
    ->Args({8, 20000})
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tide::executor

BENCHMARK_MAIN();
