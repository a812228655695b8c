"""Resizing a running MiniCluster in place.

The Indexed Job's parallelism and completions change together (elastic Indexed Jobs: Kubernetes 1.27+,
GA in 1.31): the pods that stay and the Flux instance are untouched, and Kubernetes adds or removes
the highest indexes. Rank 0 prepares the instance first (resize.sh, run through the exec
API), so that the instance never loses a rank it is using:

- shrink: the ranks that go are drained, and the work on them finishes or is cancelled (shrinkPolicy);
  then the scale ConfigMap (the size brokers read at start) and the Job change, and the pods go;
- grow: the ranks that come back are undrained; the ConfigMap changes before the Job, so that the new
  brokers read the new size; the new pods must be scheduled within scheduleTimeout and ready within
  jobTimeout, or the grow is rolled back, and a failed `pulumi up` leaves the cluster as it was.

The same wait serves a new Job (its first `pulumi up`): an elastic Job is not awaited by
pulumi-kubernetes (see builders.manifests.job_await_annotations), so this waits for its pods.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any

from flux_minicluster.builders.names import BROKER_CONTAINER, STOPPED
from flux_minicluster.cluster import api_calls, kube, objects, pod_exec, resize_lease, watching
from flux_minicluster.cluster.status import waiting_reasons
from flux_minicluster.cluster.waiting import Clock, Progress, Say, Wait, to_stderr
from flux_minicluster.config import lifecycle, paths, sizing
from flux_minicluster.config.sizing import FIELD_MANAGER

LEASE_MARGIN = 120
"""Seconds the resize lease outlasts the longest resize (its shrink and its wait), for the requests between."""
NO_RANK0 = "rank 0 is not running, so no work runs on the instance: nothing to drain or undrain"


class ResizeFailed(RuntimeError):
    """The resize did not happen, or not completely: the message says what state the cluster is in."""


@dataclass(frozen=True)
class Scale:
    """The size wanted, and what the resize needs to know to get there."""

    namespace: str
    job: str
    scale_config: str
    selector: dict[str, str]
    size: int
    min_size: int | None
    max_size: int
    shrink_policy: str
    shrink_timeout: int
    job_timeout: int
    schedule_timeout: int
    autoscale: bool = False
    """Rank 0's autoscaler resizes the Job too: the resize takes the lease first (resize_lease.py)."""


PROGRESS_RANKS = 3
"""How many waiting ranks a progress line names; the rest are counted."""


def live_size(api_client: Any, namespace: str, job: str) -> int:
    return _size(api_calls.get(api_client, api_calls.jobs(namespace, job)))


def _size(job: Any) -> int:
    size = objects.job_size(job)
    assert size is not None, "an Indexed Job always has completions"
    return size


def resize(api_client: Any, want: Scale, clock: Clock | None = None, say: Say = to_stderr) -> list[str]:
    """Bring the Job to `want.size`, and wait until its brokers are ready, saying how that goes if it
    takes long. Returns what happened, line by line."""
    if not want.autoscale:
        return _resize(api_client, want, clock, say)
    seconds = want.shrink_timeout + want.job_timeout + LEASE_MARGIN
    try:
        with resize_lease.held(api_client, want.namespace, want.job, seconds, Wait(want.job_timeout, clock)):
            return _resize(api_client, want, clock, say)
    except resize_lease.LeaseNotTaken as busy:
        raise ResizeFailed(str(busy)) from None


def _resize(api: Any, want: Scale, clock: Clock | None, say: Say) -> list[str]:
    job = api_calls.get(api, api_calls.jobs(want.namespace, want.job))
    current = _size(job)
    if finished := objects.job_finished(job):
        _write_scale(api, want, want.size)  # the next Job's brokers read their quorum there as they start
        if want.size != current:
            raise ResizeFailed(
                f"the Job has {finished}, so its instance no longer runs (`flux shutdown`, or rank 0's program "
                f"ended): there is no cluster to resize to {want.size} brokers. To start it anew at that size, set "
                "minicluster:rerun to a new number (`pulumi config set minicluster:rerun N`); a stateVolume keeps "
                "its queue"
            )
        return [f"the Job has {finished}: there is no running cluster to resize"]
    if want.size == current:
        _write_scale(api, want, want.size)
        return [_await(api, want, current, Wait(want.job_timeout, clock), say)]
    said = _prepare(api, want, current)
    try:
        _write_scale(api, want, want.size)
        _patch_job(api, want, want.size)
    except Exception as error:
        _undo(api, want, current, said)
        found = kube.problem(error)
        hint = "; resizing a Job in place needs Kubernetes 1.27 or newer" if found.kind == "rejected" else ""
        raise ResizeFailed(
            f"the new size could not be set ({found.status or found.kind}: {found.detail}){hint}. The cluster "
            f"stays at {current} brokers"
        ) from None
    try:
        said.append(_await(api, want, current, Wait(want.job_timeout, clock), say))
    except ResizeFailed as failure:
        if want.size <= current:
            raise
        _write_scale(api, want, current)
        _patch_job(api, want, current)
        raise ResizeFailed(
            f"{failure}. The grow was rolled back: the cluster stays at {current} brokers "
            f"(rank {_ranks(current, want.size - 1)} not added)"
        ) from None
    return said


