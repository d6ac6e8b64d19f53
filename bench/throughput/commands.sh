#!/bin/bash
# Command tasks against xargs -P, side by side in one run: TASKS tasks running `true` through
# tide (`tide run`, PARALLELISM one-slot executors, dynamic allocation off, the stage's duration
# from --report) and `seq TASKS | xargs -P PARALLELISM -n1 true` (wall time), in alternating
# rounds. Prints one JSON line per round and the medians, with
#   ratio = xargs seconds / tide seconds   (1.0: as fast as xargs; the aim is at least 0.9)
#
#   bench/throughput/commands.sh [BUILD_DIR] [TASKS] [PARALLELISM] [ROUNDS]
# TIDE_CONF="key=value ..." adds settings to tide's run (e.g. am.stagingDir=none: no journal).
set -euo pipefail
BUILD=${1:-build}
TASKS=${2:-3000}
PARALLELISM=${3:-2}
ROUNDS=${4:-3}
source "$(dirname "$0")/common.sh"

cat > "$WORK/true.json" <<JOB
{"name": "true", "stages": [{"id": "true", "tasks": $TASKS, "command": ["true"]}]}
JOB

now() { python3 -c 'import time; print(time.monotonic())'; }

tide_seconds() {
  fixed_run "$WORK/true.json" "$PARALLELISM" 1 >/dev/null 2>&1
  report_stage_seconds
}

xargs_seconds() {
  local start end
  start=$(now)
  seq "$TASKS" | xargs -P "$PARALLELISM" -n1 true
  end=$(now)
  python3 -c "print(round($end - $start, 3))"
}

tides=()
xargses=()
for round in $(seq 1 "$ROUNDS"); do
  x=$(xargs_seconds)
  t=$(tide_seconds)
  tides+=("$t")
  xargses+=("$x")
  echo "{\"round\": $round, \"tasks\": $TASKS, \"parallelism\": $PARALLELISM, \"tide_seconds\": $t, \"xargs_seconds\": $x, \"ratio\": $(python3 -c "print(round($x / $t, 2))")}"
done
python3 - "${tides[*]}" "${xargses[*]}" "$TASKS" "$PARALLELISM" <<'PY'
import json, statistics, sys
tide = [float(v) for v in sys.argv[1].split()]
xargs = [float(v) for v in sys.argv[2].split()]
t, x = statistics.median(tide), statistics.median(xargs)
print(json.dumps({"tasks": int(sys.argv[3]), "parallelism": int(sys.argv[4]),
                  "median_tide_seconds": t, "median_xargs_seconds": x,
                  "ratio": round(x / t, 2)}))
PY
