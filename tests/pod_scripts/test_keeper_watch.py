"""The keeper's list and watch (the keeper pod's keeper.py, through cluster_api.py) against the API stand-in,
reached as a pod reaches the API server: HTTPS, its service account's token and CA (tests/kube_api/in_cluster.py).
A young real control plane replays old events instead of answering 410, so this path is tested here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders.names import INDEX_LABEL, REPLACES
from tests.kube_api.in_cluster import InCluster
from tests.kube_api.server import StandIn
from tests.pod_modules import cluster_api, keeper

KEEPER_RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "create"]}]


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[StandIn]:
    server = StandIn(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def api(stand_in: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    reached = InCluster(stand_in, tmp_path / "in-cluster")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", reached.host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(reached.port))
    yield cluster_api.ClusterApi(str(reached.service_account("default", "dev-keeper", KEEPER_RULES)), "default")
    reached.stop()


def pod(name: str, index: int) -> dict[str, Any]:
    labels = {"job-name": "dev", INDEX_LABEL: str(index)}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": []}, "status": {"phase": "Running"}}  # fmt: skip


def test_a_watch_from_a_compacted_version_ends_quietly_for_a_fresh_list(stand_in: StandIn, api: Any) -> None:
    """The API server ends it with an ERROR event, code 410 (Expired): the keeper's loop lists again
    at once, instead of taking it for a failure of the API server and pausing."""
    stand_in.cluster.add_pod(pod("dev-0-a", 0))
    the_keeper = keeper.Keeper(api, "dev", INDEX_LABEL, REPLACES, True)
    listed = api.request("GET", the_keeper.pods_path, labelSelector=the_keeper.selector)
    pods = {found["metadata"]["name"]: found for found in listed["items"]}
    stand_in.cluster.add_pod(pod("dev-1-a", 1))
    stand_in.cluster.compact()  # the list's resourceVersion is gone before the watch starts from it
    the_keeper.follow(pods, listed["metadata"]["resourceVersion"])
    assert list(pods) == ["dev-0-a"]  # the watch brought nothing: what came since is the next list's
    relisted = api.request("GET", the_keeper.pods_path, labelSelector=the_keeper.selector)
    assert sorted(found["metadata"]["name"] for found in relisted["items"]) == ["dev-0-a", "dev-1-a"]


def test_a_watch_the_api_server_refuses_is_its_error_with_its_code(stand_in: StandIn, api: Any) -> None:
    """Unlike the 410 above, which ends a watch that was allowed."""
    with pytest.raises(cluster_api.ApiError) as refused:  # the keeper's Role is its own namespace's only
        list(api.watch("/api/v1/namespaces/other/pods", 5, labelSelector="job-name=dev", resourceVersion="1"))
    assert refused.value.status == 403
