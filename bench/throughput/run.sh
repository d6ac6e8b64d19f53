#!/bin/bash
# Scheduler throughput, side by side in one run: 100,000 no-op tasks through tide's AM to 2
# executors, and through Dask distributed (LocalCluster, 2 worker processes) on the same
# machine. Also the AM's resident memory with a 1,000,000-task stage queued.
#
#   bench/throughput/run.sh [BUILD_DIR] [TASKS] [SLOTS]
# Environment: TIDE_CONF="key=value ..." adds settings to tide's run (e.g.
# scheduler.queuedTasksPerExecutor=0 for no pipelining); DASK_TASKS runs Dask on that many tasks
# instead of TASKS (its rate does not depend on the count, and 100,000 take it minutes).
# Needs Debian's python3-distributed (apt-get install python3-distributed).
set -euo pipefail
BUILD=${1:-build}
TASKS=${2:-100000}
SLOTS=${3:-1}
DASK_TASKS=${DASK_TASKS:-$TASKS}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

cat > "$WORK/noop.json" <<JOB
{"name": "noop", "stages": [{"id": "noop", "tasks": $TASKS, "builtin": "noop"}]}
JOB

# Two executors from the start, no scaling, so that only the scheduler is measured.
fixed_run "$WORK/noop.json" 2 "$SLOTS" 2>/dev/null
tide_seconds=$(report_stage_seconds)
tide_rate=$(python3 -c "print(round($TASKS / $tide_seconds, 1))")

dask=$(/usr/bin/python3 "$HERE/dask_noop.py" "$DASK_TASKS" "$SLOTS" 2>/dev/null)
dask_rate=$(python3 -c "import json; print(json.loads('''$dask''')['tasks_per_second'])")

echo "{\"tasks\": $TASKS, \"dask_tasks\": $DASK_TASKS, \"slots_per_executor\": $SLOTS, \"tide_tasks_per_second\": $tide_rate, \"dask_tasks_per_second\": $dask_rate, \"ratio\": $(python3 -c "print(round($tide_rate / $dask_rate, 1))")}"

# The AM's memory with a 1,000,000-task stage queued (one idle-ish executor, long tasks).
cat > "$WORK/big.json" <<JOB
{"name": "big", "stages": [{"id": "big", "tasks": 1000000, "builtin": "sleep", "sleep_ms": 60000}]}
JOB
cat > "$WORK/small.json" <<JOB
{"name": "small", "stages": [{"id": "small", "tasks": 10, "builtin": "sleep", "sleep_ms": 60000}]}
JOB
am_rss_kib() {
  local job=$1
  "$TIDE" run "$job" --conf dynamicAllocation.maxExecutors=1 --conf executor.memory=256m \
    --conf am.memory=256m --conf log.level=warn >/dev/null 2>&1 &
  local run=$!
  local pid="" rss=""
  for _ in $(seq 1 200); do
    pid=$(pgrep -n -f "tide-am --job $job" || true)
    if [ -n "$pid" ]; then
      rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      # Queued and one task running on the executor: settled.
      [ -n "$rss" ] && sleep 2 && rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status") && break
    fi
    sleep 0.1
  done
  kill -INT "$run" 2>/dev/null || true
  wait "$run" 2>/dev/null || true
  echo "$rss"
}
small=$(am_rss_kib "$WORK/small.json")
big=$(am_rss_kib "$WORK/big.json")
echo "{\"am_rss_kib_10_tasks\": $small, \"am_rss_kib_1000000_tasks\": $big}"
