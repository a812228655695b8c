"""The scheduling guard on the real engines, for a Job that a change replaces on a running persistent
cluster: the guard's replacement starts while the old Job and its pods, scheduled long before, are still
there, and it must guard the new Job alone (its revision, and its pods by their Job's uid). With
admission off: the admission check would refuse, before anything changed, a pod that fits no node.
(A Job the API server refuses: the engine starts the guard or not, as the refusal comes before or
after; what the guard does when no Job comes is tested on the API stand-in, test_scheduling_guard.py.)"""

from __future__ import annotations

from collections.abc import Callable

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.stacks import StackOnRealNode


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
    assert "could not be scheduled for 5s (minicluster:scheduleTimeout): Unschedulable: 0/1 nodes are available" in said
    # the new Job, stopped rather than left to wait for room (Failed once its pods are gone)
    wait_until(lambda: cluster.condition("Failed") == "True", "the stopped Job to fail", 30, poll=0.2)
