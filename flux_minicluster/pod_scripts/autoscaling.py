"""The autoscaler's decisions (autoscaler.py runs them in rank 0's pod): pure functions from what it
observed of the instance to the size the cluster should have, and why. No Flux, no Kubernetes, no
clock of their own: the tests run them directly, with every situation hypothesis can think of.

Standard library only, annotations as strings: an image's Python may be older than the project's.
"""

from typing import NamedTuple


class Observed(NamedTuple):
    """One look at the instance."""

    size: int
    """The Job's size now: ranks 0..size-1 have pods (or are getting them)."""
    up: "frozenset[int]"
    """Ranks whose broker is online."""
    drained: "frozenset[int]"
    """Ranks drained (or draining): no new work lands there."""
    busy: "frozenset[int]"
    """Ranks with something allocated on them."""
    waiting: "tuple[int, ...]"
    """For each job waiting for resources (held jobs and stopped queues left out): the nodes it needs."""


class Bounds(NamedTuple):
    smallest: int
    """minSize, else 1."""
    largest: int
    """maxSize: the hostlist's length."""
    scale_down_after: float
    """Seconds a rank must have been idle before a shrink may take it."""
    cooldown: float
    """Seconds after a change before the next one."""


class Decision(NamedTuple):
    size: int
    reason: str


def idle_since(previous: "dict[int, float]", observed: Observed, now: float) -> "dict[int, float]":
    """Since when each rank below the size has been idle (its broker up, nothing allocated on it); a
    rank that is busy, down or gone starts over."""
    idle = (rank for rank in range(observed.size) if rank in observed.up and rank not in observed.busy)
    return {rank: previous.get(rank, now) for rank in idle}


def free_nodes(observed: Observed) -> int:
    """Ranks below the size that can take a job now or once their broker is up: not drained, nothing on them."""
    return sum(1 for rank in range(observed.size) if rank not in observed.drained and rank not in observed.busy)


def decide(
    observed: Observed, idle: "dict[int, float]", bounds: Bounds, now: float, last_change: "float | None"
) -> "Decision | None":
    """The size the cluster should have, or None to leave it. Waiting jobs that need more nodes than are
    free grow it by the shortfall (up to maxSize), at once; with no job waiting, the highest ranks idle
    for scaleDownAfter go (never below minSize), but not within the cooldown of the last change."""
    size = observed.size
    if observed.waiting:
        need, free = sum(observed.waiting), free_nodes(observed)
        target = min(bounds.largest, size + need - free)
        if target <= size:
            return None
        jobs = len(observed.waiting)
        needs = "needs" if jobs == 1 else "need"
        return Decision(target, f"{_count(jobs, 'queued job')} {needs} {_count(need, 'node')}, {free} free")
    if last_change is not None and now - last_change < bounds.cooldown:
        return None
    target = size
    while target > bounds.smallest and _idle_for(idle, target - 1, now) >= bounds.scale_down_after:
        target -= 1
    if target >= size:
        return None
    return Decision(target, f"no job waits, and ranks {span(target, size - 1)} have been idle for "
                            f"{bounds.scale_down_after:g}s")  # fmt: skip


def span(first: int, last: int) -> str:
    """The ranks first..last, as Flux writes them (an idset): 3, or 1-3."""
    return str(first) if first == last else f"{first}-{last}"


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'s' * (number != 1)}"


def _idle_for(idle: "dict[int, float]", rank: int, now: float) -> float:
    return now - idle[rank] if rank in idle else -1.0
