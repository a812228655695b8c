"""The dev stack's MiniCluster on the real control plane (its objects as render.py makes them): the
`minicluster` command follows the real Job to its end, and lists its pods. (`pulumi up` of the same
stack: node/test_dev_stack.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.cluster.waiting import Clock
from flux_minicluster.ops import cli
from tests.harness import example
from tests.realengine.on_node import OnNode


@pytest.fixture
def cluster(on_node: Callable[..., OnNode]) -> OnNode:
    return on_node(**example("dev"))


def test_minicluster_wait_follows_the_real_job_to_its_end_and_exits_0(
    cluster: OnNode, minicluster_ops: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ops = minicluster_ops(cluster)
    assert cli.cmd_wait(ops, cli.Console(width=200), 90, Clock(poll=0.2)) == 0
    assert "the job completed" in capsys.readouterr().out
    assert cli.cmd_list(ops, cli.Console(width=200)) == 0
    assert capsys.readouterr().out.count("Succeeded") == 4  # one row per rank
