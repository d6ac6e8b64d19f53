#!/usr/bin/env bash
# Does watching an application slow it down? Runs a job of 20,000 short tasks with `tide run`
# (2 executors of 4 cores), alone and while `wrk` hammers the AM's /api/v1/status and
# /metrics from other processes (64 connections for 10s on loopback), and compares the
# throughput of the 20,000-task stage. See bench/README.md.
#
#   bench/status_load/run.sh [BUILD_DIR]        (default: build)
#
# Environment: ROUNDS (3) pairs of runs, the medians are compared; TASKS (20000);
# BUILTIN (noop; or sleep for 1ms tasks); CONNECTIONS (64); SECONDS_OF_LOAD (10).
# Needs wrk (Debian: apt-get install wrk; scripts/install-deps has it) and python3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
tide="$(cd "$build" && pwd)/bin/tide"
rounds="${ROUNDS:-3}"
tasks="${TASKS:-20000}"
builtin="${BUILTIN:-noop}"
connections="${CONNECTIONS:-64}"
load_seconds="${SECONDS_OF_LOAD:-10}"

for tool in wrk python3; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
[ -x "$tide" ] || { echo "run.sh: no $tide; build first (cmake --build $build)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/tide-status-load-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# A warm-up task holds the measured stage back for 3s: long enough for the executors to start
# and, in the loaded runs, for wrk to be hammering before the first of its tasks runs. A
# cool-down task keeps the AM up until wrk is done, so that every request wrk makes has an
# AM to answer it (an AM that is gone would count as connection errors).
if [ "$builtin" = "sleep" ]; then task_spec='"builtin": "sleep", "sleep_ms": 1'; else task_spec='"builtin": "noop"'; fi
cooldown_ms=$(((load_seconds + 1) * 1000))
cat >"$work/job.json" <<EOF
{"name": "status-load", "stages": [
  {"id": "warmup", "tasks": 1, "builtin": "sleep", "sleep_ms": 3000},
  {"id": "many", "depends_on": ["warmup"], "tasks": $tasks, $task_spec},
  {"id": "cooldown", "depends_on": ["many"], "tasks": 1, "builtin": "sleep", "sleep_ms": $cooldown_ms}]}
EOF

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Seconds the 20,000-task stage took, from `tide run --report`.
stage_seconds() {
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "SUCCEEDED", r
print([s for s in r["stages"] if s["id"] == "many"][0]["duration_seconds"])' "$1"
}

# run_job NAME LOADED: one `tide run`; with LOADED=1, wrk starts once the AM answers.
run_job() {
  local name="$1" loaded="$2" port
  port="$(free_port)"
  "$tide" run "$work/job.json" --report "$work/$name.json" \
    --conf nm.cores=9 --conf nm.memory=4g --conf am.memory=256m --conf executor.memory=256m \
    --conf executor.cores=4 --conf dynamicAllocation.minExecutors=2 \
    --conf dynamicAllocation.maxExecutors=2 --conf ui.port="$port" \
    >"$work/$name.log" 2>&1 &
  local tide_pid=$!
  if [ "$loaded" = 1 ]; then
    for _ in $(seq 1 200); do
      "$tide" status "http://127.0.0.1:$port/" --json >/dev/null 2>&1 && break
      sleep 0.05
    done
    # Two wrk processes of half the connections each, one per path.
    local half=$((connections / 2))
    wrk -t1 -c"$half" -d"${load_seconds}s" --latency "http://127.0.0.1:$port/api/v1/status" \
      >"$work/$name-wrk-status.txt" 2>&1 &
    local wrk1=$!
    wrk -t1 -c"$half" -d"${load_seconds}s" --latency "http://127.0.0.1:$port/metrics" \
      >"$work/$name-wrk-metrics.txt" 2>&1 &
    local wrk2=$!
  fi
  if ! wait "$tide_pid"; then
    echo "run.sh: tide run failed:" >&2
    cat "$work/$name.log" >&2
    exit 1
  fi
  if [ "$loaded" = 1 ]; then
    wait "$wrk1" "$wrk2"
  fi
  stage_seconds "$work/$name.json"
}

# wrk_summary FILE: "requests errors req/s"
wrk_summary() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
requests = int(re.search(r"(\d+) requests in", text).group(1))
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
errors = 0
m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
if m: errors += sum(int(g) for g in m.groups())
m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
if m: errors += int(m.group(1))
p99 = re.search(r"^\s+99%\s+(\S+)", text, re.M)
print(requests, errors, rate, p99.group(1) if p99 else "?")
PY
}

echo "tide status-load bench: $tasks $builtin tasks on 2 executors x 4 cores, $rounds rounds;"
echo "load: wrk $connections connections for ${load_seconds}s on /api/v1/status + /metrics"
alone=()
loaded=()
total_errors=0
total_requests=0
for round in $(seq 1 "$rounds"); do
  a="$(run_job "alone-$round" 0)"
  l="$(run_job "loaded-$round" 1)"
  read -r s_req s_err s_rate s_p99 <<<"$(wrk_summary "$work/loaded-$round-wrk-status.txt")"
  read -r m_req m_err m_rate m_p99 <<<"$(wrk_summary "$work/loaded-$round-wrk-metrics.txt")"
  total_errors=$((total_errors + s_err + m_err))
  total_requests=$((total_requests + s_req + m_req))
  alone+=("$a")
  loaded+=("$l")
  printf 'round %d: alone %.3fs (%.0f tasks/s)  loaded %.3fs (%.0f tasks/s)  wrk: status %d req (%.0f/s, p99 %s, %d errors), metrics %d req (%.0f/s, p99 %s, %d errors)\n' \
    "$round" "$a" "$(python3 -c "print($tasks/$a)")" "$l" "$(python3 -c "print($tasks/$l)")" \
    "$s_req" "$s_rate" "$s_p99" "$s_err" "$m_req" "$m_rate" "$m_p99" "$m_err"
done

python3 - "$tasks" "$total_errors" "$total_requests" "${alone[*]}" "${loaded[*]}" <<'PY'
import statistics, sys
tasks, errors, requests = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
alone = [float(x) for x in sys.argv[4].split()]
loaded = [float(x) for x in sys.argv[5].split()]
a, l = statistics.median(alone), statistics.median(loaded)
ratio = (tasks / l) / (tasks / a)
print(f"median throughput: alone {tasks / a:.0f} tasks/s, under load {tasks / l:.0f} tasks/s, "
      f"ratio {ratio:.3f} (must be >= 0.9)")
print(f"wrk: {requests} requests, {errors} errors (must be 0)")
sys.exit(0 if ratio >= 0.9 and errors == 0 else 1)
PY
