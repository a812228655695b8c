"""autoscale.admissionPolicy on a real API server: the autoscaler's account may resize its Job and scale
ConfigMap, within minSize..maxSize, and take the resize lease; every other change it asks for is
refused with the policy's message. The requests are the pods' own (cluster_api.py, with a token from
the TokenRequest API), and the objects are the builders', named as pulumi-kubernetes names them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders import manifests
from flux_minicluster.config import sizing
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.auto_names import auto_name
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.kubelet.api_reach import token_dir
from tests.pod_modules import cluster_api
from tests.realengine.conftest import create

AUTOSCALED = {"command": None, "size": 1, "minSize": 1, "maxSize": 4,
              "autoscale": {"enabled": True, "admissionPolicy": True}}  # fmt: skip
POLICY_WAIT = 15
"""Seconds a new policy may take to be in force (the API server loads it from its informer)."""


class Cluster:
    """The MiniCluster's objects in a namespace of their own, and its autoscaler's client (`overrides`:
    of the config, AUTOSCALED by default)."""

    def __init__(
        self, admin: client.ApiClient, plane: ControlPlane, namespace: str, tmp: Path, **overrides: Any
    ) -> None:
        raw = config(**(overrides or AUTOSCALED), namespace=namespace)
        self.spec: MiniClusterSpec = load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev")
        self.objects = manifests.all_objects(self.spec, "cert", auto_name)
        for obj in self.objects:
            create(admin, obj)
        self.scale_config = next(o for o in self.objects if o["kind"] == "Role")["rules"][1]["resourceNames"][0]
        account = token_dir(admin, tmp / "account", namespace, "dev-autoscaler", plane.ca)
        self.api = pod_client(plane, account, namespace)
        self.admin = admin

    def policy_in_force(self) -> None:
        """Until the API server refuses what the policy forbids: a new label each time (one already there
        would be no change), harmless where it is allowed."""
        deadline = time.monotonic() + POLICY_WAIT
        while time.monotonic() < deadline:
            probe = {"metadata": {"labels": {"probe": str(time.monotonic_ns())}}}
            try:
                self.api.patch_config_map(self.scale_config, probe, "probe")
            except cluster_api.ApiError:
                return
            time.sleep(0.2)
        raise TimeoutError(f"the policy was not in force within {POLICY_WAIT}s")

    def refusal(self, kind: str, patch: dict[str, Any]) -> str:
        patcher = self.api.patch_job if kind == "Job" else self.api.patch_config_map
        name = self.spec.name if kind == "Job" else self.scale_config
        with pytest.raises(cluster_api.ApiError) as refused:
            patcher(name, patch, sizing.FIELD_MANAGER)
        return str(refused.value)


def take_lease(api: Any, tries: int = 20) -> None:
    """As the autoscaler takes it: on the Job as it read it. The Job controller changes the Job's status
    as its pods come and go, and a change since the read is a 409: the autoscaler tries at its next look."""
    for _ in range(tries):
        job = api.job("dev")
        patch = sizing.lease_patch(sizing.lease(sizing.AUTOSCALER_HOLDER, time.time() + 60),
                                   job["metadata"]["resourceVersion"])  # fmt: skip
        try:
            api.patch_job("dev", patch, sizing.FIELD_MANAGER)
            return
        except cluster_api.ApiError as error:
            if error.status != 409:
                raise
        time.sleep(0.2)
    raise AssertionError(f"the lease was not taken in {tries} tries")


def pod_client(plane: ControlPlane, account: Path, namespace: str) -> Any:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        env.setenv("KUBERNETES_SERVICE_PORT", str(plane.port))
        return cluster_api.ClusterApi(str(account), namespace)


@pytest.fixture
def cluster(admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Cluster:
    made = Cluster(admin, control_plane, namespace, tmp_path)
    made.policy_in_force()
    return made


def job_spec(cluster: Cluster) -> client.V1JobSpec:
    spec = client.BatchV1Api(cluster.admin).read_namespaced_job("dev", cluster.spec.namespace).spec
    assert spec is not None
    return spec


def who(cluster: Cluster) -> str:
    return f"MiniCluster {cluster.spec.namespace}/dev: its autoscaler's account may"


def test_the_autoscaler_resizes_its_job_and_scale_config_map_and_takes_the_lease(cluster: Cluster) -> None:
    api = cluster.api
    api.patch_config_map(cluster.scale_config, sizing.scale_config_patch(4, 1, 4), sizing.FIELD_MANAGER)
    api.patch_job("dev", sizing.job_patch(4), sizing.FIELD_MANAGER)
    take_lease(api)
    job = api.job("dev")
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (4, 4)
    assert sizing.lease_holder(job["metadata"]["annotations"], time.time()) == sizing.AUTOSCALER_HOLDER


def test_suspending_the_job_is_refused_with_the_policys_message(cluster: Cluster) -> None:
    refused = cluster.refusal("Job", {"spec": {"suspend": True}})
    assert f"{who(cluster)} change only the Job's parallelism and completions" in refused
    assert job_spec(cluster).suspend is False


def test_a_size_past_max_size_is_refused(cluster: Cluster) -> None:
    refused = cluster.refusal("Job", sizing.job_patch(9))
    assert f"{who(cluster)} size the Job only within 1..4 brokers (minSize..maxSize)" in refused


def test_parallelism_apart_from_completions_is_refused(cluster: Cluster) -> None:
    refused = cluster.refusal("Job", {"spec": {"parallelism": 2}})
    assert "with parallelism equal to completions" in refused


def test_a_label_or_another_annotation_on_the_job_is_refused(cluster: Cluster) -> None:
    assert "change only the Job's parallelism" in cluster.refusal("Job", {"metadata": {"labels": {"x": "y"}}})
    assert "change only the Job's parallelism" in cluster.refusal("Job", {"metadata": {"annotations": {"x": "y"}}})


def test_the_scale_config_map_past_max_size_or_with_other_data_is_refused(cluster: Cluster) -> None:
    too_big = cluster.refusal("ConfigMap", sizing.scale_config_patch(9, 1, 4))
    assert f"{who(cluster)} set the scale ConfigMap's size only within 1..4 brokers" in too_big
    other = cluster.refusal("ConfigMap", {"data": {"script": "rm -rf /"}})
    assert f"{who(cluster)} change only the scale ConfigMap's size data (size, quorum)" in other


def test_the_user_who_runs_pulumi_up_is_not_bound_by_it(cluster: Cluster) -> None:
    batch = client.BatchV1Api(cluster.admin)
    batch.patch_namespaced_job("dev", cluster.spec.namespace, {"spec": {"parallelism": 9, "completions": 9}})
    assert job_spec(cluster).completions == 9
