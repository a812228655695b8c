"""The scheduling guard on the real engines, for a Job that a change replaces on a running persistent
cluster: the guard's replacement starts while the old Job and its pods, scheduled long before, are still
there, and it must guard the new Job alone (its revision, and its pods by their Job's uid); and for the
replacement of a Job it stopped, after a fix outside the stack config: `pulumi up --replace`, as its
message says, makes a new Job of the same revision, guarded too. With admission off: the admission
check would refuse, before anything changed, a pod that fits no node.
(A Job the API server refuses: the engine starts the guard or not, as the refusal comes before or
after; what the guard does when no Job comes is tested on the API stand-in, test_scheduling_guard.py.)"""

from __future__ import annotations

import re
from collections.abc import Callable

from kubernetes import client

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode

PROBE_LABEL = "minicluster.test/scheduling-guard"
"""A label the real node has only while the test says so: the pods' nodeSelector asks for it."""


def stopped_for_no_node(said: str) -> bool:
    """The guard stopped the Job with the scheduler's message for pods no node takes. The scheduler counts
    every Node, the tainted ones other tests' kubelets add meanwhile (tests/kubelet/node.py) included."""
    return bool(
        re.search(
            r"could not be scheduled for 5s \(minicluster:scheduleTimeout\): Unschedulable: 0/\d+ nodes are "
            r"available: .*didn't match Pod's node affinity/selector",
            said,
        )
    )


def test_a_replaced_job_whose_new_pods_fit_no_node_fails_with_the_schedulers_message(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    settings = {"size": 2, "admission": "off", "scheduleTimeout": 5, "jobTimeout": 60}
    cluster = stack_on_real_node("interactive", **{**example("interactive"), **settings})
    cluster.stack.up()
    cluster.stack.configure({**cluster.stack.config, "pod": {"nodeSelector": {"minicluster.test/nowhere": "true"}}})
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert stopped_for_no_node(said), said
    # the new Job, stopped rather than left to wait for room (Failed once its pods are gone)
    wait_until(lambda: cluster.condition("Failed") == "True", "the stopped Job to fail", 30, poll=0.2)


def test_the_replacement_the_message_gives_is_guarded_and_runs_once_the_cause_is_fixed(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient, real_node: NodeInfo
) -> None:
    settings = {"size": 2, "admission": "off", "scheduleTimeout": 5, "jobTimeout": 120}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings})
    cluster.stack.up()  # the keypair made: a nodeSelector change replaces the Job alone
    cluster.stack.configure({**cluster.stack.config, "pod": {"nodeSelector": {PROBE_LABEL: "yes"}}})
    stopped = cluster.stack.up(check=False).stdout
    (replace,) = set(re.findall(r"run: pulumi up --replace '([^']+)'", stopped))  # the progress and the diagnostics
    # Not fixed yet: the new Job's guard stops it as the first (without a guard: jobTimeout, and the
    # provider's "timed out waiting to be Ready").
    again = cluster.stack.pulumi("up", "--yes", "--skip-preview", "--replace", replace, check=False)
    assert again.returncode != 0
    assert stopped_for_no_node(again.stdout), again.stdout
    core = client.CoreV1Api(admin)
    core.patch_node(real_node.name, {"metadata": {"labels": {PROBE_LABEL: "yes"}}})
    try:
        cluster.stack.pulumi("up", "--yes", "--skip-preview", "--replace", replace)
        assert cluster.condition("Complete") == "True"
    finally:
        core.patch_node(real_node.name, {"metadata": {"labels": {PROBE_LABEL: None}}})


def test_a_job_deleted_outside_pulumi_is_guarded_when_a_refresh_makes_it_again(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient, real_node: NodeInfo
) -> None:
    """The refresh finds the guard gone with its Job, so `pulumi up --refresh` makes both: the new Job's
    pods, which fit no node now, stop it within scheduleTimeout (without a guard: jobTimeout, and the
    provider's "timed out waiting to be Ready")."""
    label = "minicluster.test/refresh-guard"
    settings = {"size": 2, "admission": "off", "scheduleTimeout": 5, "jobTimeout": 120}
    cluster = stack_on_real_node("dev", **{**example("dev"), **settings, "pod": {"nodeSelector": {label: "yes"}}})
    core = client.CoreV1Api(admin)
    core.patch_node(real_node.name, {"metadata": {"labels": {label: "yes"}}})
    try:
        cluster.stack.up()
    finally:
        core.patch_node(real_node.name, {"metadata": {"labels": {label: None}}})
    batch = client.BatchV1Api(admin)
    batch.delete_namespaced_job(cluster.name, cluster.namespace, propagation_policy="Foreground")
    wait_until(lambda: not batch.list_namespaced_job(cluster.namespace).items, "the Job to be deleted", 60, poll=0.2)
    again = cluster.stack.pulumi("up", "--yes", "--skip-preview", "--refresh", check=False)
    assert again.returncode != 0
    assert stopped_for_no_node(again.stdout), again.stdout
