"""`minicluster status` of a MiniCluster with the keeper (keeper.enabled): a row for the keeper's pod, said
as a broker pod's state is, and, when it is not running, that lost pods wait for the Job controller (its
back-off) meanwhile. None without the keeper. Against the API stand-in, with the real client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.builders import names
from flux_minicluster.builders.keeper import COMPONENT
from flux_minicluster.ops import cli
from tests.kube_api import Cluster, running, waiting
from tests.kube_api.samples import BROKER, DEV, broker_pod, job

KEEPER = names.KEEPER_CONTAINER


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kube_api: Cluster) -> Path:
    """A project of its own, run from, whose stack dev has the keeper; and the Job's 2 pods running."""
    (tmp_path / "Pulumi.yaml").write_text("name: minicluster\nruntime: python\n")
    monkeypatch.chdir(tmp_path)
    kept(tmp_path, True)
    kube_api.add_job(job())
    for rank in range(2):
        kube_api.add_pod(broker_pod(rank, running(BROKER)))
    return tmp_path


def kept(project: Path, enabled: bool) -> None:
    config = {"minicluster:image": DEV.image, "minicluster:size": 2, "minicluster:keeper": {"enabled": enabled}}
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": config}))


def keeper_pod(
    api: Cluster, status: dict[str, Any], suffix: str = "abcde", created: str = "2026-01-01T00:00:00Z"
) -> None:
    metadata = {
        "name": f"dev-keeper-7d9f-{suffix}",
        "namespace": "default",
        "labels": names.labels(DEV, COMPONENT),
        "creationTimestamp": created,
    }
    spec = {"containers": [{"name": KEEPER, "image": DEV.image}], "nodeName": "node-1"}
    api.add_pod({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status})


def said(capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["status", "--stack", "dev"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_a_running_keeper_is_said_with_its_restarts_and_age(
    project: Path, kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    keeper_pod(kube_api, running(KEEPER))
    assert "keeper Running, 0 restarts, age" in said(capsys)
    assert "wait for the Job controller" not in said(capsys)


def test_a_keeper_that_crashes_is_said_with_why_and_what_that_leaves(
    project: Path, kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """An image without python3, say: its Deployment restarts it, and it replaces nothing meanwhile."""
    keeper_pod(kube_api, waiting("CrashLoopBackOff", "back-off 40s restarting failed container", KEEPER, restarts=3))
    assert ("keeper CrashLoopBackOff (back-off 40s restarting failed container), 3 restarts, age") in said(capsys)
    assert "; lost pods wait for the Job controller" in said(capsys)


def test_while_its_deployment_replaces_the_pod_the_newest_is_said(
    project: Path, kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    keeper_pod(kube_api, waiting("CrashLoopBackOff", "", KEEPER, restarts=5), "old")
    keeper_pod(kube_api, running(KEEPER), "new", created="2026-01-01T00:05:00Z")
    assert "keeper Running, 0 restarts" in said(capsys)


def test_a_keeper_without_a_pod_says_where_to_look(
    project: Path, kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        "keeper no pod (`kubectl describe deployment dev-keeper` says why); lost pods wait for the Job controller"
    ) in said(capsys)


def test_without_the_keeper_there_is_no_keeper_row(
    project: Path, kube_api: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    kept(project, False)
    keeper_pod(kube_api, running(KEEPER))
    assert " keeper " not in f" {said(capsys)} "
