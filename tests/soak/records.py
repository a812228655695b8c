"""What the soak (soak.py) records, of each job it submitted and each fault it injected, and its report of
them. The contract it holds the instance to (docs/lost-pods.md): no job is lost, but to `rank 0 killed`,
and then only jobs submitted within `checkpointPeriod` of it."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Submitted:
    job: str
    at: float


@dataclass
class Fault:
    kind: str
    ranks: tuple[int, ...]
    at: float
    ended: float = 0.0
    """When the fault was over: the pods stopped, or the link back up."""
    whole_after: float = 0.0
    """Seconds from the fault's end to every rank up again (each pod's readiness: its broker in the instance)."""
    moving_after: float = 0.0
    """Seconds from the fault's end to a new job's end (the queue moving again)."""
    drained: str = ""
    """Ranks Flux held drained once the queue moved (`flux resource drain`): none, or a rank lost for good."""


@dataclass
class Outcome:
    submitted: list[Submitted]
    ended: dict[str, str]
    """Job -> its result, with Flux's exception for one that did not complete."""
    faults: list[Fault]
    refused: int
    """Submissions the instance did not take (rank 0 away): never accepted, so never lost."""
    unanswered: int
    """Submissions that exited 0 with no job id: flux-core 0.88's `flux submit` does so when its broker
    stops while the submission is in flight (tests/realflux/test_real_flux_cli.py). Not counted as lost."""
    checkpoint_period: float
    """The state volume's checkpointPeriod: a killed rank 0 may lose the jobs submitted within it."""
    lost: list[Submitted] = field(default_factory=list)
    active: list[str] = field(default_factory=list)

    def lost_beyond_the_bound(self) -> list[Submitted]:
        """Lost jobs the contract does not allow: not submitted within a checkpoint period before a
        `rank 0 killed` fault (nor while its replacement came up)."""
        windows = [(f.at - self.checkpoint_period, f.ended + f.whole_after) for f in self.faults if "killed" in f.kind
                   and 0 in f.ranks]  # fmt: skip
        return [job for job in self.lost if not any(start <= job.at <= end for start, end in windows)]


def report(outcome: Outcome) -> str:
    results = Counter(outcome.ended.get(job.job, "") for job in outcome.submitted)
    kinds = Counter(fault.kind for fault in outcome.faults)
    lines = [
        f"faults: {len(outcome.faults)} ({', '.join(f'{kind} {count}' for kind, count in kinds.items())})",
        f"jobs submitted: {len(outcome.submitted)} (and {outcome.refused} submissions refused while rank 0 was away, "
        f"{outcome.unanswered} answered with no job id)",
        f"completed: {results['COMPLETED']}",
        *[f"{result}: {count}" for result, count in sorted(results.items()) if result not in ("COMPLETED", "")],
        f"still active at the end: {len(outcome.active)}",
        f"lost: {len(outcome.lost)}, of which beyond the bound: {len(outcome.lost_beyond_the_bound())}",
        f"ranks left drained after a fault: {sum(1 for fault in outcome.faults if fault.drained)}",
    ]  # fmt: skip
    for job in outcome.lost:
        near = min(outcome.faults, key=lambda fault: abs(fault.at - job.at))
        lines.append(f"lost {job.job}: submitted {job.at - near.at:+.1f}s from {near.kind} {near.ranks}")
    for kind in kinds:  # in the order they first came
        whole = [f.whole_after for f in outcome.faults if f.kind == kind]
        moving = [f.moving_after for f in outcome.faults if f.kind == kind]
        lines.append(f"{kind}: whole again {spread(whole)}, queue moving {spread(moving)} (min / median / max)")
    return "\n".join(lines)


def spread(values: list[float]) -> str:
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f} s"
