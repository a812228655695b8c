"""The keeper (keeper.enabled) on the real control plane and node, with real Flux: rank 0 of a persistent
MiniCluster with a state volume, evicted with jobs queued. `pulumi up` runs the keeper's Deployment;
the keeper makes rank 0's replacement while the old pod still stops, the saved instance's lock holds
the new broker back until the old one has let go, the jobs queued before the eviction run in the
restarted instance, and the real Job controller takes the keeper's pod as the index's own. The order
of events is asserted here; how long it takes is the eviction benchmark's (tests/bench/rank0_eviction.py
--keeper, docs/benchmarks/real-node.md). Real Flux in real containers (marked realflux)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders.names import BROKER_CONTAINER, REPLACES
from tests.engines.control_plane import ControlPlane
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.lost_pods import after_the_eviction, live_rank_pods, rank0_evicted

pytestmark = pytest.mark.realflux

JOB_BACK_OFF = 10
"""Seconds the Job controller waits after a pod's failure before it makes one (docs/lost-pods.md)."""


@pytest.fixture(scope="module")
def evicted(
    control_plane: ControlPlane, real_node: NodeInfo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from rank0_evicted(control_plane, real_node, tmp_path_factory.mktemp("kept"), keeper={"enabled": True})


def test_the_keeper_makes_rank0s_replacement_while_the_evicted_pod_still_stops(evicted: Any) -> None:
    new = evicted.core.read_namespaced_pod(evicted.new, evicted.namespace)
    assert (new.metadata.annotations or {}).get(REPLACES) == evicted.old
    seen = evicted.seen
    assert seen["the pod terminating"] < seen["the replacement created"] < seen["the pod Failed"]


def test_the_new_broker_waits_for_the_old_one_to_let_go_of_the_saved_instance(evicted: Any) -> None:
    log = evicted.core.read_namespaced_pod_log(evicted.new, evicted.namespace, container=BROKER_CONTAINER)
    assert "to let go of it" in log
    assert evicted.seen["its broker exited"] < evicted.first_start


def test_every_queued_job_runs_and_the_instance_keeps_its_history(evicted: Any) -> None:
    second_start, finished = after_the_eviction(evicted)
    assert second_start >= evicted.first_start
    assert f"{evicted.done} COMPLETED" in finished


def test_the_job_controller_makes_no_pod_of_its_own_past_its_back_off(evicted: Any) -> None:
    core, namespace = evicted.core, evicted.namespace
    time.sleep(max(0.0, evicted.evicted_at + JOB_BACK_OFF + 5 - time.time()))
    assert [pod.metadata.name for pod in live_rank_pods(core, namespace, 0)] == [evicted.new]
    status: Any = client.BatchV1Api(core.api_client).read_namespaced_job("persistent", namespace).status
    assert (status.active, status.failed) == (2, None)
