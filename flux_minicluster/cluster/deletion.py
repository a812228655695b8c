"""Waiting for an elastic Job and its pods to be gone once Pulumi has deleted it.

pulumi-kubernetes does not await an elastic Job (it carries pulumi.com/skipAwait; see
builders.manifests.job_await_annotations), and so it does not wait for its deletion either: without
this, `pulumi destroy` would return while rank 0 still stops, and the next `pulumi up` (or the
replacement of the Job) would meet a Job of the same name that is still being deleted.
"""

from __future__ import annotations

import contextlib
from typing import Any

from flux_minicluster.cluster import api_calls, objects, watching
from flux_minicluster.cluster.waiting import Clock, Progress, Say, Wait, to_stderr

JOB_LOOK = 0.1
"""Seconds between two reads of a Job whose pods are gone."""


class StillThere(RuntimeError):
    """The Job or some of its pods outlived the wait: the message says which, and what to do."""


def wait_until_gone(
    api_client: Any, namespace: str, job: str, selector: dict[str, str], timeout: float,
    clock: Clock | None = None, say: Say = to_stderr,
) -> str:  # fmt: skip
    wait = Wait(timeout, clock)
    progress = Progress(say, wait.clock)

    # The pods are watched (the first look is the watch's own list); once they are gone, the Job is read
    # every JOB_LOOK seconds (with foreground deletion it goes a moment after its last pod).
    def next_look() -> float:
        return min(wait.remaining, watching.IDLE_LOOK, progress.due() - wait.clock.now())

    with contextlib.closing(watching.pods(api_client, namespace, objects.label_selector(selector), next_look)) as looks:
        pods = next(looks)
        while pods:
            if wait.over:
                raise StillThere(_still_there(timeout, _left(api_client, namespace, job, pods), namespace, job))
            progress.tell(f"waiting up to {timeout:g}s for {_pods_left(pods)} of the Job {namespace}/{job} to be gone")
            pods = next(looks)
    while left := _left(api_client, namespace, job, []):
        if wait.over:
            raise StillThere(_still_there(timeout, left, namespace, job))
        wait.clock.sleep(max(0.0, min(JOB_LOOK, wait.remaining)))
    return _gone(namespace, job)


def _pods_left(pods: list[Any], named: int = 3) -> str:
    """E.g. "4 pods (dev-0-abcde, dev-1-fghij, dev-2-klmno, ...)"."""
    names = sorted(pod.metadata.name for pod in pods)
    shown = ", ".join(names[:named] + (["..."] if len(names) > named else []))
    return f"{len(names)} pod{'s' if len(names) > 1 else ''} ({shown})"


def _gone(namespace: str, job: str) -> str:
    return f"the Job {namespace}/{job} and its pods are gone"


def _still_there(timeout: float, left: str, namespace: str, job: str) -> str:
    return (
        f"after {timeout:g}s, {left} still exist: Kubernetes has not finished deleting them. Check with "
        f"`kubectl get job,pods -n {namespace} -l job-name={job}`; a new `pulumi up` of this stack would meet them"
    )


def _left(api_client: Any, namespace: str, job: str, pods: list[Any]) -> str:
    """What is left of the Job, in words; empty once nothing is."""
    job_there = api_calls.existing(api_client, api_calls.jobs(namespace, job)) is not None
    job_left = [f"the Job {namespace}/{job}"] if job_there else []
    names = sorted(pod.metadata.name for pod in pods)
    pods_left = [f"{len(names)} of its pods ({', '.join(names)})"] if names else []
    return " and ".join(job_left + pods_left)
