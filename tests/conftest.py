"""Shared test data: one base config; each test overrides one thing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube_api import Cluster, StandIn

IMAGE = "ghcr.io/flux-framework/flux-restful-api:latest"
BASE_CONFIG: dict[str, Any] = {"image": IMAGE, "size": 4, "command": "hostname"}


def config(**overrides: Any) -> dict[str, Any]:
    """The base config with overrides; an override of None removes the key."""
    merged = {**BASE_CONFIG, **overrides}
    return {key: value for key, value in merged.items() if value is not None}


@pytest.fixture
def base_config() -> dict[str, Any]:
    return config()


@pytest.fixture(scope="session", autouse=True)
def no_real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reaches the cluster of the machine it runs on (the program's admission check reads the
    kubeconfig's cluster), from the first fixture on. Tests that want an API server use kube_api."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KUBECONFIG", str(tmp_path_factory.getbasetemp() / "no-kubeconfig"))
        patch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        yield


@pytest.fixture
def kube_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """A local Kubernetes API stand-in, and KUBECONFIG pointing at it (its context: `standin`)."""
    stand_in = StandIn(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(stand_in.cluster.kubeconfig))
    yield stand_in.cluster
    stand_in.stop()


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    """One API stand-in for a whole module: for a provider plugin process, which keeps its KUBECONFIG."""
    server = StandIn(tmp_path_factory.mktemp("api"))
    yield server
    server.stop()
