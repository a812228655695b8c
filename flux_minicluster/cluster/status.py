"""What a deployed MiniCluster is doing, from its Job, pods and events as the API server returns them:
the one status model of the ops tool (flux_minicluster/ops). Pure: it reads objects, it asks for nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from flux_minicluster.builders.names import BROKER_CONTAINER, KEEPER_CONTAINER, STOPPED
from flux_minicluster.cluster import objects
from flux_minicluster.config import rules, sizing
from flux_minicluster.config.spec import MiniClusterSpec

SUCCEEDED, FAILED = "succeeded", "failed"
"""A Progress's outcome once there is nothing more to wait for."""


@dataclass(frozen=True)
class PodState:
    label: str
    """Running, Pending, ContainerCreating, CrashLoopBackOff, ImagePullBackOff, Succeeded, Failed, …"""
    detail: str = ""
    """The scheduler's or the kubelet's own words, or the exit code."""
    has_log: bool = False
    running: bool = False
    finished: bool = False
    restarting: bool = False
    """Its broker exited and waits to be started again: the log worth reading is the last run's."""

    def __str__(self) -> str:
        return f"{self.label} ({self.detail})" if self.detail else self.label


def pod_state(pod: Any, container: str = BROKER_CONTAINER) -> PodState:
    """The pod's state by its `container` (the Flux broker's, unless told)."""
    status = pod.status
    if status.phase in ("Succeeded", "Failed"):
        code = objects.exit_code(_container_status(pod, container))
        detail = f"exit {code}" if code is not None else (status.reason or "")
        return PodState(status.phase, detail, has_log=pod.spec.node_name is not None, finished=True)
    if pod.metadata.deletion_timestamp is not None:
        return PodState("Terminating", has_log=True)
    if not pod.spec.node_name:
        return PodState("Pending", objects.not_scheduled(pod.status) or "waiting for the scheduler")
    broker = _container_status(pod, container)
    if broker is None or broker.state is None:
        return PodState("PodInitializing", _init_waiting(pod))
    if broker.state.running is not None:
        return PodState("Running", has_log=True, running=True)
    waiting = broker.state.waiting
    if waiting is not None:
        restarted = broker.restart_count > 0
        detail = waiting.message or (f"restarted {broker.restart_count} times" if restarted else "")
        return PodState(waiting.reason or "Waiting", detail, has_log=restarted, restarting=restarted)
    return PodState(status.phase or "Unknown", has_log=True)


def _container_status(pod: Any, container: str) -> Any:
    return next((s for s in pod.status.container_statuses or [] if s.name == container), None)


def _init_waiting(pod: Any) -> str:
    for status in pod.status.init_container_statuses or []:
        waiting = status.state.waiting if status.state else None
        if waiting is not None:
            return f"{status.name}: {waiting.reason}" + (f": {waiting.message}" if waiting.message else "")
    return ""


def age(timestamp: datetime | None, now: datetime) -> str:
    if timestamp is None:
        return "-"
    seconds = max(0, int((now - timestamp).total_seconds()))  # a skewed clock is no reason for "-5s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def restarts(pod: Any) -> int:
    return sum(status.restart_count for status in (pod.status.container_statuses or []))


def pod_rows(pods: Sequence[Any], now: datetime) -> list[tuple[str, ...]]:
    return [
        (str(objects.pod_rank(pod)), pod.metadata.name, str(pod_state(pod)), pod.spec.node_name or "-",
         str(restarts(pod)), age(pod.metadata.creation_timestamp, now))
        for pod in pods
    ]  # fmt: skip


def job_state(job: Any) -> str:
    condition = objects.job_condition(job, ("Complete", "Failed", "Suspended"))
    if condition is None:
        return "Running"
    stopped = (job.metadata.annotations or {}).get(STOPPED)
    if condition.type == "Failed" and stopped:  # not a deadline of the user's: DeadlineExceeded says no more
        return f"Failed (stopped by its scheduling guard: {stopped})"
    return f"{condition.type} ({condition.reason})" if condition.reason else str(condition.type)


def without_pods(job: Any) -> str:
    """Why the Job has no broker pods: it has not made them yet, or it has ended (or is suspended)
    without them, as a Job its scheduling guard stopped ends once Kubernetes has deleted its pods."""
    state = job_state(job)
    if state == "Running":
        return "the Job exists, and Kubernetes has not created its pods yet"
    return f"the Job is {state}, and it has none"


