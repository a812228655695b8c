"""Every process a command starts, as the kernel reports it while it runs (tests/bench/kernel_reports.py):
when each forked, exec'd and exited, its parent, its command's name, and its own CPU seconds, its
threads' included. Nothing is stopped or slowed to see it. Processes are named by the host's ids, also
those inside the pods' PID namespaces. For tests.bench.entrypoint_steps.

`python -m tests.bench.process_trace --run SIZE FILE` is the traced command itself: the Job's pods of
a MiniCluster of SIZE (tests/kubelet, real Flux) brought up and run to their end, with the host's id of
each pod's first process written to FILE (JSON), in the order of their ranks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.kernel_reports import EXEC, EXIT, FORK, ProcessEvents, TaskCpu


@dataclass
class Process:
    pid: int
    parent: int | None = None
    started_at: float = 0.0
    execs: list[float] = field(default_factory=list)
    ended_at: float = float("inf")
    name: str = ""
    """Its command's name at its end (the kernel's comm: the last program's, 15 characters at most)."""
    cpu: float = 0.0
    """Its own CPU seconds, its threads' included (its children's are theirs)."""

    @property
    def exec_at(self) -> float:
        """When its last program began (the one it ran to its end), or its start if it exec'd none."""
        return self.execs[-1] if self.execs else self.started_at

    @property
    def program(self) -> str | None:
        """Its last program's name; None for a fork that ran no program of its own (a subshell)."""
        return self.name if self.execs else None

    def subtree_cpu(self, processes: Iterable[Process]) -> float:
        return sum(p.cpu for p in subtree(list(processes), [self]))


def subtree(processes: list[Process], roots: Iterable[Process]) -> list[Process]:
    """The roots and every process that descends from them."""
    children: dict[int, list[Process]] = {}
    for process in processes:
        if process.parent is not None:
            children.setdefault(process.parent, []).append(process)
    found, queue = [], list(roots)
    while queue:
        process = queue.pop()
        found.append(process)
        queue.extend(children.get(process.pid, []))
    return found


def traced(command: list[str]) -> dict[int, Process]:
    """Run `command` while the kernel reports every process; its processes (and the machine's others of
    that time, which no root of the command's reaches) by the host's id."""
    with ProcessEvents() as events, TaskCpu() as cpu:
        subprocess.run(command, check=True)
    processes: dict[int, Process] = {}
    thread_of: dict[int, int] = {}
    for event in events.events:
        if event.kind == FORK and event.child_pid != event.child_tgid:  # a thread
            thread_of[event.child_pid] = event.child_tgid
        elif event.kind == FORK:
            processes[event.child_pid] = Process(event.child_pid, event.tgid, event.at)
        elif event.kind == EXEC and event.pid in processes:
            processes[event.pid].execs.append(event.at)
        elif event.kind == EXIT and event.pid == event.tgid and event.pid in processes:
            processes[event.pid].ended_at = event.at
    for tid, seconds in cpu.seconds.items():
        owner = processes.get(thread_of.get(tid, tid))
        if owner is not None:
            owner.cpu += seconds
    for pid, process in processes.items():
        process.name = cpu.names.get(pid, "")
    return processes


def run_pods(size: int, out: Path) -> None:
    """The traced command: the pods of a MiniCluster of `size`, started at once, run to their end."""
    from tests.bench.bringup import bench_spec
    from tests.kubelet.pods import Kubelet

    spec = bench_spec(size)
    with tempfile.TemporaryDirectory() as directory:
        kubelet = Kubelet(Path(directory), spec)
        try:
            pods = kubelet.start_all()
            for pod in pods:
                if pod.wait(timeout=120) != 0:
                    raise RuntimeError(f"{pod.name} did not end well:\n{pod.log}")
            out.write_text(json.dumps({"roots": [pod.pid for pod in pods]}))
        finally:
            kubelet.close()


if __name__ == "__main__":
    if sys.argv[1:2] != ["--run"] or len(sys.argv) != 4:
        sys.exit("usage: python -m tests.bench.process_trace --run SIZE FILE")
    run_pods(int(sys.argv[2]), Path(sys.argv[3]))
