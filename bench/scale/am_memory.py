#!/usr/bin/env python3
"""The AM's resident memory against tasks completed, for one stage of N noop tasks.

  bench/scale/am_memory.py [--build build] [--tasks 1000000] [--executors 2] [--cores 16]
                           [--out DIR] [--interval 1.0] [--am-memory 4g] [--stop-after N]

Runs `tide run` (an embedded tide-rm and tide-nm on this machine) with a job of one stage of
`--tasks` noop tasks on `--executors` executors of `--cores` task slots, and every `--interval`
seconds reads the AM's VmRSS from /proc and the stage's succeeded count from its status API
(/api/v1/jobs). Writes DIR/am_memory.csv (seconds, succeeded, am_rss_kib, executor_rss_kib: the
largest executor, journal_bytes: the AM's recovery journal on disk, am_rss_anon_kib and
am_rss_file_kib: the AM's VmRSS split into its heap and its mapped files, heap_in_use_kib and
heap_free_kib: the AM's malloc heap split into what it holds and what malloc keeps freed, from its
/metrics, am_threads: the AM's threads) and DIR/am_memory.svg (RSS in MiB against tasks
completed), and prints as JSON the RSS at each power of ten of completions, at the last sample
before the stage ended and after it, and the median RSS of each tenth of the stage's tasks (one
sample is noisy: a journal compaction maps the journal and holds its buffers for a few seconds). The AM's recovery journal goes to a staging
directory under the run's temporary directory, removed at the end. Not a test: run it by hand,
on a quiet machine.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tide_bench import free_port, get, poll, stop_all  # noqa: E402


def descendants(root, name):
    """Pids of the processes below `root` whose executable is called `name` (a /proc walk)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append((int(entry), os.path.basename(argv0)))
    found, todo = [], [root]
    while todo:
        for pid, exe in children.get(todo.pop(), []):
            todo.append(pid)
            if exe == name:
                found.append(pid)
    return found


def tree_bytes(path):
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(directory, name))
            except OSError:
                pass
    return total


def rss_kib(pid, field="VmRSS"):
    """A KiB field of /proc/PID/status: VmRSS, or its parts RssAnon (the heap) and RssFile (the
    mapped binary and libraries, and the journal while a compaction maps it)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def am_heap_kib(port):
    """(in use, free) KiB of the AM's malloc heap, from its /metrics; (0, 0) if unreadable."""
    kinds = {}
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("tide_application_master_memory_bytes{"):
                    kind = line.split('kind="', 1)[1].split('"', 1)[0]
                    kinds[kind] = int(float(line.rsplit(" ", 1)[1])) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return kinds.get("heap_in_use", 0), kinds.get("heap_free", 0)