def waiting_reasons(pods: Sequence[Any]) -> list[str]:
    """Why pods that should run do not, one line per rank."""
    return [f"rank {objects.pod_rank(pod)}: {pod_state(pod)}" for pod in pods if not _settled(pod_state(pod))]


def _settled(state: PodState) -> bool:
    return state.running or state.finished


def replacements(job: Any, pods: Sequence[Any], events: Sequence[Any]) -> dict[int, list[str]]:
    """Ranks whose pod was replaced, with why each earlier pod went: what the pod still says (a
    DisruptionTarget condition, an exit code), else its last event (the pod may be gone)."""
    job_name = job.metadata.name
    created = {
        event.message.removeprefix("Created pod: "): _when(event)
        for event in events
        if event.reason == "SuccessfulCreate" and about(job, event)
    } | {pod.metadata.name: pod.metadata.creation_timestamp for pod in pods}
    by_rank: dict[int, list[str]] = {}
    for name in sorted(created, key=lambda name: (created[name] or datetime.min.replace(tzinfo=UTC), name)):
        index = name.removeprefix(f"{job_name}-").rsplit("-", 1)[0]
        if index.isdigit():
            by_rank.setdefault(int(index), []).append(name)
    found = {pod.metadata.name: pod for pod in pods}
    return {  # the newest pod of a rank is its current one; every earlier one was replaced
        rank: [_why_gone(name, found.get(name), events) for name in names[:-1]]
        for rank, names in by_rank.items()
        if len(names) > 1
    }


def about(job: Any, event: Any) -> bool:
    """The event is this Job's, not an earlier Job's of the same name: Kubernetes keeps events for an
    hour, and a replaced Job (a new image, `pulumi up --refresh` after a deletion) has its name."""
    return bool(event.involved_object.uid == job.metadata.uid)


def _when(event: Any) -> datetime | None:
    when: datetime | None = event.first_timestamp or event.event_time or event.metadata.creation_timestamp
    return when


STOP_REASONS = frozenset({"Killing", "Evicted", "Preempted", "Preempting", "TaintManagerEviction", "NodeNotReady"})
"""Events that say why a pod stopped: the kubelet's (stopping its containers, a node-pressure or critical
pod's eviction), the scheduler's preemption, the node controller's. A pod's other events (Scheduled,
Pulled, Started, ...) say how it began, never why it went."""


def _why_gone(name: str, pod: Any, events: Sequence[Any]) -> str:
    for condition in (pod.status.conditions or []) if pod is not None else []:
        if condition.type == "DisruptionTarget" and condition.status == "True":
            return f"{condition.reason}: {condition.message}" if condition.message else str(condition.reason)
    if pod is not None and pod_state(pod).finished:
        return str(pod_state(pod))
    said = [event for event in events if event.involved_object.name == name and event.reason in STOP_REASONS]
    return f"{said[-1].reason}: {said[-1].message}" if said else "deleted"


def live_size(job: Any, spec: MiniClusterSpec) -> int:
    """The Job's own size: a resize changes it before the pods follow (the stack's size is the goal)."""
    return objects.job_size(job) or spec.size


def goal_size(job: Any, spec: MiniClusterSpec) -> int:
    """The size the cluster is on its way to: the stack's, unless rank 0's autoscaler sizes it."""
    return live_size(job, spec) if spec.autoscale.enabled else spec.size


def size_row(job: Any, spec: MiniClusterSpec) -> str:
    size = live_size(job, spec)
    line = f"{size} (minSize {spec.smallest_size}, maxSize {spec.largest_size})"
    if spec.autoscale.enabled:
        line += f"; autoscaled, from {spec.size}"
    elif spec.size != size:
        line += f"; the stack config says {spec.size}: a resize is under way, or run `pulumi up`"
    return line


def autoscaler_row(job: Any, events: Sequence[Any], now: datetime) -> str:
    """The autoscaler's last change (its Events on the Job), and how long ago."""
    said = [(when, event) for event in events if (when := _when(event)) is not None
            and about(job, event) and event.reason in sizing.EVENT_REASONS]  # fmt: skip
    if not said:
        return "no change yet"
    when, last = max(said, key=lambda found: found[0])
    return f"{last.message} ({age(when, now)} ago)"


