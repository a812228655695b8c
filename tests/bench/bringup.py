#!/usr/bin/env python3
"""How far is a MiniCluster's bring-up from Flux's own? Real brokers: per size, the pods of the Job
(tests/kubelet: each in its own network namespace with its own hostname, the real entrypoint, the
rendered ConfigMaps and Secret) against `flux start -s N` (Flux's own instance of that size on one
machine: the floor), in alternating runs on the same machine. Both run the same command the same way
(`flux submit --watch -N N -n N date +%s.%N`), and each is timed from its start (the pods' containers,
released at one instant; the `flux start` process) to the command's first task (its printed time),
and to its exit (rank 0's container; `flux start`), with the CPU seconds per broker of all that each
run started (for the pods, the test kubelet's set-up of their containers too). Printed as medians
and their ratios.

    venv/bin/python -m tests.bench.bringup                      # sizes 3, 8, 16, 32; 5 runs each
    venv/bin/python -m tests.bench.bringup --sizes 3,8 --runs 3

Needs root (namespaces) and flux-core 0.88 installed (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.flux_instance import flux_env
from tests.kubelet.image import FLUX
from tests.kubelet.pods import Kubelet

DEFAULT_SIZES = (3, 8, 16, 32)
COMMAND = ("date", "+%s.%N")
STAMP = re.compile(r"^(\d{10}\.\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class Timing:
    to_command: float
    to_exit: float
    cpu: float = 0.0
    """CPU seconds of every process the run started (for the pods: the test kubelet's set-up of their
    containers and network too), as this process's children's resource usage counts them once reaped."""


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def with_cpu(run: Callable[[int], Timing], size: int) -> Timing:
    before = children_cpu()
    timing = run(size)
    return Timing(timing.to_command, timing.to_exit, children_cpu() - before)


def first_stamp(output: str, since: float) -> float:
    stamps = [float(found) for found in STAMP.findall(output)]
    if not stamps:
        raise RuntimeError(f"the command printed no time:\n{output}")
    return min(stamps) - since


def bench_spec(size: int) -> MiniClusterSpec:
    """The benchmark's MiniCluster: `size` brokers, COMMAND run once on each."""
    raw = {"image": "bench", "size": size, "tasks": size, "command": " ".join(COMMAND)}
    return load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "bench")


def minicluster(size: int) -> Timing:
    """The Job's pods, released at once; timed to rank 0's container's exit."""
    spec = bench_spec(size)
    with tempfile.TemporaryDirectory() as directory:
        kubelet = Kubelet(Path(directory), spec)
        try:
            rank0 = kubelet.start_all()[0]
            status = rank0.wait(timeout=120)
            ended = time.time()
            if status != 0:
                raise RuntimeError(f"rank 0 exited {status}:\n{rank0.log}")
            return Timing(first_stamp(rank0.log, kubelet.started_at), ended - kubelet.started_at)
        finally:
            kubelet.close()


def floor(size: int) -> Timing:
    """`flux start -s N` running the same command as rank 0 does."""
    command = [str(FLUX), "start", "-s", str(size), "flux", "submit", "--watch", f"-N{size}", f"-n{size}", *COMMAND]
    env = flux_env({})  # as the pods' brokers have it
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True, env=env)
    ended = time.time()
    return Timing(first_stamp(done.stdout, started), ended - started)


def measure(size: int, runs: int) -> tuple[list[Timing], list[Timing]]:
    """Alternating, so that both see the same machine."""
    pods, floors = [], []
    for _ in range(runs):
        pods.append(with_cpu(minicluster, size))
        floors.append(with_cpu(floor, size))
    return pods, floors


def table(sizes: list[int], runs: int) -> str:
    lines = [
        "| brokers | runs | MiniCluster to command (s) | `flux start -s N` to command (s) | ratio "
        "| MiniCluster to exit (s) | `flux start -s N` to exit (s) | ratio "
        "| MiniCluster CPU per broker (s) | `flux start -s N` CPU per broker (s) | ratio |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in sizes:
        pods, floors = measure(size, runs)
        cells = [str(size), str(runs)]
        for field, per in (("to_command", 1), ("to_exit", 1), ("cpu", size)):
            ours = statistics.median(getattr(timing, field) for timing in pods) / per
            theirs = statistics.median(getattr(timing, field) for timing in floors) / per
            cells += [f"{ours:.2f}", f"{theirs:.2f}", f"{ours / theirs:.2f}"]
        lines.append(f"| {' | '.join(cells)} |")
        print(lines[-1], file=sys.stderr, flush=True)  # progress: a size can take a minute
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated broker counts")
    parser.add_argument("--runs", type=int, default=5, help="runs of each, alternating (default 5)")
    args = parser.parse_args(argv)
    print(table([int(size) for size in args.sizes.split(",")], args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
