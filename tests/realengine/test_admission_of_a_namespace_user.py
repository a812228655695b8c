"""The admission check for a user of one namespace, who may not list the nodes or every namespace's
pods (the real API server's RBAC says so): it tells the user that the nodes' room was not judged, and
still judges the namespace's quotas against the MiniCluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.harness import OWNER
from tests.realengine.accounts import kubeconfig_for

RULES = [
    {"apiGroups": [""], "resources": ["secrets", "configmaps", "services", "pods", "resourcequotas"], "verbs": ["*"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]},
]


@pytest.fixture
def namespace_user(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_for(admin, control_plane, namespace, tmp_path, RULES)))


def verdict(namespace: str) -> admission.Verdict:
    raw = config(namespace=namespace, admission="refuse")  # size 4
    return admission.check(load_spec({f"minicluster:{k}": v for k, v in raw.items()}, "dev"), Access(), OWNER)


def test_the_nodes_room_is_said_not_judged(namespace_user: None, namespace: str) -> None:
    (warning,) = verdict(namespace).warnings
    assert warning.startswith(
        "admission check of the nodes' room skipped (the namespace's quotas were checked): access denied (403: "
    )
    assert f'User "system:serviceaccount:{namespace}:deployer" cannot list resource' in warning


def test_the_namespaces_quota_is_judged(namespace_user: None, admin: client.ApiClient, namespace: str) -> None:
    quota = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="compute"), spec=client.V1ResourceQuotaSpec(hard={"pods": "2"})
    )
    client.CoreV1Api(admin).create_namespaced_resource_quota(namespace, quota)
    refused = verdict(namespace).refused or ""
    assert f"ResourceQuota compute allows 2 of pods in namespace {namespace}" in refused, refused
    assert "4 brokers need 4" in refused
