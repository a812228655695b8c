"""Waiting for an elastic Job and its pods to be gone once Pulumi has deleted it.

pulumi-kubernetes does not await an elastic Job (it carries pulumi.com/skipAwait; see
builders.manifests.job_await_annotations), and so it does not wait for its deletion either: without
this, `pulumi destroy` would return while rank 0 still stops, and the next `pulumi up` (or the
replacement of the Job) would meet a Job of the same name that is still being deleted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from flux_minicluster.cluster import kube
from flux_minicluster.cluster.waiting import Clock, Wait


class StillThere(RuntimeError):
    """The Job or some of its pods outlived the wait: the message says which, and what to do."""


def wait_until_gone(
    api_client: Any, namespace: str, job: str, selector: dict[str, str], timeout: float,
    clock: Clock | None = None, say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> str:  # fmt: skip
    from kubernetes import client

    core, batch, wait = client.CoreV1Api(api_client), client.BatchV1Api(api_client), Wait(timeout, clock)
    said = False
    while True:
        left = _left(core, batch, namespace, job, kube.label_selector(selector))
        if not left:
            return f"the Job {namespace}/{job} and its pods are gone"
        if not said:
            say(f"waiting up to {timeout:g}s for {left} to be gone")
            said = True
        if wait.over:
            raise StillThere(
                f"after {timeout:g}s, {left} still exist: Kubernetes has not finished deleting them. "
                f"Check with `kubectl get job,pods -n {namespace} -l job-name={job}`; a new `pulumi up` of this "
                "stack would meet them"
            )
        wait.pause()


def _left(core: Any, batch: Any, namespace: str, job: str, selector: str) -> str:
    """What is left of the Job, in words; empty once nothing is."""
    try:
        batch.read_namespaced_job(job, namespace, _request_timeout=kube.REQUEST_TIMEOUT)
        job_left = [f"the Job {namespace}/{job}"]
    except Exception as error:
        if kube.problem(error).kind != "not-found":
            raise
        job_left = []
    pods = core.list_namespaced_pod(namespace, label_selector=selector, _request_timeout=kube.REQUEST_TIMEOUT).items
    names = sorted(pod.metadata.name for pod in pods)
    pods_left = [f"{len(names)} of its pods ({', '.join(names)})"] if names else []
    return " and ".join(job_left + pods_left)
