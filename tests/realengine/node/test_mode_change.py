"""A stack that goes from a persistent instance to a one-shot command and back, on the real engines: each
`pulumi up` replaces the Job and ends as the new Job's kind ends. pulumi-kubernetes awaits a Job's
deletion by the old Job's annotations, and an elastic Job is not awaited: the one-shot Job that replaced
it was created while the old one was still there, and failed on a field conflict."""

from __future__ import annotations

from collections.abc import Callable

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode


def test_a_persistent_instance_given_a_command_is_replaced_by_a_job_that_completes(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    dev = {key: value for key, value in example("dev").items() if key != "command"}
    cluster = stack_on_real_node("dev", **{**dev, "size": 2})
    cluster.stack.up()
    persistent = cluster.job().metadata.uid
    cluster.stack.configure({**cluster.stack.config, "command": "hostname"})
    cluster.stack.up()
    assert cluster.job().metadata.uid != persistent and cluster.condition("Complete") == "True"


def test_a_finished_one_shot_command_left_out_becomes_a_persistent_instance_without_a_word_of_its_end(
    stack_on_real_node: Callable[..., StackOnRealNode],
) -> None:
    """The warning for a persistent instance that ended is for one that was persistent."""
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2})
    cluster.stack.up()
    cluster.stack.configure({key: value for key, value in cluster.stack.config.items() if key != "command"})
    upped = cluster.stack.up().stdout
    assert "is not running" not in upped
    assert cluster.condition("Complete") is None and cluster.running(2)
