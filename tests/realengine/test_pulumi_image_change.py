"""A changed image on a persistent stack with a state volume, under the real Pulumi engine: `pulumi up`
replaces the Job (a Job's pod template cannot change in place) and the new Job's pods run. On real Flux
(marked realflux): the new rank 0 restarts the same Flux instance from the state volume, so the jobs
that were queued before the change run afterwards."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.pulumi_stack import StackOnNode

STATE = {"hostPath": "/var/lib/flux-state", "checkpointPeriod": "1s"}
"""On the Node's own disk: the test kubelet is one node, and the state outlives the Job's pods."""


@pytest.fixture
def persistent(stack_on_node: Callable[..., StackOnNode]) -> StackOnNode:
    cluster = stack_on_node("interactive", pinned=True, **{**example("interactive"), "size": 2, "stateVolume": STATE})
    cluster.stack.up()
    return cluster


def new_image(persistent: StackOnNode) -> None:
    persistent.stack.configure({**persistent.stack.config, "image": "ghcr.io/flux-framework/flux-restful-api:0.2.0"})


def test_a_new_image_replaces_the_job_and_its_pods_run(persistent: StackOnNode) -> None:
    before = persistent.job().metadata.uid
    new_image(persistent)
    assert "to replace" in persistent.stack.preview().stdout
    persistent.stack.up()
    assert persistent.job().metadata.uid != before
    assert persistent.job().spec.template.spec.containers[0].image.endswith(":0.2.0")
    wait_until(lambda: persistent.running(2), "the new Job's two pods to run", 60, poll=0.2)


@pytest.mark.realflux
def test_the_jobs_queued_before_a_new_image_run_afterwards(persistent: StackOnNode) -> None:
    rank0, before = persistent.rank0, persistent.job().metadata.uid
    rank0.flux("submit", "-N2", "sleep", "inf")  # holds every node: what comes next waits
    queued = [rank0.flux("submit", "-N1", "hostname").strip() for _ in range(3)]
    assert all(rank0.flux("jobs", "-no", "{state}", job).strip() == "SCHED" for job in queued)
    new_image(persistent)
    persistent.stack.up()
    assert persistent.job().metadata.uid != before
    wait_until(lambda: persistent.running(2), "the new Job's two pods to run", 60, poll=0.2)
    new_rank0 = persistent.rank0
    assert new_rank0 is not rank0
    wait_until(lambda: all(new_rank0.flux("jobs", "-no", "{result}", job).strip() == "COMPLETED" for job in queued),
               "the queued jobs to run in the restarted instance", 60, poll=0.5)  # fmt: skip
