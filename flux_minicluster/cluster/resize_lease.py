"""`pulumi up`'s side of the resize lease on an autoscaled cluster (config/sizing.py: RESIZING): before
the Scale resizes the Job, it waits for rank 0's autoscaler to finish a change it has begun, then takes
the lease with the Job's resourceVersion as a precondition (of two takers, one wins; the other reads
again), and gives it back when its resize has ended, however it ended. The autoscaler holds off while
the lease is `pulumi up`'s."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from flux_minicluster.cluster import api_calls, kube
from flux_minicluster.cluster.waiting import Wait
from flux_minicluster.config import sizing
from flux_minicluster.config.sizing import FIELD_MANAGER


class LeaseNotTaken(RuntimeError):
    """The autoscaler kept resizing past the wait: the message says so."""


@contextlib.contextmanager
def held(api_client: Any, namespace: str, job: str, seconds: float, wait: Wait) -> Iterator[None]:
    """The lease, for at most `seconds`, while the block runs."""
    _take(api_client, namespace, job, seconds, wait)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # best effort: a lease past its time holds nothing anyway
            _give_back(api_client, namespace, job)


def _take(api_client: Any, namespace: str, job: str, seconds: float, wait: Wait) -> None:
    where = api_calls.jobs(namespace, job)
    while True:
        found = api_calls.get(api_client, where)
        holder = sizing.lease_holder(found.metadata.annotations, time.time())
        if holder == sizing.AUTOSCALER_HOLDER:
            if wait.over:
                raise LeaseNotTaken(
                    f"rank 0's autoscaler is still resizing the cluster after {wait.timeout:g}s; nothing changed"
                )
            wait.pause()
            continue
        value = sizing.lease(sizing.PULUMI, time.time() + seconds)
        try:
            api_calls.patch(
                api_client, where, sizing.lease_patch(value, found.metadata.resource_version), FIELD_MANAGER
            )
            return
        except Exception as error:
            if kube.problem(error).kind != "conflict":  # 409: the Job changed since it was read
                raise


def _give_back(api_client: Any, namespace: str, job: str) -> None:
    where = api_calls.jobs(namespace, job)
    found = api_calls.get(api_client, where)
    if sizing.lease_holder(found.metadata.annotations, time.time()) == sizing.PULUMI:
        api_calls.patch(api_client, where, sizing.lease_patch(None, found.metadata.resource_version), FIELD_MANAGER)
