"""The sidecar example (Pulumi.sidecar.yaml) on the real node: its watcher, a native sidecar beside
each broker, is stopped by the kubelet when the broker exits, so the Job completes. On real Flux (marked
realflux) the watcher also sees what the job wrote into the scratch volume it shares with the broker."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode

WATCHER = "watcher"


@pytest.fixture(scope="module")
def upped(module_stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    cluster = module_stack_on_real_node("sidecar", **example("sidecar"))
    cluster.stack.up()
    return cluster


def test_the_watcher_ends_on_the_brokers_exit_and_the_job_completes(upped: StackOnRealNode) -> None:
    """Found on the real node: the example's shell loop, its container's first process, ignored SIGTERM,
    so the kubelet killed it (exit 137) only after the pod's grace period, and each run took 30 s more."""
    assert upped.condition("Complete") == "True"
    ends = {
        (pod.metadata.name, status.state.terminated.exit_code)
        for pod in upped.pods()
        for status in pod.status.init_container_statuses or []
        if status.name == WATCHER and status.state.terminated is not None
    }
    assert ends == {(pod.metadata.name, 0) for pod in upped.pods()}


@pytest.mark.realflux
def test_the_watcher_sees_what_the_job_wrote_in_the_volume_it_shares(upped: StackOnRealNode) -> None:
    assert f"{upped.pod_name(0).rsplit('-', 1)[0]}.txt" in upped.log(0, WATCHER).splitlines()
