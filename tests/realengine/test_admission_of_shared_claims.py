"""Claims every broker pod mounts, on the real API server: the admission check reads each claim's access
modes as the API server gives them (a claim no volume is bound to: the modes it asks for) and warns of
the one that mounts on one node only, by its key; the ReadWriteMany one passes."""

from __future__ import annotations

import pytest
from kubernetes import client

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.harness import OWNER


def made(core: client.CoreV1Api, namespace: str, name: str, mode: str) -> None:
    spec = client.V1PersistentVolumeClaimSpec(
        access_modes=[mode], resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"})
    )
    core.create_namespaced_persistent_volume_claim(
        namespace, client.V1PersistentVolumeClaim(metadata=client.V1ObjectMeta(name=name), spec=spec)
    )


def test_the_claim_of_one_node_is_warned_of_by_its_key(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    core = client.CoreV1Api(admin)
    made(core, namespace, "results", "ReadWriteOnce")
    made(core, namespace, "inputs", "ReadWriteMany")
    volumes = {"results": {"path": "/results", "claimName": "results"},
               "inputs": {"path": "/inputs", "claimName": "inputs"}}  # fmt: skip
    raw = config(namespace=namespace, volumes=volumes)
    verdict = admission.check(load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), Access(), OWNER)
    assert verdict.refused is None
    claims = [warning for warning in verdict.warnings if "PersistentVolumeClaim" in warning]
    assert claims == [
        "admission check: the PersistentVolumeClaim 'results' that minicluster:volumes.results.claimName names is "
        "ReadWriteOnce: it mounts on one node only, and every broker pod (4) mounts it, so they run on that node "
        "alone (one placed on another waits with a Multi-Attach error); use a ReadWriteMany claim, or pin every pod "
        "to one node (minicluster:pod.nodeSelector kubernetes.io/hostname)"
    ]
