"""The dev stack's MiniCluster on the real engines: four brokers, rank 0 runs `hostname` on every node,
and the real Job controller marks the Job complete (what `pulumi up` awaits), its pods succeeded; the
`minicluster` command follows it there."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from flux_minicluster.cluster import kube
from flux_minicluster.cluster.waiting import Clock
from flux_minicluster.ops import cli
from tests.engines.control_plane import ControlPlane
from tests.harness import ROOT
from tests.kubelet.pod import wait_until
from tests.realengine.on_node import OnNode

pytestmark = pytest.mark.realflux


def dev_stack() -> dict[str, object]:
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return {key.removeprefix("minicluster:"): value for key, value in raw.items()}


@pytest.fixture
def cluster(on_node: Callable[..., OnNode]) -> OnNode:
    return on_node(**dev_stack())


def test_the_dev_stacks_job_completes_with_every_hostname_in_rank_0s_log(cluster: OnNode) -> None:
    wait_until(lambda: cluster.condition("Complete") == "True", "the Job to complete", 90, poll=0.3)
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Succeeded"] * 4
    hostnames = [line for line in cluster.rank0.log.splitlines() if line.startswith("dev-")]
    assert sorted(hostnames) == ["dev-0", "dev-1", "dev-2", "dev-3"]


def test_minicluster_wait_follows_the_real_job_to_its_end_and_exits_0(
    cluster: OnNode, control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    ops = cli.Cluster(kube.api_client(None), cluster.kubelet.spec)
    assert cli.cmd_wait(ops, cli.Console(width=200), 90, Clock(poll=0.2)) == 0
    assert "the job completed" in capsys.readouterr().out
    assert cli.cmd_list(ops, cli.Console(width=200)) == 0
    assert capsys.readouterr().out.count("Succeeded") == 4  # one row per rank
