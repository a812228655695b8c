"""The keeper (pod_scripts/keeper.py) against the real API server and its real Job controller: run as
its own process with its own account's token and Role (builders/keeper.py), it follows the Job's pods
with a real watch and replaces a lost one with a pod the Job controller takes as the index's own. No
node runs the pods (none may take them): the test makes their ends as a kubelet reports them, through
the pods' status. The keeper on the real node, with real Flux: tests/realengine/node/test_keeper.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client

from flux_minicluster.builders import files, keeper, manifests
from flux_minicluster.builders.names import INDEX_LABEL, REPLACES
from flux_minicluster.config.loader import load_spec
from tests.engines.control_plane import ControlPlane
from tests.kubelet.api_reach import token_dir
from tests.kubelet.pod import wait_until
from tests.pod_modules import cluster_api
from tests.realengine.accounts import granted
from tests.realengine.conftest import create

EVICTED = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
           "message": "Eviction API: evicting"}  # fmt: skip
JOB_BACK_OFF = 10
"""Seconds the Job controller waits after a pod's failure before it makes one (docs/lost-pods.md)."""


@pytest.fixture
def kept(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Any]:  # fmt: skip
    """An Indexed Job of 3 made as the MiniCluster's (its pods held back: no node has the label they ask
    for), the keeper's account, Role and binding as the builders make them, and keeper.py running as
    that account; the core API, the namespace, the keeper's log file, and its client in this process."""
    config = {"minicluster:namespace": namespace, "minicluster:size": 3, "minicluster:command": None,
              "minicluster:image": "minicluster.test/held-back:1",
              "minicluster:keeper": {"enabled": True},
              "minicluster:pod": {"nodeSelector": {"minicluster.test/none": "none"}}}  # fmt: skip
    spec = load_spec(config, "kept")
    for obj in manifests.all_objects(spec, "cert"):
        if obj["kind"] not in ("Deployment",):  # the keeper runs here instead, as a process
            create(admin, obj)
    unnamed = [rule for rule in keeper.rules(spec) if "resourceNames" not in rule]  # one binding grants all
    granted(admin, f"system:serviceaccount:{namespace}:kept-keeper", namespace, unnamed)
    account = token_dir(admin, tmp_path / "account", namespace, "kept-keeper", control_plane.ca)
    address = urlsplit(control_plane.url)
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": str(address.hostname), "KUBERNETES_SERVICE_PORT": str(address.port),
           **{item["name"]: item["value"] for item in keeper.environment(spec)},
           "MC_SERVICE_ACCOUNT_DIR": str(account)}  # fmt: skip
    for variable in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.setenv(variable, env[variable])
    api = cluster_api.ClusterApi(str(account), namespace)  # the keeper's client, in this process
    core = client.CoreV1Api(admin)
    wait_until(lambda: len(live(core, namespace)) == 3, "the Job's 3 pods", 60)
    log = tmp_path / "keeper.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, str(files.POD_SCRIPTS / "keeper.py")], env=env, stderr=out)
    try:
        wait_until(lambda: "watching the pods" in log.read_text(), "the keeper's watch", 30)
        yield core, namespace, log, api
    finally:
        process.terminate()
        process.wait(10)


def live(core: client.CoreV1Api, namespace: str) -> dict[str, Any]:
    """The Job's pods that neither ended nor were told to stop, by name."""
    found: Any = core.list_namespaced_pod(namespace, label_selector="job-name=kept")
    return {p.metadata.name: p for p in found.items
            if p.status.phase not in ("Succeeded", "Failed") and not p.metadata.deletion_timestamp}  # fmt: skip


def of_index(core: client.CoreV1Api, namespace: str, index: int) -> Any:
    pods = [p for p in live(core, namespace).values() if p.metadata.labels[INDEX_LABEL] == str(index)]
    assert len(pods) == 1, [p.metadata.name for p in pods]
    return pods[0]


def end(core: client.CoreV1Api, namespace: str, pod: Any, *conditions: dict[str, Any]) -> None:
    """The pod Failed, with these conditions, as its kubelet reports the end of a pod."""
    status = {"phase": "Failed", "conditions": list(conditions)}
    core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": status})


