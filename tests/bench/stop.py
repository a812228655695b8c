#!/usr/bin/env python3
"""How long from SIGTERM to a broker pod's exit, and from rank 0's SIGTERM to its replacement taking
jobs again? Real Flux brokers in the Job's pods on this machine (tests/kubelet): a persistent
MiniCluster of 4 brokers whose rank 0 keeps its state on a claim, with two jobs running on all four
nodes and two waiting. Timed: a worker's exit; rank 0's exit (it marks the workers to rejoin, stops
scheduling, cancels the running jobs, then its broker shuts the instance down); and, with the
replacement pod started at once beside the stopping one (as Kubernetes does without
podReplacementPolicy Failed), until the two queued jobs run on the restarted instance. Kubernetes'
own part (the kubelet's stop, scheduling the replacement, pulling its image) comes on top.

    venv/bin/python -m tests.bench.stop                 # 5 runs each
    venv/bin/python -m tests.bench.stop --runs 10

Needs root (namespaces) and flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flux_minicluster.config.loader import load_spec
from tests.bench.spread import spread
from tests.conftest import config
from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet
from tests.realflux.test_real_rank0_replacement import Busy

STOPPED = 143


def busy_cluster(directory: Path) -> tuple[Busy, list[Kubelet]]:
    made: list[Kubelet] = []

    def make(**overrides: Any) -> Kubelet:
        spec = load_spec({f"minicluster:{key}": value for key, value in config(**overrides).items()}, "dev")
        made.append(Kubelet(directory / f"cluster-{len(made)}", spec))
        return made[-1]

    return Busy(make), made


def measured(measure: Callable[[Busy], float]) -> float:
    with tempfile.TemporaryDirectory() as directory:
        busy, made = busy_cluster(Path(directory))
        try:
            return measure(busy)
        finally:
            for kubelet in made:
                kubelet.close()


def worker_exit(busy: Busy) -> float:
    worker = busy.cluster.pod(1)
    sent = time.monotonic()
    if worker.terminate() != STOPPED:
        raise RuntimeError(f"the worker did not exit {STOPPED}:\n{worker.log}")
    return time.monotonic() - sent


def rank0_exit(busy: Busy) -> float:
    sent = time.monotonic()
    if busy.rank0.terminate() != STOPPED:
        raise RuntimeError(f"rank 0 did not exit {STOPPED}:\n{busy.rank0.log}")
    return time.monotonic() - sent


def replacement_taking_jobs(busy: Busy) -> float:
    old = busy.rank0
    sent = time.monotonic()
    old.signal(signal.SIGTERM)
    busy.cluster.start(0)
    replacement = busy.cluster.pod(0)
    wait_until(replacement.ready, "the replacement's broker to be up", 60)
    wait_until(lambda: busy.states()[2:] == ["R", "R"], "the queued jobs to run", 30)
    took = time.monotonic() - sent
    if old.wait(timeout=30) != STOPPED:
        raise RuntimeError(f"the old rank 0 did not exit {STOPPED}:\n{old.log}")
    return took


MEASURES: tuple[tuple[str, Callable[[Busy], float]], ...] = (
    ("worker: SIGTERM to exit", worker_exit),
    ("rank 0: SIGTERM to exit (marks 3 workers, stops scheduling, cancels 2 running jobs, shuts down)", rank0_exit),
    ("rank 0: SIGTERM to its replacement running the 2 queued jobs", replacement_taking_jobs),
)


def table(runs: int) -> str:
    lines = ["| what | runs | min (ms) | median (ms) | max (ms) |", "| --- | ---: | ---: | ---: | ---: |"]
    for label, measure in MEASURES:
        times = [measured(measure) * 1000 for _ in range(runs)]
        lines.append(f"| {label} | {runs} | {spread(times, 0)} |")
        print(lines[-1], file=sys.stderr, flush=True)  # progress: each run brings a cluster up
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default 5)")
    print(table(parser.parse_args().runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
