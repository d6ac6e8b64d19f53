#pragma once

// The ApplicationMaster's Prometheus metrics (GET /metrics): the families and the children
// the loops update. Gauges are refreshed once per allocation tick, counters and histograms
// where the event happens, so that rendering /metrics never needs the AM's mutex.

#include <map>
#include <string>

#include "common/metrics.h"

namespace tide::am {

struct AmMetrics {
  AmMetrics();

  metrics::Registry registry;  // first: the references below point into it

  metrics::GaugeFamily& executors;  // state: busy, idle, pending, pending_removal
  metrics::Gauge& targetExecutors;
  metrics::Gauge& maxNeededExecutors;
  metrics::Gauge& minExecutors;
  metrics::Gauge& maxExecutors;
  metrics::GaugeFamily& tasks;             // state: pending, running
  metrics::CounterFamily& tasksCompleted;  // outcome: succeeded, failed, killed
  metrics::Counter& tasksSucceeded;        // children of tasksCompleted, looked up once:
  metrics::Counter& tasksFailed;           // a task's end costs one atomic add
  metrics::Counter& tasksKilled;
  metrics::HistogramFamily& taskDuration;    // seconds, per finished task
  metrics::HistogramFamily& tickDuration;    // seconds, per allocation tick
  metrics::CounterFamily& decisions;         // action: raise_target, remove, ...
  metrics::CounterFamily& executorFailures;  // cause: exit, memory, launch, heartbeat, ...
  metrics::CounterFamily& rmRequests;        // call, outcome: ok, error
  // reason (Spark's SPARK-33763 counters): gracefully_decommissioned, decommission_unfinished,
  // driver_killed, exited_unexpectedly.
  metrics::CounterFamily& executorsRemoved;
  metrics::HistogramFamily& rmRequestDuration;  // call
  // kind: resident, resident_anon, resident_file, heap_in_use, heap_free (common/process_memory.h)
  metrics::GaugeFamily& memory;
  metrics::Gauge& uptimeSeconds;

  // Children the loops update, looked up once: an update is then one atomic operation and
  // never waits for a family's mutex (which /metrics takes, from a low-priority thread).
  metrics::Gauge& executorsBusy;
  metrics::Gauge& executorsIdle;
  metrics::Gauge& executorsPending;
  metrics::Gauge& executorsPendingRemoval;
  metrics::Gauge& executorsDecommissioning;
  metrics::Counter& executorsGracefullyDecommissioned;
  metrics::Counter& executorsDecommissionUnfinished;
  metrics::Counter& executorsDriverKilled;
  metrics::Counter& executorsExitedUnexpectedly;
  metrics::Gauge& tasksPending;
  metrics::Gauge& tasksRunning;
  metrics::Histogram& taskDurationSeconds;
  metrics::Histogram& tickDurationSeconds;

  metrics::Histogram& taskDurationAll() { return taskDurationSeconds; }
  // The decisions counter of an action; from the allocation loop only (under the AM's
  // mutex), so that only an action's first decision takes the family's mutex.
  metrics::Counter& decisionCounter(const std::string& action) {
    auto it = decisionCounters_.find(action);
    if (it == decisionCounters_.end()) {
      it = decisionCounters_.emplace(action, &decisions.labels({action})).first;
    }
    return *it->second;
  }
  metrics::Histogram& tickDurationAll() { return tickDurationSeconds; }
  // Sets the memory gauges from /proc and malloc; when /metrics is rendered, not per tick.
  void refreshMemory() const;

 private:
  std::map<std::string, metrics::Counter*> decisionCounters_;
};

}  // namespace tide::am
