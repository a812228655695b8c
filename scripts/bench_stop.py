#!/usr/bin/env python3
"""How long from SIGTERM to the entrypoint's exit? The real entrypoint under bash, as a worker and as
rank 0 of a persistent cluster (which first marks three workers to rejoin and cancels the running
jobs), with the tests' stand-in `flux`. It measures the entrypoint's own part: a real broker's clean
stop comes on top of it.

    python scripts/bench_stop.py                 # 10 runs each
    python scripts/bench_stop.py --runs 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pods import BLOCK, Pods, stop  # noqa: E402  (the entrypoint tests' own harness)

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


def table(runs: int) -> str:
    lines = ["| pod | runs | min (ms) | median (ms) | max (ms) |", "| --- | ---: | ---: | ---: | ---: |"]
    for label, rank in (("worker", 1), ("rank 0 (marks 3 workers, cancels running jobs)", 0)):
        times = [time_to_exit(rank) * 1000 for _ in range(runs)]
        lines.append(f"| {label} | {runs} | {min(times):.0f} | {statistics.median(times):.0f} | {max(times):.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs per pod (default 10)")
    print(table(parser.parse_args().runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
