"""Rank 0 of a persistent MiniCluster with a state volume, evicted on the real control plane: its real
Job controller makes the replacement once the old pod has ended (podReplacementPolicy Failed), the
replacement restarts the same instance from the saved state, and the jobs queued before the eviction
run in it. The order of events is asserted here; how long each step takes is the benchmark's
(tests/bench/rank0_eviction.py, docs/benchmarks/real-node.md). Real Flux in real containers (marked realflux)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.engines.control_plane import ControlPlane
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.lost_pods import after_the_eviction, rank0_evicted

pytestmark = pytest.mark.realflux


@pytest.fixture(scope="module")
def evicted(
    control_plane: ControlPlane, real_node: NodeInfo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A persistent cluster of 2 (`pulumi up`), a job done, one holding both nodes and two queued behind
    it; then rank 0's pod evicted: what the pods' watch saw, and the rest, for this module's tests."""
    yield from rank0_evicted(control_plane, real_node, tmp_path_factory.mktemp("evicted"))


def test_the_replacement_is_created_only_once_the_evicted_pod_has_failed(evicted: Any) -> None:
    seen = evicted.seen
    assert seen["the pod terminating"] < seen["the pod Failed"] < seen["the replacement created"]


def test_the_queued_jobs_start_only_in_the_replacement(evicted: Any) -> None:
    seen = evicted.seen
    assert evicted.new != evicted.old
    assert seen["the replacement created"] < seen["its broker running"] < evicted.first_start


def test_every_queued_job_runs_and_the_instance_keeps_its_history(evicted: Any) -> None:
    second_start, finished = after_the_eviction(evicted)
    assert second_start > evicted.seen["its broker running"]  # both run at once in the replacement: in any order
    assert f"{evicted.done} COMPLETED" in finished
