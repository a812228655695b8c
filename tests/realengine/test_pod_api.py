"""The pods' Kubernetes client (cluster_api.py, the autoscaler's) against the real API server, as rank
0's autoscaler reaches it: the server checked against the cluster's CA, a token from the TokenRequest
API for the autoscaler's account, and its Role enforced by the real RBAC authorizer. The Job's pods stay
pending (no Node matches them), so the Job controller leaves the Job as it is once it has made them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders import autoscaling
from flux_minicluster.config import sizing
from tests.engines.control_plane import ControlPlane
from tests.kube_api import refused_url
from tests.kubelet.pod import wait_until
from tests.pod_modules import autoscaler, cluster_api
from tests.realengine.test_autoscaler_policy import Cluster, pod_client

AUTOSCALED = {"command": None, "size": 1, "maxSize": 4, "autoscale": {"enabled": True},
              "pod": {"nodeSelector": {"minicluster.test/no-such-node": "x"}}}  # fmt: skip


@pytest.fixture
def cluster(admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Cluster:
    made = Cluster(admin, control_plane, namespace, tmp_path, **AUTOSCALED)
    wait_until(lambda: (job(made).status.active or 0) == 1, "the Job controller to make the Job's pod", 30, poll=0.1)
    return made


def job(cluster: Cluster) -> Any:
    return client.BatchV1Api(cluster.admin).read_namespaced_job("dev", cluster.spec.namespace)


def test_it_reads_and_patches_its_own_job_with_the_scale_field_manager(cluster: Cluster) -> None:
    cluster.api.patch_job("dev", sizing.job_patch(3), sizing.FIELD_MANAGER)
    assert cluster.api.job("dev")["spec"]["completions"] == job(cluster).spec.parallelism == 3
    managers = {entry.manager for entry in job(cluster).metadata.managed_fields}
    assert sizing.FIELD_MANAGER in managers


def test_it_writes_the_scale_files_and_drops_a_quorum_no_longer_needed(cluster: Cluster) -> None:
    cluster.api.patch_config_map(cluster.scale_config, sizing.scale_config_patch(2, None, 4), sizing.FIELD_MANAGER)
    cluster.api.patch_config_map(cluster.scale_config, sizing.scale_config_patch(4, None, 4), sizing.FIELD_MANAGER)
    core = client.CoreV1Api(cluster.admin)
    assert core.read_namespaced_config_map(cluster.scale_config, cluster.spec.namespace).data == {"size": "4"}


def test_its_event_on_the_job_is_one_kubectl_describe_lists(cluster: Cluster) -> None:
    cluster.api.event(cluster.api.job("dev"), sizing.GREW, "grew from 1 to 4 brokers", False, sizing.AUTOSCALER)
    about = "involvedObject.kind=Job,involvedObject.name=dev,reason=Grew"  # the Job controller's are there too
    found: list[Any] = (
        client.CoreV1Api(cluster.admin).list_namespaced_event(cluster.spec.namespace, field_selector=about).items
    )
    (event,) = found
    assert (event.involved_object.uid, event.involved_object.api_version) == (job(cluster).metadata.uid, "batch/v1")
    assert (event.reason, event.type, event.source.component) == ("Grew", "Normal", sizing.AUTOSCALER)
    assert event.message == "grew from 1 to 4 brokers" and event.metadata.name.startswith("dev.")


def test_another_job_is_forbidden_in_the_api_servers_words(cluster: Cluster) -> None:
    namespace = cluster.spec.namespace
    with pytest.raises(cluster_api.ApiError) as refused:
        cluster.api.patch_job("other", sizing.job_patch(3), sizing.FIELD_MANAGER)
    assert refused.value.status == 403
    assert str(refused.value) == (
        f'403: jobs.batch "other" is forbidden: User "system:serviceaccount:{namespace}:dev-autoscaler" cannot '
        f'patch resource "jobs" in API group "batch" in the namespace "{namespace}"'
    )


def test_deleting_its_own_job_is_forbidden(cluster: Cluster) -> None:
    with pytest.raises(cluster_api.ApiError, match="cannot delete resource"):
        cluster.api.request("DELETE", f"/apis/batch/v1/namespaces/{cluster.spec.namespace}/jobs/dev")
    assert job(cluster).metadata.deletion_timestamp is None


def test_a_server_its_ca_does_not_vouch_for_is_refused(
    cluster: Cluster, control_plane: ControlPlane, tmp_path: Path
) -> None:
    other = tmp_path / "other-ca"
    other.mkdir()
    (other / "token").write_text("x")
    (other / "ca.crt").write_text(Path("/etc/ssl/certs/ca-certificates.crt").read_text())
    with pytest.raises(cluster_api.ApiError, match="CERTIFICATE_VERIFY_FAILED"):
        pod_client(control_plane, other, cluster.spec.namespace).job("dev")


def test_no_answer_is_an_error_without_a_status(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster.api, "base", refused_url().replace("http:", "https:"))
    with pytest.raises(cluster_api.ApiError) as failed:
        cluster.api.job("dev")
    assert failed.value.status is None
    assert "refused" in str(failed.value).lower()


# -- the autoscaler's side of the resize lease (config/sizing.py: RESIZING) ---------------------------


@pytest.fixture
def scaler(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Rank 0's Autoscaler, with the environment the Job gives its container; it has no Flux (a look that
    reached the instance would fail)."""
    for item in autoscaling.container(cluster.spec, cluster.scale_config)["env"]:
        if "value" in item:
            monkeypatch.setenv(item["name"], item["value"])
    return autoscaler.Autoscaler(None, cluster.api)


def test_the_autoscaler_takes_its_bounds_from_min_size_and_max_size(scaler: Any) -> None:
    assert (scaler.min_size, scaler.bounds.smallest, scaler.bounds.largest) == (None, 1, 4)


def test_the_autoscaler_takes_the_lease_on_the_job_it_read_and_gives_it_back(scaler: Any, cluster: Cluster) -> None:
    read = scaler.api.job("dev")
    assert scaler.take_lease(read)
    holder = sizing.lease_holder(job(cluster).metadata.annotations or {}, time.time())
    assert holder == sizing.AUTOSCALER_HOLDER
    assert not scaler.take_lease(read)  # the Job changed since that read: 409, and no second lease
    scaler.give_lease_back()
    assert sizing.RESIZING not in (job(cluster).metadata.annotations or {})


def test_the_autoscaler_holds_off_while_a_pulumi_up_resizes(
    scaler: Any, cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    lease = {sizing.RESIZING: sizing.lease(sizing.PULUMI, time.time() + 60)}
    client.BatchV1Api(cluster.admin).patch_namespaced_job(
        "dev", cluster.spec.namespace, {"metadata": {"annotations": lease}}
    )
    scaler.look()  # without Flux: it looked no further than the Job
    scaler.look()
    assert capsys.readouterr().err.count("a `pulumi up` is resizing the cluster: waiting for it to end") == 1
