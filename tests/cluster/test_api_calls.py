"""The provider processes' plain JSON calls (cluster/api_calls.py) against the API stand-in: objects read
like the `kubernetes` client's models, a watch follows the changes, and a watch from a resourceVersion
the API server no longer keeps lists the pods again instead of failing."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from flux_minicluster.cluster import api_calls, kube, watching
from flux_minicluster.cluster.objects import exit_code, pod_rank
from tests.kube_api import Cluster, finished

POD = {
    "metadata": {"name": "dev-1-abcde", "labels": {"batch.kubernetes.io/job-completion-index": "1"},
               "deletionTimestamp": "2026-01-01T00:00:05Z"},
    "status": {"phase": "Failed", "containerStatuses": [{"name": "flux", "state": {"terminated": {"exitCode": 3}}}]},
}  # fmt: skip


def test_a_view_reads_fields_by_the_clients_snake_case_names() -> None:
    pod = api_calls.view(POD)
    assert pod.status.container_statuses[0].state.terminated.exit_code == 3
    assert pod.metadata.deletion_timestamp == "2026-01-01T00:00:05Z"


def test_a_field_the_server_left_out_reads_as_none() -> None:
    assert api_calls.view(POD).spec is None
    assert api_calls.view(POD).status.container_statuses[0].state.running is None


def test_free_form_maps_stay_dicts_whatever_their_keys() -> None:
    labels = api_calls.view(POD).metadata.labels
    assert labels == {"batch.kubernetes.io/job-completion-index": "1"}


def test_the_readers_of_the_clients_models_read_a_view_alike() -> None:
    pod = api_calls.view(POD)
    assert (pod_rank(pod), exit_code(pod.status.container_statuses[0])) == (1, 3)


def pod(name: str, rank: int) -> dict[str, Any]:
    labels = {"job-name": "dev", "batch.kubernetes.io/job-completion-index": str(rank)}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": {"containers": []}}


def test_a_watch_brings_each_change_of_the_selected_pods(kube_api: Cluster) -> None:
    kube_api.add_pod(pod("dev-0-a", 0))
    follow = watching.pods(kube.api_client(None), "default", "job-name=dev", lambda: 5.0)
    assert [p.metadata.name for p in next(follow)] == ["dev-0-a"]
    kube_api.set_pod("default", "dev-0-a", status=finished(0, container="flux"))
    assert [p.status.phase for p in next(follow)] == ["Succeeded"]


def test_a_watch_from_a_compacted_version_lists_the_pods_again(kube_api: Cluster) -> None:
    """The API server ends such a watch with an ERROR event, code 410 (Expired): the pods are listed again."""
    kube_api.add_pod(pod("dev-0-a", 0))
    follow = watching.pods(kube.api_client(None), "default", "job-name=dev", lambda: 5.0)
    assert [p.metadata.name for p in next(follow)] == ["dev-0-a"]
    kube_api.add_pod(pod("dev-1-b", 1))
    kube_api.compact()  # the list's resourceVersion is gone before the watch starts from it
    assert sorted(p.metadata.name for p in next(follow)) == ["dev-0-a", "dev-1-b"]


def test_a_watch_error_is_the_clients_exception_with_its_code(kube_api: Cluster) -> None:
    from kubernetes.client.exceptions import ApiException

    kube_api.add_pod(pod("dev-0-a", 0))
    kube_api.compact()
    with pytest.raises(ApiException) as raised:  # a watch from a version older than the server keeps
        list(api_calls.watch(kube.api_client(None), api_calls.pods("default"), {"resourceVersion": "1"}, 5))
    assert raised.value.status == 410
    assert "too old resource version: 1" in str(raised.value.reason)


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
def test_the_client_is_frozen_out_of_the_garbage_collectors_passes_and_leaves_it_as_it_was(
    kube_api: Cluster, enabled: bool
) -> None:
    (gc.enable if enabled else gc.disable)()
    try:
        kube.api_client(None)
        assert (gc.isenabled(), gc.get_freeze_count() > 0) == (enabled, True)
    finally:
        gc.enable()
