"""Logs and exec through the real API server: `pods/log` and `pods/exec` reach the test kubelet's
streaming server (tests/kubelet/streaming, Kubernetes' own remotecommand server) at its Node's
address, as they reach a kubelet; what the ops tool and the providers do with them works as on a
cluster."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from flux_minicluster.builders.names import BROKER_CONTAINER
from flux_minicluster.cluster import kube
from flux_minicluster.cluster.kube import run_in_pod
from flux_minicluster.ops import cli
from tests.engines.control_plane import ControlPlane
from tests.kubelet.pod import wait_until
from tests.realengine.on_node import OnNode

pytestmark = pytest.mark.realflux


@pytest.fixture
def cluster(on_node: Callable[..., OnNode]) -> OnNode:
    cluster = on_node(size=2, command=None)
    wait_until(lambda: cluster.running(2), "both pods to run and be ready", 60, poll=0.2)
    return cluster


def test_a_pods_log_is_its_flux_containers_output(cluster: OnNode, admin: client.ApiClient) -> None:
    said = client.CoreV1Api(admin).read_namespaced_pod_log(
        cluster.rank0.name, cluster.namespace, container=BROKER_CONTAINER
    )
    assert said and said == cluster.rank0.log


def test_a_command_run_over_the_exec_api_runs_in_the_container_with_its_output_and_status(
    cluster: OnNode, admin: client.ApiClient
) -> None:
    core = client.CoreV1Api(admin)
    stdout, stderr, code = run_in_pod(core, cluster.namespace, cluster.rank0.name, BROKER_CONTAINER,
                                      ["sh", "-c", "hostname; echo to-stderr >&2; exit 3"], timeout=30)  # fmt: skip
    assert (stdout, stderr, code) == ("dev-0\n", "to-stderr\n", 3)


def test_minicluster_exec_runs_flux_in_rank_0_and_logs_shows_its_log(
    cluster: OnNode, control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    ops = cli.Cluster(kube.api_client(None), cluster.kubelet.spec)
    assert cli.cmd_exec(ops, 0, ["flux", "getattr", "size"]) == 0
    assert capsys.readouterr().out == "2\n"
    assert cli.cmd_exec(ops, 1, ["flux", "getattr", "rank"]) == 0
    assert capsys.readouterr().out == "1\n"
