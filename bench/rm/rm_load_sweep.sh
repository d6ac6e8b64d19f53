#!/usr/bin/env bash
# tide-rm under SLS-style load over a range of cluster sizes (bench/README.md, "Scale"): one
# rm_load run per node count, 100 AMs each, and a table of the figures. With RM_PEER=PATH
# (another tide-rm binary, e.g. one built from an older commit) each size runs against it too,
# right after, so that both see the same machine.
#
#   bench/rm/rm_load_sweep.sh [BUILD_DIR] [NODE COUNTS...]
#   e.g. bench/rm/rm_load_sweep.sh build 250 500 1000 2000 4000
# Environment: SECONDS_PER_RUN (20), WARMUP (5), AMS (100), RM_PEER (unset).
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(250 500 1000 2000 4000)
out=$(mktemp -d /tmp/rm_load_sweep.XXXXXX)
run() {  # label, tide-rm binary, nodes
  echo "== $1: $3 nodes (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
  "$build/bin/rm_load" --rm="$2" --nodes="$3" --ams="${AMS:-100}" --seconds="${SECONDS_PER_RUN:-20}" \
    --warmup="${WARMUP:-5}" --json="$out/$1.jsonl" >&2
}
for nodes in "${sizes[@]}"; do
  run this "$build/bin/tide-rm" "$nodes"
  if [ -n "${RM_PEER:-}" ]; then run peer "$RM_PEER" "$nodes"; fi
done
python3 - "$out" <<'EOF'
import json, pathlib, sys
rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")):
    for line in path.read_text().splitlines():
        rows.append((path.stem, json.loads(line)))
print("| tide-rm | nodes | heartbeats/s | heartbeat p50 ms | p99 ms | errors | allocations/s "
      "| allocate p99 ms | tide-rm CPU | us/request | RSS MiB | threads | generator CPU | load |")
print("|" + " --- |" * 14)
for label, r in sorted(rows, key=lambda x: (x[1]["nodes"], x[0])):
    print(f"| {label} | {r['nodes']} | {r['heartbeatsPerSecond']:.0f} | {r['heartbeatP50Ms']:.1f} "
          f"| {r['heartbeatP99Ms']:.1f} | {r['heartbeatErrors']} | {r['allocationsPerSecond']:.0f} "
          f"| {r['allocateP99Ms']:.1f} | {r['rmCpuCores']*100:.0f}% | {r['rmCpuPerRequestUs']:.0f} "
          f"| {r['rmRssMiB']} | {r['rmThreads']} | {r['generatorCpuCores']*100:.0f}% "
          f"| {r['loadAverage']:.1f} |")
EOF
