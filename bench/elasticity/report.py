"""Prints the elasticity table and writes the chart of executors over time.
python3 report.py RESULTS_DIR CHART.svg   (RESULTS_DIR holds WORKLOAD.SYSTEM.json files)
"""
import json
import os
import sys

from workloads import WORKLOADS

SYSTEMS = ["tide-spark", "tide-adaptive", "dask"]
COLORS = {"tide-spark": "#1f5fbf", "tide-adaptive": "#e6761b", "dask": "#2a9d4b"}


def load(results, workload, system):
    path = os.path.join(results, "%s.%s.json" % (workload, system))
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def table(results):
    for workload, jobs in WORKLOADS.items():
        work = sum(tasks * seconds for _, tasks, seconds in jobs)
        print("\n## %s (%d jobs, %.0f s of work; ideal executor-seconds %.0f)"
              % (workload, len(jobs), work, work))
        if len(jobs) <= 3:
            header = " | ".join("job %d" % (i + 1) for i in range(len(jobs)))
        else:
            header = "mean job | max job"
        print("| | %s | executor-seconds |" % header)
        print("|---|%s---|" % ("---|" * (len(jobs) if len(jobs) <= 3 else 2)))
        for system in SYSTEMS:
            r = load(results, workload, system)
            if r is None:
                print("| %s | (not run) |" % system)
                continue
            t = r["job_seconds"]
            if len(jobs) <= 3:
                cells = " | ".join("%.1f s" % x for x in t)
            else:
                cells = "%.2f s | %.2f s" % (sum(t) / len(t), max(t))
            print("| %s | %s | %.1f |" % (system, cells, r["executor_seconds"]))


def chart(results, path):
    panel_w, panel_h, left, top, bottom = 420, 260, 40, 30, 40
    width = panel_w * len(WORKLOADS) + 20
    height = panel_h + top + bottom + 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>']
    for k, workload in enumerate(WORKLOADS):
        x0 = 10 + k * panel_w
        runs = {s: load(results, workload, s) for s in SYSTEMS}
        tmax = max([r["samples"][-1][0] for r in runs.values() if r and r["samples"]] + [1])
        pw, ph = panel_w - left - 20, panel_h
        def px(t):
            return x0 + left + pw * t / tmax
        def py(n):
            return top + ph - ph * n / 9.0
        out.append('<text x="%d" y="18" font-size="13">%s: executors over time</text>'
                   % (x0 + left, workload))
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>'
                   % (px(0), py(0), px(tmax), py(0)))
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>'
                   % (px(0), py(0), px(0), py(9)))
        for n in (0, 2, 4, 6, 8):
            out.append('<text x="%.1f" y="%.1f" text-anchor="end">%d</text>'
                       % (px(0) - 4, py(n) + 4, n))
        for i in range(6):
            t = tmax * i / 5
            out.append('<text x="%.1f" y="%.1f" text-anchor="middle">%.0f s</text>'
                       % (px(t), py(0) + 14, t))
        for s in SYSTEMS:
            r = runs[s]
            if not r or not r["samples"]:
                continue
            pts = []
            prev = None
            for t, n in r["samples"]:
                if prev is not None:
                    pts.append("%.1f,%.1f" % (px(t), py(prev)))
                pts.append("%.1f,%.1f" % (px(t), py(n)))
                prev = n
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                       % (COLORS[s], " ".join(pts)))
        for i, s in enumerate(SYSTEMS):
            r = runs[s]
            label = s if not r else "%s (%.0f executor-s)" % (s, r["executor_seconds"])
            out.append('<text x="%.1f" y="%.1f" fill="%s">%s</text>'
                       % (x0 + left + i * 125, height - 8, COLORS[s], label))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    table(sys.argv[1])
    chart(sys.argv[1], sys.argv[2])
    print("\nchart: " + sys.argv[2])
