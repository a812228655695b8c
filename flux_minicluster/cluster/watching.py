"""Following a MiniCluster's pods as they change: one list, then a watch from the list's
resourceVersion, so that each change wakes the waiter at once (a poll would find it a second later,
on average half its period). The keygen pod, a resize or a new Job's brokers, the scheduling guard
and `pulumi destroy` all wait this way.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Generator
from typing import Any

from flux_minicluster.cluster import api_calls

GONE = 410
"""The watch's resourceVersion is older than the API server keeps: list again."""
LONGEST_WATCH = 300
"""Seconds one watch may last before the pods are listed again, whatever next_look says."""
IDLE_LOOK = 60.0
"""What a waiter with no deadline of its own gives as next_look: a watch can end quietly (a proxy, a
restarted API server), and a list now and then finds what it missed."""


def pods(api_client: Any, namespace: str, selector: str, next_look: Callable[[], float]) -> Generator[list[Any]]:
    """The pods that match `selector` now, then again after each change, for as long as the caller
    takes them. `next_look()`: seconds until the caller must look even if nothing changed (a deadline,
    a condition held long enough); the pods are listed again then. It is asked again after each change,
    which may bring it forward (a pod now unschedulable starts scheduleTimeout): a watch that would
    outlast it ends, and the next starts where that one stopped. Without that, a pod that turned
    unschedulable in a watch and did not change again was seen as such only at that watch's end: a grow
    on the real node rolled back after minutes, not scheduleTimeout. The API server ends a watch after
    whole seconds, so such a look may come up to a second late."""
    from kubernetes.client.exceptions import ApiException

    where = api_calls.pods(namespace)
    while True:
        listed = api_calls.get(api_client, where, {"labelSelector": selector})
        current = {pod.metadata.name: pod for pod in listed.items or []}
        version = listed.metadata.resource_version
        yield list(current.values())
        cut = True
        while cut:  # watches from `version`, until one runs its course: then list again
            cut = False
            seconds = max(1, math.ceil(min(next_look(), LONGEST_WATCH)))
            ends = time.monotonic() + seconds
            query = {"labelSelector": selector, "resourceVersion": version}
            try:
                with contextlib.closing(api_calls.watch(api_client, where, query, seconds)) as changes:
                    for change, pod in changes:
                        version = pod.metadata.resource_version
                        if change == "DELETED":
                            current.pop(pod.metadata.name, None)
                        else:
                            current[pod.metadata.name] = pod
                        yield list(current.values())
                        if next_look() < ends - time.monotonic() - 1:
                            cut = True
                            break
            except ApiException as error:
                if error.status != GONE:
                    raise
