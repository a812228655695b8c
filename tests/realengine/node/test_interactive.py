"""The interactive stack with its pods in real containers: `pulumi up` (its keygen pod, the real
readiness probe) returns once every broker is Ready, and again has nothing to do; each broker has the
memory-backed /dev/shm of minicluster:sharedMemory; a new size resizes the running Job in place, and a
grow that does not fit is rolled back; `pulumi destroy` leaves nothing.
On real Flux (marked realflux; the node's image carries flux-core where it is installed): work runs
across every broker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.cluster.admission.quantities import quantity
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode

GIB = 1 << 30


def deployed(make: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    cluster = make("interactive", **example("interactive"))
    cluster.stack.up()
    return cluster


@pytest.fixture(scope="module")
def shared(module_stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    """One for the module's checks that change nothing."""
    return deployed(module_stack_on_real_node)


@pytest.fixture
def interactive(stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    """The test's own, for one that resizes or destroys it."""
    return deployed(stack_on_real_node)


def test_pulumi_up_returns_with_every_broker_ready_on_the_real_node(shared: StackOnRealNode) -> None:
    assert shared.running(4)


@pytest.mark.realflux
def test_work_runs_across_every_broker_in_real_containers(shared: StackOnRealNode) -> None:
    """Brokers that found each other by their headless-Service names (CoreDNS) over the node's bridge."""
    said = shared.flux(0, "run", "-N4", "hostname")
    assert sorted(said.split()) == [f"interactive-{rank}" for rank in range(4)]


def test_each_broker_has_a_memory_backed_dev_shm_of_the_configured_size(shared: StackOnRealNode) -> None:
    for rank in (0, 3):
        kind, size = shared.exec(rank, "stat", "--file-system", "--format=%T %b %S", "/dev/shm").split(" ", 1)
        blocks, block_size = map(int, size.split())
        assert kind == "tmpfs" and blocks * block_size == GIB


def configure_size(cluster: StackOnRealNode, size: int) -> None:
    """The stack's config with a new size, as `pulumi config set minicluster:size` makes it."""
    cluster.stack.configure({**cluster.stack.config, "size": size})


def online_ranks(cluster: StackOnRealNode) -> str:
    return cluster.flux(0, "resource", "status", "-no", "{ranks}", "-s", "online").strip()


def test_pulumi_up_again_without_a_change_has_nothing_to_do(shared: StackOnRealNode) -> None:
    """Not even the Scale: it wrote the scale ConfigMap again and waited for the brokers at each `pulumi up`."""
    previewed = shared.stack.preview().stdout
    assert "to update" not in previewed and "to replace" not in previewed, previewed
    upped = shared.stack.up().stdout
    assert "updated" not in upped and "replaced" not in upped, upped


def test_a_new_size_resizes_the_running_job_in_place(interactive: StackOnRealNode) -> None:
    before = interactive.job().metadata.uid
    configure_size(interactive, 6)
    preview = interactive.stack.preview().stdout
    assert "to update" in preview and "to replace" not in preview and "replaced" not in preview
    interactive.stack.up()
    assert interactive.job().metadata.uid == before and interactive.size == 6
    wait_until(lambda: interactive.running(6), "six ready pods", 60, poll=0.2)
    configure_size(interactive, 2)
    interactive.stack.up()
    assert interactive.job().metadata.uid == before and interactive.size == 2
    wait_until(lambda: interactive.running(2), "the Job controller to remove ranks 2-5", 60, poll=0.2)


def test_a_grow_whose_new_pod_fits_no_node_is_rolled_back_after_schedule_timeout(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient, real_node: NodeInfo
) -> None:
    """The new pod turns unschedulable once the Scale watches it, and changes no more: its wait must end
    by scheduleTimeout all the same (it once waited out a 5-minute watch). Each pod asks for 40% of the
    node's CPU: two fit, a third does not. Admission off: the admission check would refuse the grow first."""
    node: Any = client.CoreV1Api(admin).read_node(real_node.name)
    share = f"{int(quantity(node.status.allocatable['cpu']) * 400)}m"
    fitting = {"admission": "off", "scheduleTimeout": 5, "resources": {"requests": {"cpu": share}}}
    cluster = stack_on_real_node("interactive", **{**example("interactive"), "size": 2, **fitting})
    cluster.stack.up()
    configure_size(cluster, 3)
    refused = cluster.stack.up(check=False)
    assert refused.returncode != 0
    said = refused.stdout
    assert "the new pods could not be scheduled for 5s (minicluster:scheduleTimeout): Unschedulable:" in said
    assert "Insufficient cpu" in said and "The grow was rolled back: the cluster stays at 2 brokers" in said
    assert cluster.size == 2


@pytest.mark.realflux
def test_the_instance_follows_each_resize(interactive: StackOnRealNode) -> None:
    configure_size(interactive, 6)
    interactive.stack.up()
    wait_until(lambda: online_ranks(interactive) == "0-5", "ranks 4 and 5 to join the instance", 60, poll=0.5)
    configure_size(interactive, 2)
    interactive.stack.up()
    wait_until(lambda: interactive.running(2), "the Job controller to remove ranks 2-5", 60, poll=0.2)
    assert online_ranks(interactive) == "0-1"


@pytest.mark.realflux
def test_after_flux_shutdown_pulumi_up_says_the_instance_ended_and_rerun_starts_it_anew(
    interactive: StackOnRealNode,
) -> None:
    """The Job completes with the instance. A `pulumi up` said nothing of it, and one with a new size said
    the Scale was updated while no broker ran."""
    interactive.flux(0, "shutdown", "--quiet")
    wait_until(lambda: interactive.condition("Complete") == "True", "the Job to complete with its instance", 60)
    unchanged = interactive.stack.up().stdout
    assert "MiniCluster 'interactive' is not running: its Job has completed, so its instance ended" in unchanged
    configure_size(interactive, 2)
    resized = interactive.stack.up(check=False)
    assert resized.returncode != 0
    assert "there is no cluster to resize to 2 brokers. To start it anew at that size, set minicluster:rerun" in (
        resized.stdout
    )
    interactive.stack.configure({**interactive.stack.config, "rerun": 1})
    rerun = interactive.stack.up().stdout
    assert "not running" not in rerun
    wait_until(lambda: online_ranks(interactive) == "0-1", "a new instance of two brokers", 60, poll=0.5)


def test_pulumi_destroy_stops_the_instance_and_leaves_nothing(interactive: StackOnRealNode) -> None:
    interactive.stack.destroy()
    assert interactive.left() == {}
