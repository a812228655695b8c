"""Rank 0 of a persistent MiniCluster with a state volume, evicted on the real control plane: its real
Job controller makes the replacement once the old pod has ended (podReplacementPolicy Failed), the
replacement restarts the same instance from the saved state, and the jobs queued before the eviction
run in it. The order of events is asserted here; how long each step takes is the benchmark's
(tests/bench/rank0_eviction.py, docs/benchmarks.md). Real Flux in real containers (marked realflux)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client, config

from tests.engines.control_plane import ControlPlane
from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.conftest import required
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.node.lost_pods import PodWatch, both_online, flux, lose, queued_job_start, ready_rank
from tests.realengine.node.stacks import StackOnRealNode
from tests.realengine.pulumi_stack import missing

pytestmark = pytest.mark.realflux


@pytest.fixture(scope="module")
def evicted(
    control_plane: ControlPlane, real_node: NodeInfo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A persistent cluster of 2 (`pulumi up`), a job done, one holding both nodes and two queued behind
    it; then rank 0's pod evicted: what the pods' watch saw, and the rest, for this module's tests."""
    required(missing())
    admin = config.new_client_from_config(str(control_plane.kubeconfig))  # type: ignore[no-untyped-call]
    core, namespace, tmp = client.CoreV1Api(admin), f"t-{secrets.token_hex(4)}", tmp_path_factory.mktemp("evicted")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    state = {"hostPath": str(tmp / "state"), "checkpointPeriod": "1s"}
    pinned = {"nodeSelector": {"kubernetes.io/hostname": real_node.name}}  # the hostPath is on this node
    keys = {**example("interactive"), "size": 2, "stateVolume": state, "pod": pinned}
    try:
        StackOnRealNode(admin, control_plane, namespace, tmp / "stack", "persistent", keys).stack.up()
        old = wait_until(lambda: ready_rank(core, namespace), "a ready rank 0", 120, poll=0.1).metadata.name
        wait_until(lambda: both_online(core, namespace, old), "both ranks online", 120, poll=0.1)
        done = flux(core, namespace, old, "submit", "--wait", "true").strip()
        flux(core, namespace, old, "submit", "-N2", "sleep", "inf")
        queued = [flux(core, namespace, old, "submit", "-N1", "date", "+%s.%N").strip() for _ in range(2)]
        time.sleep(2.5)  # two of rank 0's checkpoints (checkpointPeriod 1s): the queue is in the saved state
        watch = PodWatch(core, namespace, old, 0)
        lose(core, namespace, old, "evict")
        first_start = wait_until(lambda: queued_job_start(core, namespace, queued[0]), "the first queued job", 180)
        watch.stopping.set()
        new = wait_until(lambda: ready_rank(core, namespace), "a ready rank 0", 60).metadata.name
        yield SimpleNamespace(seen=watch.seen, first_start=first_start, done=done, queued=queued, old=old, new=new,
                              core=core, namespace=namespace)  # fmt: skip
    finally:
        core.delete_namespace(namespace)


def test_the_replacement_is_created_only_once_the_evicted_pod_has_failed(evicted: Any) -> None:
    seen = evicted.seen
    assert seen["the pod terminating"] < seen["the pod Failed"] < seen["the replacement created"]


def test_the_queued_jobs_start_only_in_the_replacement(evicted: Any) -> None:
    seen = evicted.seen
    assert evicted.new != evicted.old
    assert seen["the replacement created"] < seen["its broker running"] < evicted.first_start


def test_every_queued_job_runs_and_the_instance_keeps_its_history(evicted: Any) -> None:
    core, namespace, new = evicted.core, evicted.namespace, evicted.new
    second = flux(core, namespace, new, "job", "attach", evicted.queued[1]).strip()
    assert float(second) >= evicted.first_start
    finished = flux(core, namespace, new, "jobs", "-no", "{id.f58} {result}", "--filter=inactive").split("\n")
    assert f"{evicted.done} COMPLETED" in finished
