"""The dev stack's MiniCluster on the real engines: four brokers, rank 0 runs `hostname` on every node,
and the real Job controller marks the Job complete (what `pulumi up` awaits), its pods succeeded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.harness import ROOT
from tests.kubelet.pod import wait_until
from tests.realengine.on_node import OnNode

pytestmark = pytest.mark.realflux


def dev_stack() -> dict[str, object]:
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return {key.removeprefix("minicluster:"): value for key, value in raw.items()}


@pytest.fixture
def cluster(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path, real_flux: None
) -> Iterator[OnNode]:
    made = OnNode(admin, control_plane, namespace, tmp_path, **dev_stack())
    try:
        yield made
    finally:
        made.close()


def test_the_dev_stacks_job_completes_with_every_hostname_in_rank_0s_log(cluster: OnNode) -> None:
    wait_until(lambda: cluster.condition("Complete") == "True", "the Job to complete", 90, poll=0.3)
    assert sorted(pod.status.phase for pod in cluster.pods()) == ["Succeeded"] * 4
    hostnames = [line for line in cluster.rank0.log.splitlines() if line.startswith("dev-")]
    assert sorted(hostnames) == ["dev-0", "dev-1", "dev-2", "dev-3"]
