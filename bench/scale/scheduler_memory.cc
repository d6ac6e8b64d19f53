// The AM's task-keeping state against tasks completed, in process, for stages too large to run
// through real executors here (10^8 noop tasks at the end-to-end rate of this machine would take
// hours): the AM's task scheduler, its allocation policy behind the scheduler's listener bus,
// and its recovery journal with compaction, driven as the AM drives them (offers from two
// executors of 16 slots, each launch journaled, each success committed and journaled, one
// fdatasync per executor's round as for the AM's reply to a sync), without the HTTP round trips.
//
//   build/bin/scheduler_memory [TASKS] [OUT.csv] [SYNC_EVERY]
//
// (defaults 100000000, scheduler_memory.csv, 1). SYNC_EVERY: fdatasync the journal once every
// that many executor rounds (1: each round, as the AM does; more: faster, for large TASKS).
//
// Prints and writes, at each power of ten of completions and every 10^7, the process's VmRSS
// and the journal's size on disk. Not a test: run it by hand (bench/README.md, "Scale").

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "allocation/executor_allocation_manager.h"
#include "am/allocation_listener.h"
#include "am/recovery/recovery_journal.h"
#include "am/scheduler/task_scheduler.h"
#include "common/config.h"

namespace {

long residentKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tide;
  const int64_t tasks = argc > 1 ? std::stoll(argv[1]) : 100000000;
  const std::string out = argc > 2 ? argv[2] : "scheduler_memory.csv";
  const int64_t syncEvery = argc > 3 ? std::max<int64_t>(1, std::stoll(argv[3])) : 1;
  int64_t rounds = 0;
  char dirTemplate[] = "/tmp/tide-scheduler-memory-XXXXXX";
  const char* dir = ::mkdtemp(dirTemplate);
  if (dir == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }

  SystemClock clock;
  allocation::AllocationConfig allocationConfig;
  allocationConfig.bounds = {0, 2, 2};
  allocationConfig.executorCores = 16;
  allocation::ExecutorAllocationManager policy(allocationConfig, clock);
  am::AllocationListener bridge(policy);
  // The AM's defaults, as from an empty properties file.
  am::TaskScheduler scheduler(am::SchedulerConfig::fromProperties(Properties()), clock, 1);
  scheduler.subscribe(bridge);
  am::RecoveryJournal journal(std::string(dir) + "/app", am::kDefaultJournalCompactionBytes,
                              [&](const am::JournalCompaction& done) {
                                std::cout << "compaction: " << (done.ok ? "" : done.error + " ")
                                          << done.bytesBefore << " -> " << done.bytesAfter
                                          << " bytes, " << done.commitsFolded
                                          << " commits folded, in " << done.foldMs << " ms + fsync "
                                          << done.syncMs << " ms" << std::endl;
                              });
  journal.doneReplaying();
  policy.onExecutorAdded("e1");
  policy.onExecutorAdded("e2");

  const std::string jobJson = R"({"name":"scale","stages":[{"id":"all","tasks":)" +
                              std::to_string(tasks) + R"(,"builtin":"noop"}]})";
  const std::string jobId = scheduler.submitJob(am::parseJob(jobJson));
  journal.append(am::JournalRecord::jobAccepted(jobId, jobJson));

  std::ofstream csv(out);
  csv << "seconds,succeeded,rss_kib,journal_bytes\n";
  const auto started = std::chrono::steady_clock::now();
  int64_t succeeded = 0;
  int64_t nextReport = 1;
  auto report = [&] {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const uint64_t journalBytes = journal.fileBytes();
    csv << seconds << "," << succeeded << "," << residentKib() << "," << journalBytes << "\n";
    csv.flush();
    std::cout << succeeded << " done in " << seconds << " s: VmRSS " << residentKib()
              << " KiB, journal " << journalBytes << " bytes (" << journal.compactions()
              << " compactions)" << std::endl;
  };
  report();
  while (!scheduler.allJobsDone()) {
    for (const char* executor : {"e1", "e2"}) {
      const auto launches = scheduler.resourceOffers({am::WorkerOffer{executor, "n1", 16}});
      for (const rest::TaskLaunch& launch : launches) {
        journal.append(am::JournalRecord::taskLaunched(launch.taskId, launch.jobId, launch.stageId,
                                                       launch.index, launch.attempt, executor));
      }
      for (const rest::TaskLaunch& launch : launches) {
        rest::TaskStatusUpdate done;
        done.taskId = launch.taskId;
        done.state = rest::TaskState::kFinished;
        done.durationMs = 1;
        std::optional<am::CommittedTask> committed;
        scheduler.statusUpdate(done, executor, &committed);
        if (committed) {
          journal.append(am::JournalRecord::taskCommitted(
              launch.taskId, committed->jobId, committed->stageId, committed->index,
              committed->attempt, executor, committed->node, 1, {}));
        }
        ++succeeded;
        if (succeeded == nextReport || succeeded % 10000000 == 0) {
          report();
          if (succeeded == nextReport) nextReport *= 10;
        }
      }
      // As the AM's reply to an executor's sync: its commits are fsync'd first.
      if (++rounds % syncEvery == 0) journal.sync();
    }
    policy.tick();
  }
  report();
  journal.remove();
  std::filesystem::remove_all(dir);
  return 0;
}
