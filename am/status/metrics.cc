#include "am/status/metrics.h"

#include <cstdint>
#include <utility>

#include "common/process_memory.h"

namespace tide::am {
namespace {

// The memory family's kinds and where ProcessMemory has each.
constexpr std::pair<const char*, int64_t ProcessMemory::*> kMemoryKinds[] = {
    {"resident", &ProcessMemory::residentBytes},
    {"resident_anon", &ProcessMemory::residentAnonBytes},
    {"resident_file", &ProcessMemory::residentFileBytes},
    {"heap_in_use", &ProcessMemory::heapInUseBytes},
    {"heap_free", &ProcessMemory::heapFreeBytes},
};

}  // namespace

AmMetrics::AmMetrics()
    : executors(registry.gauge("tide_executors",
                               "Executors by state: busy (running tasks), idle, pending "
                               "(requested or starting) and pending_removal (being released)",
                               {"state"})),
      targetExecutors(registry
                          .gauge("tide_allocation_target_executors",
                                 "The executors the allocation policy wants in total")
                          .get()),
      maxNeededExecutors(registry
                             .gauge("tide_allocation_max_needed_executors",
                                    "Executors needed to run every pending and running task "
                                    "at once")
                             .get()),
      minExecutors(
          registry.gauge("tide_allocation_min_executors", "dynamicAllocation.minExecutors").get()),
      maxExecutors(
          registry.gauge("tide_allocation_max_executors", "dynamicAllocation.maxExecutors").get()),
      tasks(registry.gauge("tide_tasks", "Tasks by state: pending (ready to run) and running",
                           {"state"})),
      tasksCompleted(registry.counter(
          "tide_tasks_completed_total",
          "Task attempts that ended, by outcome: succeeded, failed (retried unless it was the "
          "last allowed attempt) or killed (at the scheduler's request)",
          {"outcome"})),
      tasksSucceeded(tasksCompleted.labels({"succeeded"})),
      tasksFailed(tasksCompleted.labels({"failed"})),
      tasksKilled(tasksCompleted.labels({"killed"})),
      // Tasks run from a millisecond to hours: 1ms .. ~4.6h in powers of 4.
      taskDuration(registry.histogram("tide_task_duration_seconds",
                                      "How long finished task attempts ran, as executors report",
                                      metrics::exponentialBuckets(0.001, 4, 12))),
      // A tick should take microseconds; anything near the 100ms interval is a problem.
      tickDuration(registry.histogram("tide_allocation_tick_duration_seconds",
                                      "Time one allocation tick took (policy and its actions)",
                                      metrics::exponentialBuckets(0.00001, 4, 10))),
      decisions(registry.counter("tide_allocation_decisions_total",
                                 "Allocation decisions made, by action", {"action"})),
      executorFailures(registry.counter(
          "tide_executor_failures_total",
          "Executors lost other than by the application master's own release, by cause: exit, "
          "memory, launch, heartbeat_timeout, preempted, node_lost, killed",
          {"cause"})),
      rmRequests(registry.counter("tide_rm_requests_total",
                                  "Calls to the resource manager by call (register, allocate, "
                                  "launch, unregister) and outcome (ok, error)",
                                  {"call", "outcome"})),
      executorsRemoved(registry.counter(
          "tide_allocation_executors_removed_total",
          "Executors gone, by reason (Spark's SPARK-33763 counters): gracefully_decommissioned "
          "(after handing over its blocks), decommission_unfinished (gone while decommissioning, "
          "or forced out), driver_killed (released by the policy without decommissioning), "
          "exited_unexpectedly (lost, exited, excluded)",
          {"reason"})),
      rmRequestDuration(registry.histogram("tide_rm_request_duration_seconds",
                                           "Latency of calls to the resource manager",
                                           metrics::exponentialBuckets(0.0005, 2, 14), {"call"})),
      // The kinds: common/process_memory.h.
      memory(registry.gauge("tide_application_master_memory_bytes",
                            "This application master's memory by kind: resident, resident_anon, "
                            "resident_file, heap_in_use, heap_free (kept by malloc)",
                            {"kind"})),
      uptimeSeconds(registry
                        .gauge("tide_application_master_uptime_seconds",
                               "Seconds since this application master started")
                        .get()),
      executorsBusy(executors.labels({"busy"})),
      executorsIdle(executors.labels({"idle"})),
      executorsPending(executors.labels({"pending"})),
      executorsPendingRemoval(executors.labels({"pending_removal"})),
      executorsDecommissioning(executors.labels({"decommissioning"})),
      executorsGracefullyDecommissioned(executorsRemoved.labels({"gracefully_decommissioned"})),
      executorsDecommissionUnfinished(executorsRemoved.labels({"decommission_unfinished"})),
      executorsDriverKilled(executorsRemoved.labels({"driver_killed"})),
      executorsExitedUnexpectedly(executorsRemoved.labels({"exited_unexpectedly"})),
      tasksPending(tasks.labels({"pending"})),
      tasksRunning(tasks.labels({"running"})),
      taskDurationSeconds(taskDuration.get()),
      tickDurationSeconds(tickDuration.get()) {
  // Every series a dashboard expects exists from the start, at zero.
  for (const char* cause : {"exit", "memory", "launch", "heartbeat_timeout"}) {
    executorFailures.labels({cause});
  }
  for (const auto& [kind, field] : kMemoryKinds) memory.labels({kind});
  for (const char* call : {"register", "allocate", "launch", "unregister"}) {
    rmRequests.labels({call, "ok"});
    rmRequests.labels({call, "error"});
    rmRequestDuration.labels({call});
  }
}

void AmMetrics::refreshMemory() const {
  const ProcessMemory now = readProcessMemory();
  for (const auto& [kind, field] : kMemoryKinds) {
    memory.labels({kind}).set(static_cast<double>(now.*field));
  }
}

}  // namespace tide::am
