"""Which cluster the ops tool talks to: the one the stack deploys to (its plain `kubernetes:context`
and `kubernetes:kubeconfig`), unless `--context` or `--kubeconfig` says otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flux_minicluster.ops import cli
from tests.kube_api import Cluster


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of its own, the tool run from it, and KUBECONFIG pointing at no file."""
    (tmp_path / "Pulumi.yaml").write_text("name: minicluster\nruntime: python\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    return tmp_path


def stack(project: Path, **kubernetes: str) -> None:
    config = {"minicluster:image": "flux:1", **{f"kubernetes:{key}": value for key, value in kubernetes.items()}}
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": config}))


def test_the_stacks_kubeconfig_and_context_are_where_it_looks(
    kube_api: Cluster, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack(project, kubeconfig=str(kube_api.kubeconfig), context="nope")
    assert cli.main(["list", "--stack", "dev"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: kubeconfig context 'nope' does not exist in {kube_api.kubeconfig}; its contexts: standin"
    )


def test_the_flags_are_taken_before_the_stacks_settings(
    kube_api: Cluster, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack(project, context="nope")
    assert cli.main(["list", "--stack", "dev", "--kubeconfig", str(kube_api.kubeconfig), "--context", "standin"]) == 3
    assert "MiniCluster 'dev' is not deployed in namespace 'default'" in capsys.readouterr().err  # it asked the API
