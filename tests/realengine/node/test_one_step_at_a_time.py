"""`pulumi up --parallel 1`: the engine runs one resource's step at a time, in an order of its own among
the steps that are ready. The scheduling guard waits for its Job; run first, it held the Job back until
it gave up on it (30 s for a new elastic Job, 120 s for a one-shot Job replaced), and `pulumi up`
failed. Each stack here comes up, or is replaced, one step at a time, and `pulumi destroy` leaves
nothing."""

from __future__ import annotations

from collections.abc import Callable

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode

ONE_STEP = ("up", "--yes", "--skip-preview", "--parallel", "1")


def test_an_elastic_cluster_comes_up(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    cluster = stack_on_real_node("interactive", **example("interactive"))
    cluster.stack.pulumi(*ONE_STEP)
    assert cluster.running(4)
    cluster.stack.destroy()
    assert cluster.left() == {}


def test_a_one_shot_job_is_replaced(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    """A new command: new ConfigMaps, and so a new Job and a new guard, whose replacement the engine
    was free to run before the Job's."""
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2, "tasks": 2})
    cluster.stack.pulumi(*ONE_STEP)
    first = cluster.job().metadata.uid
    cluster.stack.configure({**cluster.stack.config, "command": "hostname -s"})
    cluster.stack.pulumi(*ONE_STEP)
    assert cluster.job().metadata.uid != first
    assert cluster.condition("Complete") == "True"
    cluster.stack.destroy()
    assert cluster.left() == {}
