#!/usr/bin/env python3
"""Draws the CSV that build/bin/scheduler_memory writes (seconds, succeeded, rss_kib,
journal_bytes) as resident MiB against tasks completed, with am_memory.py's plot.

  bench/scale/plot_scheduler_memory.py CSV SVG [TITLE]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from am_memory import read_csv, svg_plot  # noqa: E402


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    points = read_csv(sys.argv[1])
    if not points:
        print("%s: no samples" % sys.argv[1], file=sys.stderr)
        return 1
    title = sys.argv[3] if len(sys.argv) > 3 else (
        "AM scheduler, policy and journal in process: VmRSS against %s noop tasks completed"
        % "{:,}".format(points[-1][0]))
    svg_plot([("VmRSS", points)], sys.argv[2], title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
