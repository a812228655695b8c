"""The interactive stack under the real Pulumi engine: `pulumi up` returns once every broker runs; a
`pulumi up` with a new `size` resizes the running Job in place, which `pulumi preview` shows as an
update, not a replacement; `pulumi destroy` leaves nothing. On real Flux (marked realflux): work
submitted through `minicluster exec` (the exec API of the real API server) runs across the instance,
and the instance's own view follows each resize."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.ops import cli
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.pulumi_stack import StackOnNode


@pytest.fixture
def interactive(stack_on_node: Callable[..., StackOnNode]) -> StackOnNode:
    cluster = stack_on_node("interactive", **example("interactive"), keygen="local")
    cluster.stack.up()
    return cluster


@pytest.fixture
def minicluster(interactive: StackOnNode, minicluster_ops: Callable[..., Any]) -> Callable[..., tuple[int, str]]:
    """`minicluster exec -- ARGV` in rank RANK, against the stack's cluster: (its exit status, its output)."""
    ops = minicluster_ops(interactive)

    def run(*argv: str, rank: int = 0) -> tuple[int, str]:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = cli.cmd_exec(ops, rank, list(argv))
        return code, printed.getvalue()

    return run


def online_ranks(minicluster: Callable[..., tuple[int, str]]) -> str:
    code, said = minicluster("flux", "resource", "status", "-no", "{ranks}", "-s", "online")
    assert code == 0
    return said.strip()


def configure_size(cluster: StackOnNode, size: int) -> None:
    """The stack's config with a new size, as `pulumi config set minicluster:size` makes it."""
    cluster.stack.configure({**cluster.stack.config, "size": size})


def test_pulumi_up_returns_with_every_broker_ready(interactive: StackOnNode) -> None:
    assert interactive.running(4)


@pytest.mark.realflux
def test_work_runs_across_every_broker_once_pulumi_up_returned(
    interactive: StackOnNode, minicluster: Callable[..., tuple[int, str]]
) -> None:
    assert online_ranks(minicluster) == "0-3"
    code, said = minicluster("flux", "run", "-N4", "hostname")
    assert code == 0 and sorted(said.split()) == [f"interactive-{rank}" for rank in range(4)]


def test_a_new_size_resizes_the_running_job_in_place(interactive: StackOnNode) -> None:
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


@pytest.mark.realflux
def test_the_instance_follows_each_resize(
    interactive: StackOnNode, minicluster: Callable[..., tuple[int, str]]
) -> None:
    configure_size(interactive, 6)
    interactive.stack.up()
    wait_until(lambda: online_ranks(minicluster) == "0-5", "ranks 4 and 5 to join the instance", 60, poll=0.5)
    configure_size(interactive, 2)
    interactive.stack.up()
    wait_until(lambda: interactive.running(2), "the Job controller to remove ranks 2-5", 60, poll=0.2)
    assert online_ranks(minicluster) == "0-1"


def test_pulumi_destroy_stops_the_instance_and_leaves_nothing(interactive: StackOnNode) -> None:
    interactive.stack.destroy()
    assert interactive.left() == {}
