#!/bin/sh
# The map side of wordcount: task <task> reads the <task>-th file (in name order) of <input dir>,
# splits it into words on spaces and line ends, and writes each word to the partition its hash
# picks: $TIDE_OUTPUT_DIR/part-<hash mod partitions>. Only sh and awk.
#   map.sh <input dir> <task> <partitions>
set -eu
input_dir=$1
task=$2
partitions=$3
file=$(ls "$input_dir" | sort | awk -v n="$task" 'NR == n + 1')
[ -n "$file" ] || exit 0  # more tasks than files: nothing to do
awk -v out="$TIDE_OUTPUT_DIR" -v partitions="$partitions" '
  BEGIN { for (i = 1; i < 256; i++) code[sprintf("%c", i)] = i }
  {
    for (w = 1; w <= NF; w++) {
      word = $w
      hash = 7
      for (c = 1; c <= length(word); c++) hash = (hash * 31 + code[substr(word, c, 1)]) % 1000003
      print word > (out "/part-" (hash % partitions))
    }
  }' "$input_dir/$file"
