"""NM recovery, measured: a tide-rm and one tide-nm on 127.0.0.1 (default heartbeat, 1 s), a
job of 8 command tasks of 6 s on 4 one-core executors (two waves), run with no fault and with
`kill -9` of the tide-nm in the middle of the first wave followed at once by its restart on the
same port and work dir (nm.recovery.enabled, the default).

  python3 bench/nm_recovery/nm_recovery.py [BUILD_DIR] [RUNS]

Prints, per run: the job's time (submission to FINISHED, from tide-rm), and for the faulty runs
the recovery time: the restart to the restarted NM's "registered with the resource manager"
(its log; its first heartbeat, listing every container, follows at once), the NM's own share
(its start to "recovery: re-attached"), and the restart to a heartbeat of the restarted NM
that still lists every container as seen by polling tide-rm (late by up to one heartbeat
interval); and the task executions counted with a side-effect file per task (8: none
restarted).
Then the medians and the slowdown. Kills everything it started.
"""
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tide_bench  # noqa: E402
from tide_bench import free_port, get, stop_all  # noqa: E402

TASKS, SECONDS, EXECUTORS = 8, 6, 4


def poll(what, check, timeout=120, interval=0.02):
    return tide_bench.poll(what, check, timeout, interval)


def log_time(line):
    # "2026-12-01T03:13:52.672Z ..." (UTC)
    return datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=timezone.utc).timestamp()


def run(bin_dir, fault):
    work = tempfile.mkdtemp(prefix="tide-nm-recovery-")
    rm_port, nm_port = free_port(), free_port()
    rm_url = "http://127.0.0.1:%d" % rm_port
    secret_file = os.path.join(work, "rm.secret")
    secret = ("--conf", "rm.secretFile=" + secret_file)
    runs = os.path.join(work, "runs")
    os.makedirs(runs)
    procs = []
    logs = []

    def start_nm(n):
        log = open(os.path.join(work, "nm%d.log" % n), "w")
        logs.append(log)
        nm = subprocess.Popen(
            [bin_dir + "/tide-nm", "--conf", "nm.rm=" + rm_url, "--conf", "nm.port=%d" % nm_port,
             "--conf", "nm.cores=6", "--conf", "nm.memory=4g",
             "--conf", "nm.workDir=" + os.path.join(work, "nm"), *secret],
            stdout=log, stderr=log, start_new_session=True)
        procs.append(nm)
        return nm

    try:
        rm_log = open(os.path.join(work, "rm.log"), "w")
        logs.append(rm_log)
        procs.append(subprocess.Popen(
            [bin_dir + "/tide-rm", "--conf", "rm.port=%d" % rm_port, "--conf", "log.level=warn",
             *secret], stdout=rm_log, stderr=rm_log, start_new_session=True))
        admin = poll("the secret file", lambda: open(secret_file).read().strip())
        nm = start_nm(1)
        poll("the node to register", lambda: get(rm_url + "/ws/v1/cluster/metrics", admin)
             ["clusterMetrics"]["activeNodes"] >= 1)
        job = os.path.join(work, "job.json")
        with open(job, "w") as f:
            json.dump({"name": "recovery", "stages": [{
                "id": "s", "tasks": TASKS,
                "command": ["sh", "-c", "echo {attempt} >> %s/{task}; sleep %d" % (runs, SECONDS)]}]},
                f)
        submitted = time.monotonic()
        app_id = subprocess.run(
            [bin_dir + "/tide", "submit", "--master", rm_url, job, *secret,
             "--conf", "dynamicAllocation.minExecutors=%d" % EXECUTORS,
             "--conf", "dynamicAllocation.maxExecutors=%d" % EXECUTORS,
             "--conf", "executor.cores=1", "--conf", "executor.memory=256m",
             "--conf", "am.memory=256m", "--conf", "ui.port=0", "--conf", "log.level=warn"],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True).stdout.strip().split()[-1]
        app_url = rm_url + "/ws/v1/cluster/apps/" + app_id
        result = {"fault": fault}
        if fault:
            poll("the first wave", lambda: len(os.listdir(runs)) >= EXECUTORS, timeout=120)
            time.sleep(SECONDS / 2)
            node = get(rm_url + "/ws/v1/cluster/nodes", admin)["nodes"]["node"][0]
            containers = node["numContainers"]
            nm.send_signal(signal.SIGKILL)
            nm.wait()
            last = get(rm_url + "/ws/v1/cluster/nodes", admin)["nodes"]["node"][0][
                "lastHealthUpdate"]
            restarted = time.monotonic()
            restarted_wall = time.time()
            start_nm(2)
            seen = []

            def reported():
                n = get(rm_url + "/ws/v1/cluster/nodes", admin)["nodes"]["node"][0]
                if not seen and n["lastHealthUpdate"] > last:
                    seen.append(n["lastHealthUpdate"])  # its registration (or a heartbeat)
                return (seen and n["lastHealthUpdate"] > seen[0] and n["state"] == "RUNNING"
                        and n["numContainers"] == containers)

            poll("the restarted NM's report", reported, timeout=60)
            result["recovery_ms"] = round((time.monotonic() - restarted) * 1000)
            text = open(os.path.join(work, "nm2.log")).read().splitlines()
            first = log_time(text[0])
            done = [log_time(l) for l in text if "recovery: re-attached" in l]
            result["nm_recovery_ms"] = round((done[0] - first) * 1000) if done else None
            registered = [log_time(l) for l in text if "registered with the resource manager" in l]
            result["registered_ms"] = (round((registered[0] - restarted_wall) * 1000)
                                       if registered else None)
            result["containers"] = containers
        report = poll("the job", lambda: (lambda a: a if a["state"] in
                                          ("FINISHED", "FAILED", "KILLED") else None)(
            get(app_url, admin)["app"]), timeout=300, interval=0.05)
        result["job_s"] = round(time.monotonic() - submitted, 2)
        result["final"] = report["finalStatus"]
        result["executions"] = sum(len(open(os.path.join(runs, t)).read().split())
                                   for t in os.listdir(runs))
        return result
    finally:
        stop_all(procs)
        for log in logs:
            log.close()
        shutil.rmtree(work, ignore_errors=True)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    bin_dir = os.path.abspath(os.path.join(build, "bin"))
    results = []
    for i in range(count):
        for fault in (False, True):
            r = run(bin_dir, fault)
            print(json.dumps(r), flush=True)
            results.append(r)
    base = statistics.median(r["job_s"] for r in results if not r["fault"])
    faulty = statistics.median(r["job_s"] for r in results if r["fault"])
    recovery = statistics.median(r["recovery_ms"] for r in results if r["fault"])
    own = [r["nm_recovery_ms"] for r in results if r["fault"] and r["nm_recovery_ms"] is not None]
    registered = [r["registered_ms"] for r in results
                  if r["fault"] and r["registered_ms"] is not None]
    print("median job: %.2f s without a fault, %.2f s with kill -9 + restart of tide-nm "
          "(slowdown %.2f s, %.1f%%); recovery: restart to registered again %s ms (its first "
          "heartbeat, listing every container, follows at once), of which the NM's own start to "
          "re-attached %s ms; restart to a heartbeat seen by polling tide-rm %d ms (late by up to "
          "one heartbeat interval, 1 s); load average %s" % (
              base, faulty, faulty - base, (faulty - base) / base * 100,
              statistics.median(registered) if registered else "?",
              statistics.median(own) if own else "?", recovery,
              open("/proc/loadavg").read().split()[0]))


if __name__ == "__main__":
    main()