def replacement_of(core: client.CoreV1Api, namespace: str, lost: Any) -> Any:
    def made() -> Any:
        found = [p for p in live(core, namespace).values()
                 if (p.metadata.annotations or {}).get(REPLACES) == lost.metadata.name]  # fmt: skip
        return found[0] if found else None

    return wait_until(made, f"the keeper's replacement of {lost.metadata.name}", 30, poll=0.1)


def test_an_evicted_pod_is_replaced_by_the_jobs_pod_for_its_index(kept: Any) -> None:
    core, namespace, *_ = kept
    lost = of_index(core, namespace, 2)
    end(core, namespace, lost, EVICTED)
    new = replacement_of(core, namespace, lost)
    assert new.metadata.labels[INDEX_LABEL] == "2"
    assert new.spec.hostname == "kept-2"
    assert [(o.kind, o.name, o.controller) for o in new.metadata.owner_references] == [("Job", "kept", True)]


def test_the_job_controller_takes_the_keepers_pod_as_the_indexs_own(kept: Any) -> None:
    core, namespace, *_ = kept
    lost = of_index(core, namespace, 1)
    end(core, namespace, lost, EVICTED)
    failed_at = time.monotonic()
    new = replacement_of(core, namespace, lost)

    def counted() -> bool:  # the Job controller takes its tracking finalizer off a pod it has counted
        return not core.read_namespaced_pod(lost.metadata.name, namespace).metadata.finalizers

    wait_until(counted, "the Job controller to count the lost pod", 30, poll=0.1)
    time.sleep(max(0.0, failed_at + JOB_BACK_OFF + 2 - time.monotonic()))  # when it would make a pod of its own
    assert of_index(core, namespace, 1).metadata.name == new.metadata.name
    status: Any = client.BatchV1Api(core.api_client).read_namespaced_job("kept", namespace).status
    assert (status.active, status.failed) == (3, None)


def test_a_pod_that_failed_without_a_disruption_is_left_to_the_job_controller(kept: Any) -> None:
    core, namespace, log, _ = kept
    failed, evicted = of_index(core, namespace, 1), of_index(core, namespace, 2)
    end(core, namespace, failed)
    end(core, namespace, evicted, EVICTED)  # after it: once the keeper has acted on this one, it saw both
    # It replaces the evicted pod, or says why not: with backoffLimit 0 (the default) the failure may have
    # given the Job FailureTarget first, and then the Job wants no new pod (which of the two is a race
    # between the Job controller and the keeper).
    wait_until(lambda: evicted.metadata.name in log.read_text(), "the keeper's word on the evicted pod", 30, poll=0.1)
    assert failed.metadata.name not in log.read_text()
    assert [p for p in live(core, namespace).values()
            if (p.metadata.annotations or {}).get(REPLACES) == failed.metadata.name] == []  # fmt: skip


def test_a_watch_sees_a_pods_change_after_the_listed_version(kept: Any) -> None:
    core, namespace, _, api = kept
    path = f"/api/v1/namespaces/{namespace}/pods"
    listed = api.request("GET", path, labelSelector="job-name=kept")
    lost = of_index(core, namespace, 2)
    end(core, namespace, lost)
    changes = api.watch(path, 5, labelSelector="job-name=kept", resourceVersion=listed["metadata"]["resourceVersion"])
    kind, pod = next((kind, pod) for kind, pod in changes if pod["metadata"]["name"] == lost.metadata.name)
    assert (kind, pod["status"]["phase"]) == ("MODIFIED", "Failed")  # the scheduler may touch the others


def test_a_replacement_the_quota_refused_is_tried_again_with_no_other_event_of_the_jobs_pods(kept: Any) -> None:
    core, namespace, log, _ = kept
    core.create_namespaced_resource_quota(namespace, {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "3"}}})

    def counted(pods: int) -> None:  # the quota's use, as the resource quota controller reports it
        status = {"hard": {"pods": "3"}, "used": {"pods": str(pods)}}
        core.patch_namespaced_resource_quota_status("pods", namespace, {"status": status})

    counted(3)
    lost = of_index(core, namespace, 2)
    end(core, namespace, lost, EVICTED)
    wait_until(lambda: "exceeded quota" in log.read_text(), "the quota's refusal of the replacement", 30, poll=0.1)
    counted(2)  # the lost pod no longer counted: a change to no pod of the Job's
    new = replacement_of(core, namespace, lost)
    assert new.metadata.labels[INDEX_LABEL] == "2"
