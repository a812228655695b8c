"""The autoscale example end to end on the real engines: a real `pulumi up` of its stack creates it on a
real API server (the Secrets and ConfigMaps named by the engine); the real Job controller and
scheduler; the Job's pods on real Flux (the test kubelet as a Node, tests/kubelet/node.py). Rank 0's
autoscaler patches the Job and scale ConfigMap by the names the engine gave them, within its Role as
the real RBAC authorizer enforces it, and the Job controller makes and removes the pods."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from flux_minicluster.builders.names import AUTOSCALER_CONTAINER
from flux_minicluster.config import sizing
from tests.autoscaled import example, held_together, shrinks
from tests.kubelet.pod import wait_until
from tests.realengine.pulumi_stack import StackOnNode

pytestmark = pytest.mark.realflux


@pytest.fixture
def cluster(stack_on_node: Callable[..., StackOnNode]) -> StackOnNode:
    cluster = stack_on_node("autoscale", **example(), keygen="local")
    cluster.stack.up()  # a persistent instance: it returns once Flux is up
    return cluster


def test_the_example_grows_to_four_for_four_jobs_and_back_to_one_under_a_real_pulumi_up(cluster: StackOnNode) -> None:
    assert cluster.running(1)
    autoscaler = cluster.rank0.container(AUTOSCALER_CONTAINER)
    wait_until(lambda: "autoscaler: sizing the cluster to its queue" in autoscaler.log, "the autoscaler", 30)
    jobs = cluster.rank0.flux("submit", "--cc=1-4", "-N1", *held_together(4)).split()
    wait_until(lambda: cluster.events("Grew"), "the autoscaler to grow the Job", 60, poll=0.2)
    wait_until(lambda: all(cluster.rank0.flux("jobs", "-no", "{status}", job).strip() == "COMPLETED" for job in jobs),
               "the 4 jobs to complete", 90, poll=0.5)  # fmt: skip
    assert cluster.events("Grew") == ["grew from 1 to 4 brokers: 3 queued jobs need 3 nodes, 0 free"]
    assert sorted(cluster.rank0.flux("jobs", "-no", "{ranks}", job).strip() for job in jobs) == ["0", "1", "2", "3"]
    # The jobs end together, but the autoscaler may see the ranks idle at different looks: one step or several.
    wait_until(lambda: cluster.size == 1 and len(cluster.pods()) == 1, "the Job controller to remove ranks 1-3", 60)
    wait_until(lambda: shrinks(cluster.events("Shrank"))[-1][1] == 1, "the last Shrank Event", 30, poll=0.2)
    assert shrinks(cluster.events("Shrank"))[0][0] == 4
    assert "403" not in autoscaler.log and "404" not in autoscaler.log, autoscaler.log
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_the_api_server_away_for_20s_as_it_grows_leaves_no_lease_held_and_the_autoscaler_going(
    cluster: StackOnNode,
) -> None:
    """The API server's address drops out of the pod network (its packets dropped, no answer) for 20 s
    from the moment the autoscaler grows the Job, so the end of that resize finds it away; the Job
    controller and the brokers are unaffected. After it, the lease is free while the jobs still run (a
    `pulumi up` may resize), and the autoscaler still shrinks the cluster once they are done."""
    autoscaler = cluster.rank0.container(AUTOSCALER_CONTAINER)
    wait_until(lambda: "autoscaler: sizing the cluster to its queue" in autoscaler.log, "the autoscaler", 30)
    jobs = cluster.rank0.flux("submit", "--cc=1-2", "-N1", "sleep", "40").split()
    wait_until(lambda: "autoscaler: grew from 1 to 2" in autoscaler.log, "the grow", 30, poll=0.05)
    with cluster.node.relay.unreachable():
        time.sleep(20)
    assert "no answer" in autoscaler.log  # the outage reached it: its requests went unanswered
    wait_until(lambda: sizing.lease_holder(cluster.job().metadata.annotations, time.time()) is None,
               "the resize lease to be given back", 10, poll=0.5)  # fmt: skip
    assert all(cluster.rank0.flux("jobs", "-no", "{status}", job).strip() == "RUN" for job in jobs)
    wait_until(lambda: cluster.size == 1 and len(cluster.pods()) == 1, "the autoscaler to shrink back to 1", 90)
    assert [cluster.rank0.flux("jobs", "-no", "{status}", job).strip() for job in jobs] == ["COMPLETED"] * 2
