#!/bin/bash
# Elasticity, side by side in one run: three workloads (bench/elasticity/workloads.py: three
# bursts, a steady stream at half capacity, a long stage then many short ones) through tide with
# dynamicAllocation.policy=spark and =adaptive (at most 8 one-slot executors, idle timeout 3 s),
# and through Dask distributed's LocalCluster.adapt(0, 8). Prints each job's time and the
# executor-seconds (executors sampled every 100 ms) and writes a chart of executors over time.
#
#   bench/elasticity/run.sh [BUILD_DIR] [OUT_DIR] [WORKLOAD...]
# Needs Debian's python3-distributed (apt-get install python3-distributed).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
OUT=${2:-$(mktemp -d)}
shift $(( $# > 2 ? 2 : $# )) || true
WORKLOADS=${*:-bursts stream long-then-short}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for workload in $WORKLOADS; do
  for policy in spark adaptive; do
    echo "running $workload through tide ($policy)" >&2
    /usr/bin/python3 "$HERE/tide_session.py" "$BUILD" "$workload" "$policy" > "$OUT/$workload.tide-$policy.json"
  done
  echo "running $workload through dask" >&2
  /usr/bin/python3 "$HERE/dask_adapt.py" "$workload" 2>/dev/null > "$OUT/$workload.dask.json"
done
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$HERE/report.py" "$OUT" "$OUT/executors.svg"
