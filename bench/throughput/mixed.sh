#!/bin/bash
# Load balance under pipelining, side by side in one run: stages of command tasks of mixed
# durations on 2 one-slot executors, each run with scheduler.queuedTasksPerExecutor = 0
# (Spark's behaviour: a task only into a free slot), 4 and 32 (the default), in alternating
# rounds. Two jobs of one stage each:
#   stragglers  TASKS `sh -c` tasks that do nothing (1-2 ms on an idle machine), except that
#               every task whose index ends in 000 or 500, and the third from last, sleeps
#               200 ms, and every one ending in 250 or 750 sleeps 50 ms: tasks queued behind a
#               straggler must run on the other executor instead, or the stage waits for them.
#   phase       TASKS/2 such short tasks, then TASKS/4 of 40 ms: the stage's mean duration (what
#               decides how deep the AM queues) lags behind, so deep queues of the now longer
#               tasks wait and are handed back until it catches up.
# Prints one JSON line per round and then, per job, the medians, with
#   ratio_N = stage seconds with queuedTasksPerExecutor=N / stage seconds with 0
# (under 1: faster than Spark's behaviour; over 1: the queue hurts), and launches_per_task_N:
# the launches the executors got (their trace lines, from one more untimed run per depth with
# log.level=trace) per task of the stage; above 1, queued tasks went back unstarted and were
# handed out again (churn: a launch record, a reply entry and, for a command task, its files
# made ahead for nothing).
#
#   bench/throughput/mixed.sh [BUILD_DIR] [TASKS] [ROUNDS]
# TIDE_CONF="key=value ..." adds settings to every run (e.g. am.stagingDir=none: no journal).
set -euo pipefail
BUILD=${1:-build}
TASKS=${2:-2000}
ROUNDS=${3:-3}
DEPTHS=(0 4 32)
source "$(dirname "$0")/common.sh"

cat > "$WORK/stragglers.json" <<JOB
{"name": "stragglers", "stages": [{"id": "stragglers", "tasks": $TASKS, "command": ["sh", "-c",
  "case {task} in *[05]00|$((TASKS - 3))) sleep 0.2;; *[27]50) sleep 0.05;; esac"]}]}
JOB
cat > "$WORK/phase.json" <<JOB
{"name": "phase", "stages": [{"id": "phase", "tasks": $((TASKS / 2 + TASKS / 4)),
  "command": ["sh", "-c", "if [ {task} -ge $((TASKS / 2)) ]; then sleep 0.04; fi"]}]}
JOB

# The containers' logs go to $WORK, not to .tide/ in the directory this runs in.
run_job() {
  local job=$1 depth=$2 level=$3
  rm -rf "$WORK/logs"
  fixed_run "$WORK/$job.json" 2 1 --conf log.level="$level" --conf nm.logDir="$WORK/logs" \
    --conf scheduler.queuedTasksPerExecutor="$depth" >/dev/null 2>&1
}

stage_seconds() {
  run_job "$1" "$2" warn
  report_stage_seconds
}

# Launches per task: the executors' "sync: ... got N launches" lines (not the AM's, *_000001).
launches_per_task() {
  run_job "$1" "$2" trace
  python3 - "$WORK/logs" "$WORK/tide.json" <<'PY'
import glob, json, re, sys
launches = 0
for path in glob.glob(sys.argv[1] + "/*/container_*/stderr"):
    if path.split("/")[-2].endswith("_000001"):
        continue
    with open(path, errors="replace") as log:
        launches += sum(int(n) for n in re.findall(r"sync: reported \d+, got (\d+) launches", log.read()))
tasks = json.load(open(sys.argv[2]))["stages"][0]["tasks"]
print(round(launches / tasks, 3))
PY
}

declare -A times
for round in $(seq 1 "$ROUNDS"); do
  for job in stragglers phase; do
    line="{\"round\": $round, \"job\": \"$job\""
    for depth in "${DEPTHS[@]}"; do
      s=$(stage_seconds "$job" "$depth")
      times[$job.$depth]="${times[$job.$depth]:-} $s"
      line+=", \"seconds_$depth\": $s"
    done
    echo "$line}"
  done
done
for job in stragglers phase; do
  per_task=""
  for depth in "${DEPTHS[@]}"; do per_task+=" $(launches_per_task "$job" "$depth")"; done
  python3 - "$job" "$TASKS" "${times[$job.0]}" "${times[$job.4]}" "${times[$job.32]}" \
    "$per_task" <<'PY'
import json, statistics, sys
depths = (0, 4, 32)
medians = {depth: statistics.median(float(v) for v in sys.argv[3 + i].split())
           for i, depth in enumerate(depths)}
out = {"job": sys.argv[1], "tasks_arg": int(sys.argv[2]), "executors": 2, "slots_per_executor": 1}
for depth, seconds in medians.items():
    out[f"median_seconds_{depth}"] = seconds
for depth in (4, 32):
    out[f"ratio_{depth}"] = round(medians[depth] / medians[0], 3)
for depth, per_task in zip(depths, sys.argv[6].split()):
    out[f"launches_per_task_{depth}"] = float(per_task)
print(json.dumps(out))
PY
done
