#pragma once

// What the load generators (rm_load, executor_load) report beside their own figures: the CPU,
// memory and threads of the process under load from /proc, their own CPU (so that it is plain
// which side saturates), and latency percentiles.

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "rest/json.h"

namespace tide::bench {

struct ProcessSample {
  double cpuSeconds = 0;   // utime + stime
  int64_t rssKib = 0;      // VmRSS
  int64_t peakRssKib = 0;  // VmHWM
  int threads = 0;
};

// From /proc/<pid>/stat and /proc/<pid>/status; zeros for what cannot be read.
ProcessSample sampleProcess(pid_t pid);

// This process's own CPU time, utime + stime.
double selfCpuSeconds();

// Latencies in ms: how many, and their p50, p99 and max by nearest rank (0 without samples).
struct Latencies {
  int64_t count = 0;
  double p50 = 0;
  double p99 = 0;
  double max = 0;
};

Latencies latenciesOf(std::vector<double> ms);

// {"count", "p50", "p99", "max"} under `name`; without samples only the count.
void writeLatencies(rest::JsonWriter& w, const char* name, const Latencies& latencies);

}  // namespace tide::bench
