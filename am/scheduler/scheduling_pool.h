#pragma once

// Scheduling between jobs (Spark's Pool and SchedulingAlgorithm). FIFO: one queue, ordered by
// job submission, then stage submission. FAIR: jobs name a pool; pools share the executors by
// Spark's FairSchedulingAlgorithm (a pool below its minShare first, the neediest by
// running/minShare; then the pool with the fewest running tasks per unit of weight), and
// within a pool its TaskSets are ordered by the pool's own mode. Pools come from the file named
// by scheduler.allocation.file, either Spark's fairscheduler.xml:
//
//   <allocations>
//     <pool name="etl"><schedulingMode>FAIR</schedulingMode><weight>3</weight>
//       <minShare>2</minShare></pool>
//   </allocations>
//
// or properties: "pool.etl.weight 3", "pool.etl.minShare 2", "pool.etl.schedulingMode FAIR".
// A pool a job names that the file does not define gets the defaults (FIFO, weight 1,
// minShare 0), as in Spark. Pure functions.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tide::am {

enum class SchedulingMode { kFifo, kFair };
const char* schedulingModeName(SchedulingMode mode);  // "FIFO", "FAIR"

inline constexpr char kDefaultPoolName[] = "default";

struct PoolConfig {
  std::string name;
  SchedulingMode mode = SchedulingMode::kFifo;  // between the pool's own TaskSets
  int weight = 1;
  int minShare = 0;
};

// Throws ConfigError naming the file and what is wrong in it.
std::vector<PoolConfig> loadPoolsFile(const std::string& path);
// `source` names the text in errors.
std::vector<PoolConfig> parsePoolsXml(std::string_view xml, const std::string& source);
std::vector<PoolConfig> parsePoolsProperties(std::string_view text, const std::string& source);

// What FairSchedulingAlgorithm looks at in a pool or TaskSet.
struct FairShareState {
  int64_t runningTasks = 0;
  int minShare = 0;
  int weight = 1;
  std::string name;  // the tie-breaker
};

// Spark's FairSchedulingAlgorithm.comparator: whether `a` should be offered resources first.
bool fairSchedulingBefore(const FairShareState& a, const FairShareState& b);

}  // namespace tide::am
