"""A workload through tide with one allocation policy: a tide-rm and a tide-nm on 127.0.0.1, an
AM in session mode (`tide submit --session`), the workload's jobs posted to the AM's
POST /api/v1/jobs at their offsets, the AM's live executors sampled every 100 ms from
GET /api/v1/status.  python3 tide_session.py BUILD_DIR WORKLOAD POLICY
Prints one JSON object: each job's time (its stage's submission to completion, from the AM),
executor-seconds and the samples [(seconds, executors)]. Kills everything it started.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from workloads import WORKLOADS, integrate

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tide_bench  # noqa: E402
from tide_bench import free_port, get, post, stop_all  # noqa: E402


def poll(what, check, timeout=60):
    return tide_bench.poll(what, check, timeout, interval=0.1)


def job_json(name, tasks, seconds):
    return {"name": name, "stages": [{"id": "s", "tasks": tasks, "builtin": "sleep",
                                      "sleep_ms": int(seconds * 1000)}]}


def main():
    build, workload, policy = sys.argv[1], sys.argv[2], sys.argv[3]
    jobs = WORKLOADS[workload]
    bin_dir = os.path.abspath(os.path.join(build, "bin"))
    work = tempfile.mkdtemp(prefix="tide-elasticity-")
    rm_port, nm_port, ui_port = free_port(), free_port(), free_port()
    rm_url = "http://127.0.0.1:%d" % rm_port
    am_url = "http://127.0.0.1:%d" % ui_port
    procs = []
    log = open(os.path.join(work, "daemons.log"), "w")
    # tide-rm creates its secret here; tide-nm and tide submit read it (docs/security.md).
    secret_file = os.path.join(work, "rm.secret")
    secret = "--conf", "rm.secretFile=" + secret_file
    try:
        procs.append(subprocess.Popen(
            [bin_dir + "/tide-rm", "--conf", "rm.port=%d" % rm_port, "--conf", "log.level=warn",
             *secret],
            stdout=log, stderr=log, start_new_session=True))
        # tide-nm derives its node credential from the secret; started once the file is there
        # it registers at once (one started earlier re-reads the file each time it is refused).
        admin = poll("the secret file", lambda: open(secret_file).read().strip())
        procs.append(subprocess.Popen(
            [bin_dir + "/tide-nm", "--conf", "nm.rm=" + rm_url, "--conf", "nm.port=%d" % nm_port,
             "--conf", "nm.cores=10", "--conf", "nm.memory=6g",
             "--conf", "nm.workDir=" + os.path.join(work, "nm"), "--conf", "log.level=warn",
             *secret],
            stdout=log, stderr=log, start_new_session=True))
        poll("the node to register",
             lambda: get(rm_url + "/ws/v1/cluster/metrics",
                         admin)["clusterMetrics"]["activeNodes"] >= 1)
        warmup = os.path.join(work, "warmup.json")
        with open(warmup, "w") as f:
            json.dump({"name": "warmup", "stages": [{"id": "w", "tasks": 1, "builtin": "noop"}]}, f)
        app_id = subprocess.run(
            [bin_dir + "/tide", "submit", "--master", rm_url, warmup, "--session", *secret,
             "--conf", "dynamicAllocation.policy=" + policy,
             "--conf", "dynamicAllocation.maxExecutors=8",
             "--conf", "dynamicAllocation.executorIdleTimeout=3s",
             "--conf", "executor.cores=1", "--conf", "executor.memory=256m",
             "--conf", "am.memory=256m", "--conf", "ui.port=%d" % ui_port,
             "--conf", "log.level=warn"],
            check=True, stdout=subprocess.PIPE, stderr=log, text=True).stdout.strip()
        token = get(rm_url + "/ws/v1/cluster/apps/%s/control-token" % app_id,
                    admin)["controlToken"]
        # The warm-up job done and its executor gone: the workload starts from nothing.
        poll("the warm-up job", lambda: all(j["state"] == "SUCCEEDED"
                                            for j in get(am_url + "/api/v1/jobs")["jobs"])
             and get(am_url + "/api/v1/jobs")["jobs"], timeout=120)
        poll("the warm-up executor to go",
             lambda: get(am_url + "/api/v1/status")["allocation"]["live"] == 0, timeout=120)

        samples = []
        stop = threading.Event()
        start = time.monotonic()

        def sample():
            while not stop.is_set():
                try:
                    live = get(am_url + "/api/v1/status")["allocation"]["live"]
                    samples.append((round(time.monotonic() - start, 2), live))
                except Exception:
                    pass
                time.sleep(max(0.0, 0.1 - (time.monotonic() - start) % 0.1))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        ids = []
        for i, (offset, tasks, seconds) in enumerate(jobs):
            delay = start + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            ids.append(post(am_url + "/api/v1/jobs",
                            job_json("%s-%d" % (workload, i + 1), tasks, seconds), token)["id"])

        def finished():
            out = []
            for job_id in ids:
                job = get(am_url + "/api/v1/jobs/" + job_id)
                if job["state"] != "SUCCEEDED":
                    if job["state"] in ("FAILED", "CANCELLED"):
                        raise SystemExit("job %s %s: %s" % (job_id, job["state"], job["message"]))
                    return None
                out.append(round(job["stages"][0]["durationMs"] / 1000.0, 2))
            return out

        times = poll("the jobs", finished, timeout=600)
        poll("the executors to go",
             lambda: get(am_url + "/api/v1/status")["allocation"]["live"] == 0, timeout=120)
        time.sleep(0.2)
        stop.set()
        sampler.join()
        # Each sample stands for the 100 ms it was taken in.
        executor_seconds = integrate(samples)
        print(json.dumps({"system": "tide-" + policy, "job_seconds": times,
                          "executor_seconds": executor_seconds, "samples": samples}))
    finally:
        stop_all(procs)  # the node manager stops its containers (the AM, executors)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
