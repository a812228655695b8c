"""An autoscaled MiniCluster on this machine, end to end: its pods on real Flux (tests/kubelet), rank 0's
autoscaler reaching the API stand-in as the API server (over HTTPS, as the pods' service account,
within the autoscaler's Role), and the stand-in's Job controller making or stopping the pods when
the Job's size changes. Shared by the end-to-end tests and the autoscaling benchmark."""

from __future__ import annotations

import copy
import itertools
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from flux_minicluster.builders.names import AUTOSCALER_CONTAINER
from tests import harness
from tests.kube_api import StandIn
from tests.kubelet.pod import Pod, wait_until
from tests.kubelet.pods import Kubelet

AUTOSCALE = {"enabled": True, "scaleDownAfter": 3, "cooldown": 1, "interval": 1}
STARTED = "autoscaler: sizing the cluster to its queue"
SHRANK = re.compile(r"shrank from (\d+) to (\d+) brokers: no job waits, and ranks (\S+) have been idle for 3s")


def example() -> dict[str, Any]:
    """Pulumi.autoscale.yaml's config, with the autoscaler's times those of a test."""
    found = harness.example("autoscale")
    return {**found, "command": None, "autoscale": {**found["autoscale"], **AUTOSCALE}}


def held_together(count: int) -> list[str]:
    """A job's command that returns once `count` jobs of the instance have started (each still running
    or completed since). Submitted `count` times with -N1 to a new instance, the jobs then run on as many
    ranks, however long the new ranks take to join: none gives its rank back before the last one has
    one. A job that merely sleeps ends on rank 0 before them on a slow machine, and the next one queued
    takes rank 0 again. (A job's tasks run with the submitter's environment: `flux` reaches the
    instance from any rank. No braces: `flux submit --cc` formats its command's arguments.)"""
    started = "flux jobs -n --filter=running,completed | wc -l"
    return ["sh", "-c", f'until [ "$({started})" -ge {count} ]; do sleep 0.2; done']


def ranks(idset: str) -> set[int]:
    """Flux's idset text ("1-3", "1,3", "2") as a set."""
    found: set[int] = set()
    for part in idset.split(","):
        first, _, last = part.partition("-")
        found |= set(range(int(first), int(last or first) + 1))
    return found


def shrinks(messages: list[str]) -> list[tuple[int, int]]:
    """The Shrank Events' messages as the steps of one shrink, largest first: (from, to). Idle ranks go
    as they become idle: in one step when the jobs end together, in several when they end apart. Each
    step gives back the highest ranks, those the message names, from the size the last one left."""
    matched = [SHRANK.fullmatch(message) for message in messages]
    assert all(matched), messages
    steps = sorted(((int(m[1]), int(m[2]), ranks(m[3])) for m in matched if m), reverse=True)
    for (_, to, _), (start, _, _) in itertools.pairwise(steps):
        assert to == start, messages
    assert all(gone == set(range(to, start)) for start, to, gone in steps), messages
    return [(start, to) for start, to, _ in steps]


class Autoscaled:
    """The cluster, what the API server holds of it, and when the Job's size changed (time.time())."""

    def __init__(self, kubelet: Kubelet, stand_in: StandIn, makes_pods: bool = True) -> None:
        self.kubelet, self.api = kubelet, stand_in.cluster.reset()
        kubelet.reach(stand_in)
        job = copy.deepcopy(kubelet.job)
        job["metadata"]["uid"] = "job-uid"
        self.api.add_job(job)
        scale = next(obj for obj in kubelet.objects if obj["metadata"].get("name") == kubelet.scale_config)
        self.api.config_maps[(kubelet.namespace, scale["metadata"]["name"])] = copy.deepcopy(scale)
        self.resized: list[tuple[float, int]] = []
        self._controller = threading.Lock()
        self.makes_pods = makes_pods
        self.api.job_controller = self._job_changed
        self.pods = kubelet.start_all()
        wait_until(lambda: self.pods[0].ready(), "rank 0 to be ready", 30)
        wait_until(lambda: STARTED in self.autoscaler_log, "the autoscaler to start", 30)

    @property
    def rank0(self) -> Pod:
        return self.kubelet.pod(0)

    @property
    def autoscaler_log(self) -> str:
        """The log of rank 0's autoscaler container."""
        return self.rank0.container(AUTOSCALER_CONTAINER).log

    @property
    def size(self) -> int:
        return int(self.api.jobs[(self.kubelet.namespace, self.kubelet.spec.name)]["spec"]["completions"])

    def ready(self, size: int) -> bool:
        """Whether ranks 0 to size-1 have pods (the Job controller's threads made them), each ready."""
        try:
            return all(self.kubelet.pod(rank).ready() for rank in range(size))
        except IndexError:  # not made yet
            return False

    @property
    def looks(self) -> int:
        """How many looks the autoscaler has begun: each one reads the Job first."""
        return self.api.reads(f"/jobs/{self.kubelet.spec.name}")

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        return [event for event in self.api.events if reason is None or event["reason"] == reason]

    def _note(self, job: dict[str, Any]) -> bool:
        """Whether this change of the Job is one of its size (a change of its annotations is not)."""
        size = job["spec"]["completions"]
        if size == (self.resized[-1][1] if self.resized else self.kubelet.spec.size):
            return False
        self.resized.append((time.time(), size))
        return True

    def _job_changed(self, job: dict[str, Any]) -> None:
        """As the Job controller: pods made or stopped for the new size, in the background (the request
        is answered at once); none with `makes_pods` false (as when no node has room)."""
        if not self._note(job) or not self.makes_pods:
            return
        size = job["spec"]["completions"]

        def scale() -> None:
            with self._controller:
                self.kubelet.scale(size)

        threading.Thread(target=scale, daemon=True).start()

    def submit(self, *args: str) -> str:
        return self.rank0.flux("submit", *args).strip()

    def job_field(self, job_id: str, field: str) -> str:
        return self.rank0.flux("jobs", "-no", f"{{{field}}}", job_id).strip()

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 40) -> None:
        wait_until(condition, what, timeout, poll=0.1)
