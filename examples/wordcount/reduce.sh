#!/bin/sh
# The reduce side of wordcount: every map task's share of this task's partition is in
# $TIDE_INPUT_DIR/<map stage>/part-<map task>; count the words into $TIDE_OUTPUT_DIR/part-0 as
# "count word" lines (the format of uniq -c, without its padding).
#   reduce.sh <map stage> [seconds to sleep first, to make the stage slow in tests]
set -eu
stage=$1
sleep "${2:-0}"
find "$TIDE_INPUT_DIR/$stage" -type f -name 'part-*' -exec cat {} + | sort | uniq -c |
  awk '{ print $1, $2 }' > "$TIDE_OUTPUT_DIR/part-0"