def thread_count(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


def svg_plot(series, path, title):
    """Lines of resident MiB against tasks completed, drawn by hand: `series` is a list of
    (label, [(tasks completed, KiB)])."""
    width, height, left, bottom, top, right = 720, 420, 70, 50, 30, 20
    points_all = [p for _, points in series for p in points] or [(0, 0)]
    xmax = max(max(x for x, _ in points_all), 1)
    ymax = max(max(y for _, y in points_all) / 1024 * 1.1, 1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x):
        return left + plot_w * x / xmax

    def py(y):
        return top + plot_h * (1 - y / ymax)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="14">%s</text>' % (left, title)]
    for i in range(6):
        y, x = ymax * i / 5, xmax * i / 5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (
            left, width - right, py(y), py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (
            left - 6, py(y) + 4, y))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (
            px(x), height - bottom + 18, "{:,}".format(int(x))))
    out.append('<text x="%d" y="%d" text-anchor="middle">tasks completed</text>' % (
        left + plot_w / 2, height - 8))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">'
               'resident MiB</text>' % (top + plot_h / 2, top + plot_h / 2))
    colors = ["#c0392b", "#2471a3", "#7d3c98", "#229954", "#b9770e"]
    for i, (label, points) in enumerate(series):
        color = colors[i % len(colors)]
        line = " ".join("%.1f,%.1f" % (px(x), py(y / 1024)) for x, y in points)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
            color, line))
        legend_y = top + 14 + 16 * i
        out.append('<rect x="%d" y="%d" width="12" height="3" fill="%s"/>' % (
            left + 12, legend_y - 4, color))
        out.append('<text x="%d" y="%d">%s</text>' % (left + 30, legend_y, label))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def read_csv(path):
    """The (succeeded, am_rss_kib) points of a CSV this script wrote."""
    with open(path) as f:
        next(f)
        return [(int(row.split(",")[1]), int(row.split(",")[2])) for row in f if row.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--tasks", type=int, default=1000000)
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--out", default=".")
    parser.add_argument("--cores", type=int, default=16, help="task slots per executor")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--am-memory", default="4g")
    parser.add_argument("--overlay", action="append", default=[], metavar="CSV[:LABEL]",
                        help="also draw the AM's line of an earlier run's CSV (another build)")
    parser.add_argument("--plot-only", action="store_true",
                        help="run nothing: draw DIR/am_memory.csv again (with --overlay)")
    parser.add_argument("--stop-after", type=int, default=0,
                        help="stop once this many tasks completed (0: at the end of the stage)")
    args = parser.parse_args()
    csv_path = os.path.join(args.out, "am_memory.csv")
    if args.plot_only:
        with open(csv_path) as f:
            next(f)
            rows = [tuple(int(v) if v and i else (float(v) if v else None)
                          for i, v in enumerate(line.strip().split(",")))
                    for line in f if line.strip()]
    else:
        rows = run(args)
        os.makedirs(args.out, exist_ok=True)
        with open(csv_path, "w") as f:
            f.write("seconds,succeeded,am_rss_kib,executor_rss_kib,journal_bytes,"
                    "am_rss_anon_kib,am_rss_file_kib,heap_in_use_kib,heap_free_kib,am_threads\n")
            for r in rows:
                f.write("%s,%d,%d,%s,%d,%d,%d,%d,%d,%d\n" % (
                    r[0], r[1], r[2], "" if r[3] is None else r[3], r[4], r[5], r[6], r[7], r[8],
                    r[9]))
    report(args, rows)


def run(args):
    """Runs the stage; returns the samples (seconds, succeeded, AM KiB, executor KiB, journal
    bytes, AM anonymous KiB, AM file-backed KiB, AM heap in use KiB, AM heap free KiB, AM
    threads)."""
    tide = os.path.join(args.build, "bin", "tide")
    work = tempfile.mkdtemp(prefix="tide-scale-")
    job = os.path.join(work, "noop.json")
    with open(job, "w") as f:
        json.dump({"name": "scale", "stages": [
            {"id": "noop", "tasks": args.tasks, "builtin": "noop"}]}, f)
    staging = os.path.join(work, "staging")
    port = free_port()
    run = subprocess.Popen(
        [tide, "run", job, "--conf", "ui.port=%d" % port,
         "--conf", "dynamicAllocation.maxExecutors=%d" % args.executors,
         "--conf", "executor.cores=%d" % args.cores,
         "--conf", "nm.cores=%d" % (args.executors * args.cores + 1),
         "--conf", "am.memory=" + args.am_memory, "--conf", "executor.memory=512m",
         "--conf", "log.level=warn", "--conf", "am.stagingDir=" + staging,
         # Up after the job, so that the last sample sees every task done.
         "--keep-alive", "60s"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    rows = []
    try:
        am = poll("the AM", lambda: descendants(run.pid, "tide-am"), 120, 0.2)[0]
        jobs_url = "http://127.0.0.1:%d/api/v1/jobs" % port
        poll("the AM's status API", lambda: get(jobs_url) is not None, 60, 0.2)
        start = time.monotonic()
        while run.poll() is None:
            try:
                succeeded = sum(j["succeeded"] for j in get(jobs_url)["jobs"])
            except Exception:  # the AM is ending
                break
            am_rss = rss_kib(am)
            if am_rss is None:
                break
            executors = [rss_kib(p) or 0 for p in descendants(run.pid, "tide-executor")]
            rows.append((round(time.monotonic() - start, 1), succeeded, am_rss,
                         max(executors) if executors else None, tree_bytes(staging),
                         rss_kib(am, "RssAnon") or 0, rss_kib(am, "RssFile") or 0)
                        + am_heap_kib(port) + (thread_count(am),))
            if succeeded >= args.tasks or 0 < args.stop_after <= succeeded:
                break
            time.sleep(args.interval)
    finally:
        stop_all([run])
        shutil.rmtree(work, ignore_errors=True)

    return rows


def report(args, rows):
    """Draws DIR/am_memory.svg and prints the figures."""
    series = [("AM VmRSS", [(r[1], r[2]) for r in rows]),
              ("executor VmRSS (largest)", [(r[1], r[3] or 0) for r in rows])]
    if rows and len(rows[0]) > 7 and any(r[7] for r in rows):
        series.append(("AM malloc heap in use", [(r[1], r[7]) for r in rows]))
    for overlay in args.overlay:
        csv, _, label = overlay.partition(":")
        series.append(("AM VmRSS, " + (label or csv), read_csv(csv)))
    svg_plot(series, os.path.join(args.out, "am_memory.svg"),
             "tide AM resident memory, one stage of %s noop tasks, %d executors" % (
                 "{:,}".format(args.tasks), args.executors))
    marks = {}
    power = 10 ** 4
    while power < args.tasks:
        at = [r for r in rows if r[1] >= power]
        if at:
            marks[str(power)] = {"am_rss_mib": round(at[0][2] / 1024, 1), "seconds": at[0][0],
                                 "journal_mib": round(at[0][4] / 2**20, 1)}
        power *= 10
    # The stage's own state is freed when its job ends: the last sample before shows its peak.
    running = [r for r in rows if r[1] < args.tasks]
    tenth = max(args.tasks // 10, 1)
    bands = {}
    for r in running:
        bands.setdefault(r[1] // tenth, []).append(r[2])
    band_medians = [round(sorted(v)[len(v) // 2] / 1024, 1) for _, v in sorted(bands.items())]
    print(json.dumps({
        "tasks": args.tasks, "samples": len(rows), "completed": rows[-1][1] if rows else 0,
        "peak_am_rss_mib": round(max(r[2] for r in rows) / 1024, 1) if rows else None,
        "before_end": {"succeeded": running[-1][1], "am_rss_mib": round(running[-1][2] / 1024, 1),
                       "journal_mib": round(running[-1][4] / 2**20, 1)} if running else None,
        "after_end_am_rss_mib": round(rows[-1][2] / 1024, 1) if rows else None,
        "at_completions": marks, "median_am_rss_mib_by_tenth": band_medians}))

if __name__ == "__main__":
    main()