def _ranks(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _undo(api: Any, want: Scale, current: int, prepared: list[str]) -> None:
    """Best effort, after a refused resize: the old size back in the ConfigMap, and the ranks a shrink
    drained undrained (rank 0 grows back to the current size)."""
    with contextlib.suppress(Exception):
        _write_scale(api, want, current)
        if want.size < current and prepared != [NO_RANK0]:
            _prepare(api, dataclasses.replace(want, size=current), want.size)


def _prepare(api: Any, want: Scale, current: int) -> list[str]:
    """Rank 0 drains (shrink) or undrains (grow) the ranks concerned; its lines say what it did."""
    rank0 = _running_rank0(api, want)
    if rank0 is None:
        return [NO_RANK0]
    command = ["/bin/bash", paths.RESIZE, str(current), str(want.size), want.shrink_policy, str(want.shrink_timeout)]
    _, stderr, code = pod_exec.run_in_pod(
        api, want.namespace, rank0, BROKER_CONTAINER, command, timeout=want.shrink_timeout + 60.0
    )
    lines = [line.removeprefix(f"{lifecycle.LOG_PREFIX}[rank 0]: ") for line in stderr.splitlines() if line.strip()]
    if code == 0:
        return lines
    last = lines[-1] if lines else "(no output)"
    if code == lifecycle.CALLED_OFF:
        raise ResizeFailed(
            f"{last}. Nothing changed: the cluster stays at {current} brokers. Run `pulumi up` again to wait "
            "more, or set minicluster:shrinkPolicy to cancel"
        )
    status = "the connection ended before its exit status" if code is None else f"status {code}"
    raise ResizeFailed(f"rank 0 could not prepare the resize ({status}): {last}. The size is unchanged")


def _running_rank0(api: Any, want: Scale) -> str | None:
    selector = objects.label_selector(want.selector)
    listed = api_calls.get(api, api_calls.pods(want.namespace), {"labelSelector": selector})
    for pod in listed.items or []:
        if (
            objects.pod_rank(pod) == 0
            and pod.status
            and pod.status.phase == "Running"
            and not pod.metadata.deletion_timestamp
        ):
            return str(pod.metadata.name)
    return None


def _write_scale(api: Any, want: Scale, size: int) -> None:
    where = api_calls.path("v1", "configmaps", want.namespace, want.scale_config)
    api_calls.patch(api, where, sizing.scale_config_patch(size, want.min_size, want.max_size), FIELD_MANAGER)


def _patch_job(api: Any, want: Scale, size: int) -> None:
    api_calls.patch(api, api_calls.jobs(want.namespace, want.job), sizing.job_patch(size), FIELD_MANAGER)


def _await(api: Any, want: Scale, current: int, wait: Wait, say: Say) -> str:
    """Until every rank below the size has a ready pod and no pod above it is left: woken by each change
    of the pods (a watch), at the deadline, when new pods have been held back long enough (no node for
    them, or an image the kubelet cannot pull), and when it is time to say how it goes."""
    size = want.size
    progress = Progress(say, wait.clock)

    def next_look() -> float:
        return min(wait.held_until(want.schedule_timeout), progress.due()) - wait.clock.now()

    selector = objects.label_selector(want.selector)
    for listed in watching.pods(api, want.namespace, selector, next_look):
        pods = [pod for pod in listed if objects.pod_rank(pod) >= 0]
        ready = {objects.pod_rank(pod) for pod in pods if _ready(pod) and objects.pod_rank(pod) < size}
        leaving = sorted({objects.pod_rank(pod) for pod in pods if objects.pod_rank(pod) >= size})
        if len(ready) >= size and not leaving:
            return f"all {size} brokers are ready"
        state = _how_it_goes(ready, size, leaving, pods)
        progress.tell(state)
        job = api_calls.get(api, api_calls.jobs(want.namespace, want.job))
        if finished := objects.job_finished(job):
            if finished.startswith("failed"):
                stopped = (job.metadata.annotations or {}).get(STOPPED)
                raise ResizeFailed(
                    f"the Job {finished}" + (f": its scheduling guard stopped it, {stopped}" if stopped else "")
                )
            return f"the Job has {finished}"
        new = [pod for pod in pods if current <= objects.pod_rank(pod) < size]
        cannot, reason = objects.held_back(new)
        if wait.held_for(bool(reason)) >= want.schedule_timeout:
            raise ResizeFailed(
                f"the new pods could not {cannot} for {want.schedule_timeout}s (minicluster:scheduleTimeout): {reason}"
            )
        if wait.over:
            raise ResizeFailed(f"after {want.job_timeout}s (minicluster:jobTimeout) {state}")
    raise AssertionError("watching.pods never ends")


def _how_it_goes(ready: set[int], size: int, leaving: list[int], pods: list[Any]) -> str:
    """E.g. "2 of 4 brokers are ready; rank 2: ContainerCreating; rank 3: no pod yet"."""
    staying = [pod for pod in pods if objects.pod_rank(pod) < size]
    without = sorted(set(range(size)) - {objects.pod_rank(pod) for pod in staying})
    waiting = [*waiting_reasons(staying), *(f"rank {rank}: no pod yet" for rank in without)]
    more = len(waiting) - PROGRESS_RANKS
    shown = waiting[:PROGRESS_RANKS] + ([f"{more} more waiting"] if more > 0 else [])
    going = [f"ranks {', '.join(map(str, leaving))} are still going"] if leaving else []
    return "; ".join([f"{len(ready)} of {size} brokers are ready", *shown, *going])


def _ready(pod: Any) -> bool:
    conditions = (pod.status.conditions if pod.status else None) or []
    return not pod.metadata.deletion_timestamp and any(c.type == "Ready" and c.status == "True" for c in conditions)
