#!/bin/sh
# Job slowdown and recovery time for a tide-rm outage (issue 12): the same job (TASKS tasks of
# SECONDS s on 2 executors of 2 cores, submitted with `tide submit --wait`) runs once on a
# quiet cluster and once with tide-rm killed (SIGKILL) OUTAGE s into the job and restarted on
# the same port and state store OUTAGE_LEN s later. Prints both wall times and the recovery
# time (restart to both nodes and the AM registered again, from tide-rm's log).
#
#   bench/rm/rm_restart_bench.sh [BUILD_BIN_DIR]   (default build/bin)
# Environment: TASKS (40), SECONDS_PER_TASK (2), OUTAGE_AT (3), OUTAGE_LEN (10).
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
TASKS=${TASKS:-40}
SECONDS_PER_TASK=${SECONDS_PER_TASK:-2}
OUTAGE_AT=${OUTAGE_AT:-3}
OUTAGE_LEN=${OUTAGE_LEN:-10}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tide-rm-restart-bench-XXXXXX")
PIDS=""
cleanup() {
  for pid in $PIDS; do kill "$pid" 2>/dev/null || true; done
  sleep 1
  for pid in $PIDS; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

now_ms() { date +%s%3N; }

wait_for_file() {
  i=0
  while [ ! -s "$1" ]; do
    i=$((i + 1))
    [ $i -gt 400 ] && { echo "timed out waiting for $1" >&2; exit 1; }
    sleep 0.05
  done
}

start_rm() { # $1 = port, $2 = log
  rm -f "$WORK/rm.port"
  "$BIN/tide-rm" --port-file "$WORK/rm.port" --conf rm.port="$1" \
    --conf rm.secretFile="$WORK/rm.secret" --conf rm.stateStore.dir="$WORK/rm-state" \
    --conf rm.nodeExpiry=5s >>"$2" 2>&1 &
  RM_PID=$!
  PIDS="$PIDS $RM_PID"
  wait_for_file "$WORK/rm.port"
}

start_rm 0 "$WORK/rm.log"
PORT=$(cat "$WORK/rm.port")
URL="http://127.0.0.1:$PORT"
for i in 0 1; do
  mkdir -p "$WORK/nm$i"
  "$BIN/tide-nm" --port-file "$WORK/nm$i/nm.port" --conf nm.rm="$URL" --conf nm.port=0 \
    --conf nm.workDir="$WORK/nm$i/work" --conf rm.secretFile="$WORK/rm.secret" \
    --conf nm.cores=4 --conf nm.memory=4g --conf nm.heartbeatInterval=200ms \
    >"$WORK/nm$i/nm.log" 2>&1 &
  PIDS="$PIDS $!"
  wait_for_file "$WORK/nm$i/nm.port"
done
sleep 1

job() { # $1 = name
  cat >"$WORK/$1.json" <<EOF
{"name": "$1", "output": "$WORK/$1-out", "stages": [{"id": "s", "tasks": $TASKS,
 "command": ["sh", "-c", "sleep $SECONDS_PER_TASK"]}]}
EOF
  echo "$WORK/$1.json"
}

submit() { # $1 = job file
  "$BIN/tide" submit --wait --master "$URL" "$1" --conf rm.secretFile="$WORK/rm.secret" \
    --conf executor.memory=256m --conf executor.cores=2 --conf am.memory=256m \
    --conf ui.port=0 --conf dynamicAllocation.enabled=false --conf executor.instances=2 \
    --conf am.heartbeatInterval=500ms
}

start=$(now_ms)
submit "$(job quiet)" >"$WORK/quiet.log" 2>&1
quiet=$(($(now_ms) - start))

start=$(now_ms)
submit "$(job outage)" >"$WORK/outage.log" 2>&1 &
SUBMIT=$!
sleep "$OUTAGE_AT"
kill -9 "$RM_PID"
sleep "$OUTAGE_LEN"
restart=$(now_ms)
start_rm "$PORT" "$WORK/rm2.log"
# Recovered: both nodes and the AM registered again.
i=0
while [ "$(grep -c 'registered with' "$WORK/rm2.log" || true)" -lt 2 ] ||
  ! grep -q 'registered again' "$WORK/rm2.log"; do
  i=$((i + 1))
  [ $i -gt 1200 ] && { echo "no recovery within 60 s" >&2; exit 1; }
  sleep 0.05
done
recovered=$(now_ms)
status=0
wait "$SUBMIT" || status=$?
outage=$(($(now_ms) - start))
echo "job: $TASKS tasks of ${SECONDS_PER_TASK}s on 2 executors x 2 cores"
echo "quiet run:        ${quiet} ms"
echo "with ${OUTAGE_LEN}s outage: ${outage} ms (tide submit --wait exit $status); slowdown $((outage - quiet)) ms"
echo "recovery:         $((recovered - restart)) ms from restart to 2 nodes and the AM registered again"
grep -h "final status\|answers again" "$WORK/outage.log" || true
