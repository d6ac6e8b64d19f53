#!/usr/bin/env bash
# What a kill -9 of the AM costs (issue 12): runs a two-stage job (TASKS map tasks of
# TASK_SECONDS each on 2 executors of 2 cores, then one reduce reading them all) with `tide run`,
# once undisturbed and once with the AM killed (SIGKILL) when KILL_AFTER map tasks have
# succeeded. Prints both durations, the slowdown, and the recovery time: from the kill to the
# new attempt's "recovered" record, and to the first executor registered again with it (from
# then on tasks run and commit again). See bench/README.md.
#
#   bench/am_restart/run.sh [BUILD_DIR]        (default: build)
#
# Environment: TASKS (32), TASK_SECONDS (1), KILL_AFTER (10). Needs python3.
set -euo pipefail

build="${1:-build}"
tide="$(cd "$build" && pwd)/bin/tide"
tasks="${TASKS:-32}"
task_seconds="${TASK_SECONDS:-1}"
kill_after="${KILL_AFTER:-10}"
[ -x "$tide" ] || { echo "run.sh: no $tide; build first (cmake --build $build)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/tide-am-restart-XXXXXX")"
trap 'rm -rf "$work"' EXIT

cat > "$work/job.json" <<JOB
{"name": "restart-bench", "output": "$work/out",
 "stages": [
  {"id": "map", "tasks": $tasks, "command": ["sh", "-c", "sleep $task_seconds; echo {task} > \"\$TIDE_OUTPUT_DIR/part-0\""]},
  {"id": "reduce", "depends_on": ["map"], "tasks": 1,
   "command": ["sh", "-c", "cat \"\$TIDE_INPUT_DIR\"/map/part-* | wc -l > \"\$TIDE_OUTPUT_DIR/part-0\""]}]}
JOB

run() {  # run NAME KILL(0|1): prints the duration in seconds; with KILL, the recovery times
  local name="$1" kill="$2"
  rm -rf "$work/out"
  local start end
  start="$(date +%s.%N)"
  "$tide" run "$work/job.json" --work-dir "$work/$name" \
    --conf am.stagingDir="$work/staging" --conf executor.cores=2 \
    --conf dynamicAllocation.minExecutors=2 --conf dynamicAllocation.maxExecutors=2 \
    --conf dynamicAllocation.executorIdleTimeout=60s 2> "$work/$name.err" &
  local pid=$!
  if [ "$kill" = 1 ]; then
    python3 - "$work/$name.err" "$work/$name" "$kill_after" <<'PY'
import json, os, re, signal, sys, time, urllib.request, glob, datetime
err, workdir, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline = time.time() + 300
url = None
while time.time() < deadline and url is None:
    m = re.search(r"status page (http://[^?\s]+)", open(err).read()) if os.path.exists(err) else None
    url = m.group(1) if m else None
    time.sleep(0.05)
while time.time() < deadline:
    try:
        s = json.load(urllib.request.urlopen(url + "api/v1/status", timeout=2))
        if s["tasks"]["succeeded"] >= after:
            break
    except Exception:
        pass
    time.sleep(0.05)
killed = time.time()
os.kill(s["pid"], signal.SIGKILL)
def stamp(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()
recovered = adopted = None
while time.time() < deadline and (recovered is None or adopted is None):
    for path in glob.glob(workdir + "/nm*/work/*/container_*_02_000001/stderr"):
        for line in open(path):
            if "recovered from attempt" in line and recovered is None:
                recovered = stamp(line)
    for path in glob.glob(workdir + "/nm*/work/*/container_*_01_*/stderr"):
        lines = open(path).read().splitlines()
        for i, line in enumerate(lines):
            if "a new attempt of it is at" in line and i + 1 < len(lines) and "registered" in lines[i + 1]:
                t = stamp(lines[i + 1])
                adopted = t if adopted is None else min(adopted, t)
    time.sleep(0.1)
print("  kill -9 of the AM after %d map tasks: new attempt recovered in %.2f s, first executor registered with it in %.2f s"
      % (after, recovered - killed, adopted - killed), file=sys.stderr)
PY
  fi
  wait "$pid"
  end="$(date +%s.%N)"
  [ "$(cat "$work/out/part-0")" = "$tasks" ] || { echo "run.sh: wrong output in $name" >&2; exit 1; }
  python3 -c "print('%.2f' % ($end - $start))"
}

echo "job: $tasks map tasks of ${task_seconds}s on 2 executors x 2 cores, then 1 reduce" >&2
plain="$(run plain 0)"
echo "  undisturbed: ${plain} s" >&2
killed="$(run killed 1)"
echo "  with kill -9 of the AM: ${killed} s" >&2
python3 -c "print('  slowdown: %+.2f s (%+.0f%%)' % ($killed - $plain, 100 * ($killed - $plain) / $plain))" >&2
