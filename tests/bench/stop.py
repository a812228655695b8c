#!/usr/bin/env python3
"""How long from SIGTERM to the entrypoint's exit? The real entrypoint under bash, as a worker and as
rank 0 of a persistent cluster (which first marks three workers to rejoin, stops scheduling and
cancels the running jobs), with the tests' stand-in `flux`. And how long from rank 0's SIGTERM until
its replacement's instance, restarted from the state volume, takes jobs again (scheduling started
again). It measures the entrypoint's own part: a real broker's clean stop and start, and Kubernetes
making the replacement pod, come on top of it.

    venv/bin/python -m tests.bench.stop                 # 10 runs each
    venv/bin/python -m tests.bench.stop --runs 30
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.pods import BLOCK, Pods, SavedInstance, instance_up, stop, wait_for  # the entrypoint tests' harness

WORKERS = (1, 2, 3)


def time_to_exit(rank: int) -> float:
    """Seconds from SIGTERM to the exit of one entrypoint, whose broker was running."""
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        pods = Pods(tmp, command=None)
        env = dict(BLOCK)
        if rank == 0:
            for worker in WORKERS:
                (tmp / f"state-{worker}").mkdir()
            env["STANDIN_EXEC_ON"] = " ".join(str(tmp / f"state-{worker}") for worker in WORKERS)
        run, took = stop(pods.start(rank, **env))
        if run.status != 143:
            raise RuntimeError(f"rank {rank} exited {run.status}, not 143:\n{run.stderr}")
        return took


def time_to_taking_jobs() -> float:
    """Seconds from rank 0's SIGTERM (two jobs running, two waiting) until its replacement, started at
    once beside the stopping pod, has scheduling started again."""
    with tempfile.TemporaryDirectory() as directory:
        cluster = SavedInstance(Path(directory))
        old = cluster.busy()
        sent = time.monotonic()
        old[0].send_signal(signal.SIGTERM)
        replacement = cluster.start_rank0()

        # Up, then started: the replacement's instance loads the queue its predecessor stopped.
        def taking_jobs() -> bool:
            return instance_up(replacement[1]) and bool(cluster.state()["queue"]["started"])

        wait_for(taking_jobs, "scheduling to start again", timeout=60)
        took = time.monotonic() - sent
        if Pods.wait(old).status != 143:
            raise RuntimeError("the old rank 0 did not exit 143")
        stop(replacement, saved=True)
        return took


def table(runs: int) -> str:
    lines = ["| what | runs | min (ms) | median (ms) | max (ms) |", "| --- | ---: | ---: | ---: | ---: |"]
    measures: tuple[tuple[str, Callable[[], float]], ...] = (
        ("worker: SIGTERM to exit", lambda: time_to_exit(1)),
        ("rank 0: SIGTERM to exit (marks 3 workers, stops scheduling, cancels running jobs)", lambda: time_to_exit(0)),
        ("rank 0: SIGTERM to its replacement's instance taking jobs again", time_to_taking_jobs),
    )
    for label, measure in measures:
        times = [measure() * 1000 for _ in range(runs)]
        lines.append(f"| {label} | {runs} | {min(times):.0f} | {statistics.median(times):.0f} | {max(times):.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs per pod (default 10)")
    print(table(parser.parse_args().runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
