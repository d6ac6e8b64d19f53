# Sourced by the throughput benches once BUILD is set: the tide binary, TIDE_CONF's settings as
# --conf arguments, a scratch directory removed on exit, and a run on a fixed set of executors.
TIDE="$BUILD/bin/tide"
EXTRA=()
for setting in ${TIDE_CONF:-}; do EXTRA+=(--conf "$setting"); done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# fixed_run JOB EXECUTORS SLOTS [more tide run arguments]: runs JOB on EXECUTORS executors of
# SLOTS slots each from the start, dynamic allocation off, so that only scheduling and the
# tasks are measured; its report goes to $WORK/tide.json. TIDE_CONF's settings come last.
fixed_run() {
  local job=$1 executors=$2 slots=$3
  shift 3
  "$TIDE" run "$job" --report "$WORK/tide.json" \
    --conf dynamicAllocation.enabled=false --conf executor.instances="$executors" \
    --conf executor.cores="$slots" --conf executor.memory=256m --conf am.memory=256m \
    --conf nm.cores=$((executors * slots + 1)) --conf log.level=warn "$@" \
    ${EXTRA[@]+"${EXTRA[@]}"}
}

# The first stage's duration in the last fixed_run's report, in seconds.
report_stage_seconds() {
  python3 -c "import json; print(json.load(open('$WORK/tide.json'))['stages'][0]['duration_seconds'])"
}
