"""A stack with the keeper (keeper.enabled) under the real Pulumi engine, its pods in real containers on
the real node: `pulumi up` returns with the keeper's pod running as its own account (and no broker pod
with a token); a worker evicted is replaced by the keeper once its pod has Failed, and the cluster is
whole again; `pulumi destroy` leaves nothing, the keeper's Deployment and ReplicaSet included. With a
one-shot command, which `pulumi up` waits for, the keeper runs while the command does. Any Flux the
node's image has (the stand-in too): rank 0 with real Flux and a state volume is test_keeper.py's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client, watch

from flux_minicluster.builders.names import INDEX_LABEL, REPLACES
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.lost_pods import PodWatch, lose, rank_pod
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.on_node import ready


@pytest.fixture
def kept(stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    cluster = stack_on_real_node("kept", **example("interactive"), keeper={"enabled": True})
    cluster.stack.up()
    return cluster


HELD = "/tmp/held"
"""While it is there, rank 0 waits before its broker starts (a pre hook): the one-shot Job cannot end."""


def pods(cluster: StackOnRealNode, selector: str) -> list[Any]:
    found: Any = client.CoreV1Api(cluster.admin).list_namespaced_pod(cluster.namespace, label_selector=selector)
    return list(found.items)


def test_pulumi_up_returns_with_the_keeper_running_as_its_own_account(kept: StackOnRealNode) -> None:
    (keeper,) = pods(kept, "app.kubernetes.io/component=keeper")
    assert (keeper.status.phase, keeper.spec.service_account_name) == ("Running", "kept-keeper")
    assert "keeper Running, 0 restarts" in " ".join(kept.stack.ops("status").split())  # as the ops tool says it
    brokers = pods(kept, "job-name=kept")
    assert {pod.spec.automount_service_account_token for pod in brokers} == {False}


def test_an_evicted_worker_is_replaced_by_the_keeper_once_its_pod_has_failed(kept: StackOnRealNode) -> None:
    """The order comes from one watch on rank 3's pods. The evicted pod itself cannot be read back
    afterwards: an eviction deletes it, and it is gone as soon as the Job controller has counted it
    (its job-tracking finalizer), which can come before the test sees the replacement."""
    core = client.CoreV1Api(kept.admin)
    old = rank_pod(core, kept.namespace, 3)
    steps = PodWatch(core, kept.namespace, old.metadata.name, 3)
    lose(core, kept.namespace, old.metadata.name, "evict")

    def replacement() -> Any:
        found = [pod for pod in pods(kept, f"{INDEX_LABEL}=3")
                 if (pod.metadata.annotations or {}).get(REPLACES) == old.metadata.name]  # fmt: skip
        return found[0] if found else None

    new = wait_until(replacement, "the keeper's replacement of rank 3", 120, poll=0.2)
    assert new.spec.hostname == "kept-3"
    wait_until(lambda: "the replacement created" in steps.seen, "the replacement in the watch", 30, poll=0.1)
    steps.stopping.set()
    order = list(steps.seen)  # each step as first seen, in the watch's order
    assert order.index("the pod terminating") < order.index("the pod Failed") < order.index("the replacement created")

    def whole() -> bool:
        live = [pod for pod in kept.pods() if pod.status.phase != "Failed" and not pod.metadata.deletion_timestamp]
        return len(live) == 4 and all(ready(pod) for pod in live)

    wait_until(whole, "every broker Ready again", 120, poll=0.2)


def test_the_keeper_ends_when_told_to_stop(kept: StackOnRealNode) -> None:
    """Its python3 is its container's first process, which the kernel shields from any signal it has no
    handler for: without one for SIGTERM it would be killed at the end of its grace period (exit code
    137), 30 s later, holding up `pulumi destroy` (which waits for the Deployment's pods) and a rollout."""
    core = client.CoreV1Api(kept.admin)
    (keeper,) = pods(kept, "app.kubernetes.io/component=keeper")
    name, since = keeper.metadata.name, keeper.metadata.resource_version
    core.delete_namespaced_pod(name, kept.namespace)
    exit_codes = []
    changes = watch.Watch().stream(  # type: ignore[no-untyped-call]
        core.list_namespaced_pod, kept.namespace, field_selector=f"metadata.name={name}",
        resource_version=since, timeout_seconds=120,
    )  # fmt: skip
    for change in changes:
        for status in change["object"].status.container_statuses or []:
            if status.state.terminated is not None:
                exit_codes.append(status.state.terminated.exit_code)
        if change["type"] == "DELETED":
            break
    assert exit_codes and set(exit_codes) == {0}, exit_codes


def test_pulumi_destroy_leaves_nothing_the_keeper_made(kept: StackOnRealNode) -> None:
    kept.stack.destroy()
    assert kept.left() == {}


def test_the_keeper_runs_while_a_one_shot_command_does(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    """`pulumi up` waits for the Job to complete; the keeper must not wait for that too, or it would come
    when nothing is left to keep. Rank 0 is held back (its pre hook waits for HELD to go) until the
    keeper has been seen running: the order of the two is what this test asserts, not a duration."""
    hold = f'if [ "$JOB_COMPLETION_INDEX" = 0 ]; then touch {HELD}; while [ -e {HELD} ]; do sleep 0.2; done; fi'
    config = {**example("dev"), "size": 2, "tasks": 2, "hooks": {"pre": hold}, "keeper": {"enabled": True}}
    cluster = stack_on_real_node("once", **config, jobTimeout=300)

    def keeper_running() -> bool:
        return "Running" in [pod.status.phase for pod in pods(cluster, "app.kubernetes.io/component=keeper")]

    with ThreadPoolExecutor(1) as pool:
        up = pool.submit(cluster.stack.up)
        try:
            wait_until(keeper_running, "the keeper running", 180, poll=0.2)
            assert cluster.exec(0, "sh", "-c", f"test -e {HELD} && echo held || echo gone").strip() == "held"
            assert cluster.condition("Complete") != "True"
        finally:
            with contextlib.suppress(Exception):  # a rank 0 that never came has nothing to let go
                cluster.exec(0, "rm", "-f", HELD)
        up.result()
    assert cluster.condition("Complete") == "True"
    cluster.stack.destroy()
    assert cluster.left() == {}