def ranks_row(pods: Sequence[Any], size: int) -> str:
    """Which ranks of `pods` (some) are in which state, as rank ranges: "Running 0-3; Pending 4-5; leaving 6"."""
    by_state: dict[str, list[int]] = {}
    for pod in pods:
        rank = objects.pod_rank(pod)
        state = "leaving" if rank >= size else pod_state(pod).label
        by_state.setdefault(state, []).append(rank)
    return "; ".join(f"{state} {rules.idset(sorted(set(ranks)))}" for state, ranks in by_state.items())


def status_rows(
    job: Any, pods: Sequence[Any], now: datetime, events: Sequence[Any], spec: MiniClusterSpec
) -> list[tuple[str, str]]:
    phases = Counter(pod.status.phase for pod in pods)
    replaced = replacements(job, pods, events)
    state = job_state(job)
    none = "none yet" if state == "Running" else "none"
    return [
        ("job", f"{job.metadata.namespace}/{job.metadata.name}"),
        ("state", state),
        ("size", size_row(job, spec)),
        ("ranks", ranks_row(pods, live_size(job, spec)) if pods else none),
        *([("autoscaler", autoscaler_row(job, events, now))] if spec.autoscale.enabled else []),
        ("pods", ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items())) or none),
        *(("waiting", reason) for reason in waiting_reasons(pods)),
        *(
            ("replaced", f"rank {rank}: {len(whys)} time{'s' if len(whys) > 1 else ''} ({'; '.join(whys)})")
            for rank, whys in sorted(replaced.items())
        ),
        ("completed indexes", job.status.completed_indexes or "none"),
        ("failed indexes", job.status.failed_indexes or "none"),
        ("age", age(job.metadata.creation_timestamp, now)),
    ]


def keeper_row(pods: Sequence[Any], now: datetime, deployment: str) -> str:
    """The keeper's pod (keeper.enabled), the newest while its Deployment replaces one: its state, as a
    broker pod's is said. Not running, it replaces no lost pod: the Job controller does, after its back-off."""
    if not pods:
        return f"no pod (`kubectl describe deployment {deployment}` says why); lost pods wait for the Job controller"
    pod = max(pods, key=lambda found: found.metadata.creation_timestamp or now)
    state = pod_state(pod, KEEPER_CONTAINER)
    said = f"{state}, {restarts(pod)} restarts, age {age(pod.metadata.creation_timestamp, now)}"
    return said if state.running else f"{said}; lost pods wait for the Job controller"


@dataclass(frozen=True)
class Progress:
    """Where a MiniCluster is on its way up and through its work."""

    size: int
    scheduled: int
    running: int
    stage: str
    outcome: str | None  # "succeeded" or "failed" once there is nothing more to wait for
    reason: str = ""

    def line(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.stage}{why}"


def progress(job: Any, pods: Sequence[Any], spec: MiniClusterSpec) -> Progress:
    """Against the size the stack asks for: after `pulumi config set minicluster:size`, until the
    resize has happened, the MiniCluster is on its way to that size (autoscaled: the Job's own)."""
    size = goal_size(job, spec)
    pods = [pod for pod in pods if objects.pod_rank(pod) < size]
    scheduled = sum(1 for pod in pods if pod.spec.node_name)
    running = sum(1 for pod in pods if pod_state(pod).running)
    reasons = waiting_reasons(pods)
    reason = reasons[0] if reasons else ""
    state = job_state(job)

    def at(stage: str, outcome: str | None = None) -> Progress:
        return Progress(size, scheduled, running, stage, outcome, "" if outcome is not None else reason)

    if state.startswith("Complete"):
        return at("the job completed", SUCCEEDED)
    if state.startswith("Failed"):
        return at(f"the job failed: {state}", FAILED)
    if not pods:
        return at("waiting for the Job's pods")
    if scheduled < size:
        return at("scheduling pods")
    if running < size:
        return at("starting brokers")
    if live_size(job, spec) != size:
        return at(f"resizing from {live_size(job, spec)} to {size} brokers")
    if spec.persistent:
        return at("every broker is up; the instance stays up", SUCCEEDED)
    return at("Flux is up; the command is running")
