"""The pods' Kubernetes client (cluster_api.py, the autoscaler's) against the API stand-in over HTTPS,
as a pod reaches the API server: the address from KUBERNETES_SERVICE_HOST and _PORT, the server
checked against the service account's CA, its token, and its Role enforced as RBAC enforces it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders import autoscaling, manifests
from flux_minicluster.config import sizing
from tests.auto_names import auto_name
from tests.kube_api import Cluster, StandIn, refused_url
from tests.kube_api.in_cluster import InCluster
from tests.pod_modules import autoscaler, cluster_api
from tests.test_autoscale_config import spec_of
from tests.test_operate import job

SPEC = spec_of()
SCALE_CONFIG = auto_name("dev-scale")
"""The scale ConfigMap, named as pulumi-kubernetes names it."""


@pytest.fixture
def pod_api(api_server: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Cluster]]:
    """The client as rank 0's autoscaler makes it, with the autoscaler's Role, and the cluster it sees."""
    cluster = api_server.cluster.reset()
    served = InCluster(api_server, tmp_path / "api")
    account = served.service_account("default", "dev-autoscaler", autoscaling.rules(SPEC, SCALE_CONFIG))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", served.host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(served.port))
    cluster.add_job({**job(), "metadata": {**job()["metadata"], "uid": "job-uid"}})
    scale_config = manifests.scale_config_map(SPEC)
    scale_config["metadata"]["name"] = SCALE_CONFIG
    cluster.config_maps[("default", SCALE_CONFIG)] = scale_config
    yield cluster_api.ClusterApi(str(account), "default"), cluster
    served.stop()


def test_it_reads_and_patches_its_own_job_with_the_scale_field_manager(pod_api: tuple[Any, Cluster]) -> None:
    api, cluster = pod_api
    api.patch_job("dev", sizing.job_patch(3), sizing.FIELD_MANAGER)
    assert api.job("dev")["spec"]["completions"] == cluster.jobs[("default", "dev")]["spec"]["parallelism"] == 3
    assert cluster.field_managers == [("/apis/batch/v1/namespaces/default/jobs/dev", "minicluster-scale")]


def test_it_writes_the_scale_files_and_drops_a_quorum_no_longer_needed(pod_api: tuple[Any, Cluster]) -> None:
    api, cluster = pod_api
    api.patch_config_map(SCALE_CONFIG, sizing.scale_config_patch(2, None, 4), sizing.FIELD_MANAGER)
    api.patch_config_map(SCALE_CONFIG, sizing.scale_config_patch(4, None, 4), sizing.FIELD_MANAGER)
    assert cluster.config_maps[("default", SCALE_CONFIG)]["data"] == {"size": "4"}


def test_its_event_on_the_job_is_one_kubectl_describe_lists(pod_api: tuple[Any, Cluster]) -> None:
    api, cluster = pod_api
    api.event(api.job("dev"), sizing.GREW, "grew from 1 to 4 brokers", False, sizing.AUTOSCALER)
    (event,) = cluster.events
    assert event["involvedObject"] == {"apiVersion": "batch/v1", "kind": "Job", "name": "dev",
                                       "namespace": "default", "uid": "job-uid"}  # fmt: skip
    assert (event["reason"], event["type"], event["source"]) == ("Grew", "Normal", {"component": sizing.AUTOSCALER})
    assert event["metadata"]["name"].startswith("dev.")


def test_another_job_is_forbidden_in_the_api_servers_words(pod_api: tuple[Any, Cluster]) -> None:
    api, _ = pod_api
    with pytest.raises(cluster_api.ApiError) as refused:
        api.patch_job("other", sizing.job_patch(3), sizing.FIELD_MANAGER)
    assert refused.value.status == 403
    assert str(refused.value) == (
        '403: jobs.batch "other" is forbidden: User "system:serviceaccount:default:dev-autoscaler" cannot patch '
        'resource "jobs" in API group "batch" in the namespace "default"'
    )


def test_deleting_its_own_job_is_forbidden(pod_api: tuple[Any, Cluster]) -> None:
    api, cluster = pod_api
    with pytest.raises(cluster_api.ApiError, match="cannot delete resource"):
        api.request("DELETE", "/apis/batch/v1/namespaces/default/jobs/dev")
    assert ("default", "dev") in cluster.jobs


def test_a_server_its_ca_does_not_vouch_for_is_refused(pod_api: tuple[Any, Cluster], tmp_path: Path) -> None:
    _, cluster = pod_api
    other = tmp_path / "other-ca"
    other.mkdir()
    (other / "token").write_text("x")
    (other / "ca.crt").write_text(Path("/etc/ssl/certs/ca-certificates.crt").read_text())
    with pytest.raises(cluster_api.ApiError, match="CERTIFICATE_VERIFY_FAILED"):
        cluster_api.ClusterApi(str(other), "default").job("dev")
    assert cluster.requests == []


def test_no_answer_is_an_error_without_a_status(pod_api: tuple[Any, Cluster], monkeypatch: pytest.MonkeyPatch) -> None:
    api, _ = pod_api
    monkeypatch.setattr(api, "base", refused_url().replace("http:", "https:"))
    with pytest.raises(cluster_api.ApiError) as failed:
        api.job("dev")
    assert failed.value.status is None
    assert "refused" in str(failed.value).lower()


# -- the autoscaler's side of the resize lease (config/sizing.py: RESIZING) ---------------------------


@pytest.fixture
def pod_autoscaler(pod_api: tuple[Any, Cluster], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Cluster]:
    """Rank 0's Autoscaler, with the environment the Job gives its container; it has no Flux (a look that
    reached the instance would fail)."""
    api, cluster = pod_api
    for item in autoscaling.container(SPEC, SCALE_CONFIG)["env"]:
        if "value" in item:
            monkeypatch.setenv(item["name"], item["value"])
    return autoscaler.Autoscaler(None, api), cluster


def test_the_autoscaler_takes_its_bounds_from_min_size_and_max_size(pod_autoscaler: tuple[Any, Cluster]) -> None:
    scaler, _ = pod_autoscaler
    assert (scaler.min_size, scaler.bounds.smallest, scaler.bounds.largest) == (None, 1, 4)


def test_the_autoscaler_takes_the_lease_on_the_job_it_read_and_gives_it_back(
    pod_autoscaler: tuple[Any, Cluster],
) -> None:
    scaler, cluster = pod_autoscaler
    read = scaler.api.job("dev")
    assert scaler.take_lease(read)
    holder = sizing.lease_holder(cluster.jobs[("default", "dev")]["metadata"]["annotations"], time.time())
    assert holder == sizing.AUTOSCALER_HOLDER
    assert not scaler.take_lease(read)  # the Job changed since that read: 409, and no second lease
    scaler.give_lease_back()
    assert cluster.jobs[("default", "dev")]["metadata"]["annotations"] == {}


def test_the_autoscaler_holds_off_while_a_pulumi_up_resizes(
    pod_autoscaler: tuple[Any, Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    scaler, cluster = pod_autoscaler
    until = time.time() + 60
    cluster.jobs[("default", "dev")]["metadata"]["annotations"] = {sizing.RESIZING: sizing.lease(sizing.PULUMI, until)}
    scaler.look()  # without Flux: it looked no further than the Job
    scaler.look()
    assert capsys.readouterr().err.count("a `pulumi up` is resizing the cluster: waiting for it to end") == 1
