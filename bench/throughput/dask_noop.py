"""Dask distributed's scheduler throughput for no-op tasks, the peer figure for tide's.

Run with Debian's python3 (python3-distributed): /usr/bin/python3 dask_noop.py TASKS THREADS
Prints one JSON line: {"tasks": N, "seconds": S, "tasks_per_second": R}.
"""
import json
import sys
import time

from dask.distributed import Client, LocalCluster


def noop(x):
    return x


def main():
    tasks = int(sys.argv[1])
    threads = int(sys.argv[2])
    with LocalCluster(n_workers=2, threads_per_worker=threads, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster:
        with Client(cluster) as client:
            client.gather(client.map(noop, range(100), pure=False))  # warm up the workers
            start = time.perf_counter()
            futures = client.map(noop, range(tasks), pure=False)
            client.gather(futures)
            seconds = time.perf_counter() - start
    print(json.dumps({"tasks": tasks, "seconds": round(seconds, 3),
                      "tasks_per_second": round(tasks / seconds, 1)}))


if __name__ == "__main__":
    main()
