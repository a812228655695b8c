"""`minicluster status` after faults on the real control plane: a persistent MiniCluster's pods on this
test's Node, the real Job controller replacing what is lost. After each fault the cluster is whole
again and status says which rank was replaced and why, in the cluster's own words. On real Flux
(marked realflux), Flux's own view in status counts every rank up again."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders.names import BROKER_CONTAINER
from flux_minicluster.ops import cli
from tests.kubelet.pod import wait_until
from tests.realengine.on_node import OnNode, ready


def status(ops: Any) -> str:
    printed = io.StringIO()
    assert cli.cmd_status(ops, cli.Console(file=printed, width=200)) == 0
    return printed.getvalue()


def replaced(said: str) -> list[str]:
    return [line.split(None, 1)[1].strip() for line in said.splitlines() if line.strip().startswith("replaced ")]


def whole(cluster: OnNode, size: int) -> bool:
    """A Ready pod for every rank (the failed pods the Job keeps aside)."""
    pods = [pod for pod in cluster.pods() if pod.metadata.deletion_timestamp is None and ready(pod)]
    return sorted(pod.metadata.name.rsplit("-", 1)[0] for pod in pods) == [f"dev-{rank}" for rank in range(size)]


@pytest.fixture
def faulted(on_node: Callable[..., OnNode], minicluster_ops: Callable[..., Any]) -> Any:
    """A persistent cluster of 3 whose rank 2 was evicted while rank 1 crashed, each replaced: its ops.
    Both at once: the Job controller holds back each replacement after a failure (10 s, doubled for
    each failure in a row), so the two one after the other took 30 s of back-off, and together 20."""
    cluster = on_node(size=3, command=None, backoffLimit=5)
    ops = minicluster_ops(cluster)
    wait_until(lambda: whole(cluster, 3), "every broker to be ready", 60)
    evicted, crashed = cluster.kubelet.pod(2).name, cluster.kubelet.pod(1).name
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=evicted, namespace=cluster.namespace))
    client.CoreV1Api(cluster.admin).create_namespaced_pod_eviction(evicted, cluster.namespace, eviction)
    cluster.kubelet.pod(1).kill()  # rank 1's node died: its processes are gone
    wait_until(
        lambda: cluster.kubelet.pod(2).name != evicted and cluster.kubelet.pod(1).name != crashed and whole(cluster, 3),
        "rank 2's and rank 1's replacements", 60,
    )  # fmt: skip
    return ops


def test_status_names_the_replaced_ranks_and_why_after_an_eviction_and_a_crash(faulted: Any) -> None:
    said = status(faulted)
    # The crashed pod stays, Failed, with its exit code. The evicted one is gone (deleted once it had
    # stopped), and its Events are all that is left of it: the kubelet's says it stopped it.
    rank1, rank2 = replaced(said)
    assert rank1.startswith("rank 1: 1 time (Failed (exit ")
    assert rank2 == f"rank 2: 1 time (Killing: Stopping container {BROKER_CONTAINER})"
    assert "Running 0-2; Failed 1" in said  # the failed pod the Job keeps, beside rank 1's running one


@pytest.mark.realflux
def test_flux_counts_every_rank_up_again_after_an_eviction_and_a_crash(faulted: Any) -> None:
    wait_until(lambda: "3 up, 0 down, 0 drained" in status(faulted), "Flux to count every rank up", 30)
