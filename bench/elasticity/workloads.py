"""The three workloads of the elasticity benchmark, as (offset seconds, tasks, task seconds) jobs.

- bursts: three bursts of 200 tasks of 200 ms, 20 s apart (ideal on 8 one-slot executors: each
  burst 5 s, 40 executor-seconds).
- stream: a task of 1 s every 250 ms for 30 s: half the capacity of 8 executors, steadily.
- long-then-short: one stage of 8 tasks of 10 s, then from 10 s a stage of 8 tasks of 100 ms
  every 500 ms, 40 of them.
The same shapes as examples/traces/{bursts,stream,long-then-short}.jsonl.
"""

WORKLOADS = {
    "bursts": [(20.0 * i, 200, 0.2) for i in range(3)],
    "stream": [(0.25 * i, 1, 1.0) for i in range(120)],
    "long-then-short": [(0.0, 8, 10.0)] + [(10.0 + 0.5 * i, 8, 0.1) for i in range(40)],
}


def integrate(samples):
    """Executor-seconds from (seconds, executors) samples: each count holds until the next one."""
    total = 0.0
    for (t0, n), (t1, _) in zip(samples, samples[1:]):
        total += n * (t1 - t0)
    return round(total, 1)
