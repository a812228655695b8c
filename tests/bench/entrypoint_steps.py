#!/usr/bin/env python3
"""Where one pod's start goes, step by step: from its container's command starting (the entrypoint) to
its broker up in the instance and the command's first task on it, with each step's wall time and CPU
seconds, for rank 0 and for a worker. Real Flux: the Job's pods on this machine (tests/kubelet, as
tests.bench.bringup runs them: the real entrypoint, the rendered ConfigMaps and Secret, the containers
released at one instant), running `flux submit --watch -N N -n N date`.

    venv/bin/python -m tests.bench.entrypoint_steps                 # 3 brokers, 3 runs
    venv/bin/python -m tests.bench.entrypoint_steps --size 8 --runs 5

Each run is seen from outside the pods, as the kernel reports it (tests/bench/process_trace.py): when
each process forks, execs and exits, and each one's CPU time as it exits, by the host's process ids.
Nothing is stopped to see it, so a run takes as long as an unseen one. A step's CPU is that of the
processes it ran, whole: a process that lives on past its step (the entrypoint's shell, the broker,
the scheduler) is a CPU row of its own, over its whole life.

Needs root and flux-core 0.88 (MC_FLUX_PREFIX, default /opt/flux: tests/kubelet/image.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from tests.bench import process_trace
from tests.bench.process_trace import Process

STEPS = (
    ("shell", "the entrypoint's shell: its scripts sourced, rank and size read"),
    ("prepare", "`mkdir`, `install`: the state folders and the private certificate"),
    ("resources", "`flux R encode`: this pod's cores (hwloc; a worker writes its R in bash)"),
    ("broker", "the broker's start, until it runs rc1 (a worker: it joined rank 0 first)"),
    ("rc1", "rc1: Flux's own (`flux modprobe rc1`, Python) on rank 0; `worker_rc.sh 1` on a worker"),
    ("quorum", "rc1's end to the broker up: rank 0 waits for the workers (its initial program then starts)"),
    ("up", "**the broker up**"),
    ("task", "the command's first task on this pod (`date`)"),
)
CPU_ONLY = (
    ("shell_life", "CPU: the entrypoint's shell over its whole life"),
    ("broker_life", "CPU: the broker over its whole life (its start, the command, its shutdown)"),
    ("scheduler_life", "CPU: the scheduler (sched-simple, a Python module rc1 loads) over its whole life"),
    ("beside", "CPU: beside the broker until the first task (a worker's undrain step, rank 0's `flux submit`)"),
    ("to_up", "CPU: **every process of the pod that ended before the broker was up** (its shell and broker aside)"),
    ("pod", "CPU: **the whole pod, to its end** (bring-up, the command, the instance's shutdown)"),
)
Step = tuple[float | None, float | None, float | None]
"""When a step began (s from the entrypoint's exec), what it took (s), and its CPU (s); None where the
pod has no such step, a milestone ("up", "task") takes no time, or a row has no time or CPU of its own."""


def steps(pod: list[Process], entry: Process, rank: int) -> dict[str, Step]:
    """One pod's steps, its root `entry` being the process that became the entrypoint."""
    t0 = entry.exec_at
    children = sorted((p for p in pod if p.parent == entry.pid and p.started_at >= t0), key=lambda p: p.started_at)
    programs = [p for p in children if p.program is not None]
    broker = next(p for p in children if p.name.startswith("flux-broker"))
    spawned = sorted((p for p in pod if p.parent == broker.pid), key=lambda p: p.started_at)
    rc1 = spawned[0]  # the broker's first child: its rc1, which the broker runs before anything else
    task = min((p for p in pod if p.program == "date"), key=lambda p: p.exec_at)
    if rank == 0:  # up: the instance runs its initial program, this benchmark's `flux submit` (Python)
        up = next(p for p in spawned if p.started_at > rc1.ended_at and p.name == "python3").exec_at
    else:
        up = rc1.ended_at
    prepare = [p for p in children if p.program in ("mkdir", "install")]
    encode = [p for p in children if p.program == "flux-R"]
    scheduler = [p for p in spawned if p.name == "sched-simple"]
    prepared = max(p.ended_at for p in prepare)
    beside = [p for p in children if p.program is None and p.started_at > prepared]  # a worker's undrain step
    beside += [p for p in spawned if p.started_at > rc1.ended_at and p.exec_at <= up]  # rank 0's initial program
    found: dict[str, Step] = {
        "shell": (0.0, programs[0].exec_at - t0, None),
        "prepare": span(prepare, t0, pod),
        "resources": span(encode, t0, pod),
        "broker": (broker.exec_at - t0, rc1.started_at - broker.exec_at, None),
        "rc1": span([rc1], t0, pod),
        "quorum": (rc1.ended_at - t0, up - rc1.ended_at, None),
        "up": (up - t0, None, None),
        "task": (task.exec_at - t0, None, None),
        "shell_life": (None, None, entry.cpu),
        "broker_life": (None, None, broker.cpu),
        "scheduler_life": (None, None, sum(p.subtree_cpu(pod) for p in scheduler)),
        "beside": (None, None, sum(p.subtree_cpu(pod) for p in beside if p.started_at < task.exec_at)),
        "to_up": (None, None, sum(p.cpu for p in pod if p.ended_at <= up and p is not entry and p is not broker)),
        "pod": (None, None, sum(p.cpu for p in pod)),
    }
    return found


def span(processes: list[Process], t0: float, pod: list[Process]) -> Step:
    """Processes run one after the other: from the first's start to the last's end, and their CPU."""
    if not processes:
        return (None, None, None)
    began = min(p.started_at for p in processes)
    return (began - t0, max(p.ended_at for p in processes) - began, sum(p.subtree_cpu(pod) for p in processes))


def traced_run(size: int) -> list[dict[str, Step]]:
    """One bring-up, its processes reported by the kernel: rank 0's steps, then a worker's."""
    with tempfile.TemporaryDirectory(prefix="entrypoint-steps-") as directory:
        pods_file = Path(directory) / "pods.json"
        command = [sys.executable, "-m", "tests.bench.process_trace", "--run", str(size), str(pods_file)]
        processes = process_trace.traced(command)
        roots = json.loads(pods_file.read_text())["roots"]
    found = []
    for rank in (0, 1):
        root = processes[roots[rank]]
        found.append(steps(process_trace.subtree(list(processes.values()), [root]), root, rank))
    return found


def table(size: int, runs: int) -> str:
    results = [traced_run(size) for _ in range(runs)]
    lines = [
        f"| step ({size} brokers; medians of {runs} runs) | rank 0: at (s) | takes (s) | CPU (s) "
        "| a worker: at (s) | takes (s) | CPU (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, label in (*STEPS, *CPU_ONLY):
        cells = [label]
        for rank in (0, 1):
            cells += [median([run[rank][key][i] for run in results]) for i in range(3)]
        lines.append(f"| {' | '.join(cells)} |")
    return "\n".join(lines)


def median(values: list[float | None]) -> str:
    """The median, or an empty cell where the row has no such figure."""
    known = [value for value in values if value is not None]
    return f"{statistics.median(known):.3f}" if known else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=3, help="brokers (default 3)")
    parser.add_argument("--runs", type=int, default=3, help="runs, each traced (default 3)")
    args = parser.parse_args(argv)
    print(table(args.size, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
