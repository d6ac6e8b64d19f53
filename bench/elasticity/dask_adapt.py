"""A workload through Dask distributed's adaptive scaling: LocalCluster.adapt(0, 8), one thread per
worker, the same jobs at the same offsets as tide's side. Run with Debian's python3
(python3-distributed):  /usr/bin/python3 dask_adapt.py WORKLOAD
Prints one JSON object: each job's time, executor-seconds (workers sampled every 100 ms) and
the samples [(seconds, workers)].
"""
import json
import sys
import threading
import time

from dask.distributed import Client, LocalCluster, wait

from workloads import WORKLOADS, integrate


def sleep_task(seconds, index):
    time.sleep(seconds)
    return index


def main():
    jobs = WORKLOADS[sys.argv[1]]
    samples = []
    times = [None] * len(jobs)
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster:
        cluster.adapt(minimum=0, maximum=8)
        with Client(cluster) as client:
            # Warm up as tide's side does: one task (a worker starts), then back to none.
            client.submit(sleep_task, 0, -1, pure=False).result()
            deadline = time.monotonic() + 120
            while len(cluster.scheduler.workers) > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            start = time.monotonic()
            stop = threading.Event()

            def sample():
                while not stop.is_set():
                    samples.append((round(time.monotonic() - start, 2),
                                    len(cluster.scheduler.workers)))
                    time.sleep(0.1)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()

            def run_job(i, tasks, seconds):
                submitted = time.monotonic()
                futures = client.map(sleep_task, [seconds] * tasks, range(tasks), pure=False)
                wait(futures)
                times[i] = round(time.monotonic() - submitted, 2)

            threads = []
            for i, (offset, tasks, seconds) in enumerate(jobs):
                delay = start + offset - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                t = threading.Thread(target=run_job, args=(i, tasks, seconds))
                t.start()
                threads.append(t)
            for t in threads:
                t.join()
            # Until the workers are gone again (adapt's idle release), at most 60 s more.
            deadline = time.monotonic() + 60
            while len(cluster.scheduler.workers) > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.2)
            stop.set()
            sampler.join()
    executor_seconds = integrate(samples)
    print(json.dumps({"system": "dask", "job_seconds": times,
                      "executor_seconds": executor_seconds, "samples": samples}))


if __name__ == "__main__":
    main()
