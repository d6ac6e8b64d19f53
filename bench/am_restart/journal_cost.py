#!/usr/bin/env python3
"""What the AM's recovery journal costs a job of many small tasks (issue 12).

Runs the same job with `tide run` (TASKS tasks on 2 executors of 2 cores, fixed: no dynamic
allocation), alternately with the journal (am.stagingDir on this machine's disk: every launch
is written and every task commit fsync'd before the AM answers) and without it
(am.stagingDir=none), REPEATS times each, and prints the median job time of each and the cost.
The job time is taken from the AM's log: from the first executor registered to "job job-1
succeeded" (so the cluster's and the first executor's start are left out).

    python3 bench/am_restart/journal_cost.py [BUILD_DIR] [REPEATS]   (build, 3)

Environment: TASKS (20000), KIND (noop: the builtin no-op task, the worst case for the journal;
`true`: a `true` command per task), STAGING (a directory for the journals; default a fresh one
under BUILD_DIR, which is on the same disk as the build).
"""

import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def stamp(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def job_seconds(work):
    logs = glob.glob(work + "/**/container_*_01_000001/stderr", recursive=True)
    if not logs:
        raise RuntimeError("no AM log under " + work)
    registered, succeeded = [], None
    for line in open(logs[0], errors="replace"):
        if " registered from " in line and "executor e" in line:
            registered.append(stamp(line))
        elif "job job-1 succeeded" in line:
            succeeded = stamp(line)
    if not registered or succeeded is None:
        raise RuntimeError("the AM log " + logs[0] + " does not show the job run")
    return succeeded - registered[0]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tasks = int(os.environ.get("TASKS", "20000"))
    kind = os.environ.get("KIND", "noop")
    tide = os.path.join(os.path.abspath(build), "bin", "tide")
    if not os.access(tide, os.X_OK):
        sys.exit("journal_cost.py: no %s; build first" % tide)
    work = tempfile.mkdtemp(prefix="tide-journal-cost-")
    staging = os.environ.get("STAGING") or tempfile.mkdtemp(
        prefix="tide-journal-staging-", dir=os.path.abspath(build))
    stage = {"id": "s", "tasks": tasks}
    if kind == "noop":
        stage["builtin"] = "noop"
    else:
        stage["command"] = ["true"]
    job = os.path.join(work, "job.json")
    with open(job, "w") as f:
        json.dump({"name": "journal-cost", "stages": [stage]}, f)
    times = {"journal": [], "none": []}
    try:
        for i in range(repeats):
            for mode in ("journal", "none"):
                run_dir = os.path.join(work, "%s-%d" % (mode, i))
                argv = [tide, "run", job, "--work-dir", run_dir,
                        "--conf", "am.stagingDir=" + (staging if mode == "journal" else "none"),
                        "--conf", "dynamicAllocation.enabled=false",
                        "--conf", "executor.instances=2", "--conf", "executor.cores=2"]
                with open(run_dir + ".err", "w") as err:
                    rc = subprocess.call(argv, stdout=subprocess.DEVNULL, stderr=err)
                if rc != 0:
                    sys.exit("journal_cost.py: tide run exited %d; see %s.err" % (rc, run_dir))
                seconds = job_seconds(run_dir)
                times[mode].append(seconds)
                print("  run %d %-7s %.2f s (%.0f tasks/s)" % (i + 1, mode, seconds, tasks / seconds),
                      file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not os.environ.get("STAGING"):
            shutil.rmtree(staging, ignore_errors=True)
    on, off = statistics.median(times["journal"]), statistics.median(times["none"])
    print("job: %d %s tasks on 2 executors x 2 cores, %d runs each (load average %.1f)"
          % (tasks, kind, repeats, os.getloadavg()[0]))
    print("  with the journal (am.stagingDir on disk): median %.2f s (%.0f tasks/s); runs %s"
          % (on, tasks / on, ", ".join("%.2f" % t for t in times["journal"])))
    print("  without (am.stagingDir=none):            median %.2f s (%.0f tasks/s); runs %s"
          % (off, tasks / off, ", ".join("%.2f" % t for t in times["none"])))
    print("  cost of the journal: %+.2f s (%+.1f%%)" % (on - off, 100 * (on - off) / off))


if __name__ == "__main__":
    main()
