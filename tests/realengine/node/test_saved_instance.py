"""A persistent MiniCluster's saved instance beyond its Job, on real Flux in real containers (marked
realflux): the state volume keeps it when a new maxSize replaces the Job (the restarted instance takes
the new hostlist), and when `pulumi destroy` deletes everything else, so that the next `pulumi up`
restarts it. The state volume is a hostPath in the test's own folder, the stack pinned to the node."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.stacks import StackOnRealNode

pytestmark = pytest.mark.realflux


@pytest.fixture
def persistent(
    stack_on_real_node: Callable[..., StackOnRealNode], real_node: NodeInfo, tmp_path: Path
) -> tuple[StackOnRealNode, str]:
    """The cluster, up, with one job done: its id."""
    state = {"hostPath": str(tmp_path / "flux-state"), "checkpointPeriod": "1s"}
    pinned = {"nodeSelector": {"kubernetes.io/hostname": real_node.name}}
    settings = {"size": 2, "maxSize": 4, "stateVolume": state, "pod": pinned}
    cluster = stack_on_real_node("interactive", **{**example("interactive"), **settings})
    cluster.stack.up()
    return cluster, cluster.flux(0, "submit", "--wait", "true").strip()


def history(cluster: StackOnRealNode) -> str:
    wait_until(lambda: cluster.running(2), "the brokers of the restarted instance", 90, poll=0.2)
    return cluster.flux(0, "jobs", "-a", "-no", "{id.f58} {result}")


def test_a_new_max_size_restarts_the_saved_instance_on_the_new_hostlist(
    persistent: tuple[StackOnRealNode, str],
) -> None:
    cluster, done = persistent
    cluster.stack.configure({**cluster.stack.config, "maxSize": 6})
    cluster.stack.up()
    assert f"{done} COMPLETED" in history(cluster)
    assert cluster.flux(0, "resource", "list", "-s", "down", "-no", "{nodelist}").strip() == "interactive-[2-5]"


def test_after_a_destroy_the_next_pulumi_up_restarts_the_saved_instance(
    persistent: tuple[StackOnRealNode, str],
) -> None:
    cluster, done = persistent
    cluster.stack.destroy()
    cluster.stack.up()
    assert f"{done} COMPLETED" in history(cluster)
