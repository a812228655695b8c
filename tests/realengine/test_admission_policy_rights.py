"""autoscale.admissionPolicy asks for cluster-scoped objects: a user who may create the MiniCluster's
objects in their namespace but no ValidatingAdmissionPolicy is refused by key, before anything is
created (the dry run, as the real API server's RBAC judges it); the cluster's admin is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from flux_minicluster.builders.names import admission_policy_name
from flux_minicluster.cluster import admission
from flux_minicluster.cluster.kube import Access
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.engines.control_plane import ControlPlane
from tests.harness import OWNER
from tests.realengine.accounts import kubeconfig_for

AUTOSCALED = {"command": None, "size": 1, "maxSize": 4, "autoscale": {"enabled": True, "admissionPolicy": True}}
NAMESPACED = {
    "": ["secrets", "configmaps", "services", "pods", "serviceaccounts"], "batch": ["jobs"],
    "rbac.authorization.k8s.io": ["roles", "rolebindings"],
}  # fmt: skip


def spec(namespace: str) -> MiniClusterSpec:
    raw = config(**AUTOSCALED, namespace=namespace)
    return load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev")


def namespace_owner(admin: client.ApiClient, plane: ControlPlane, namespace: str, tmp: Path) -> Path:
    """A kubeconfig for an account that may do anything with the MiniCluster's kinds in `namespace`."""
    rules = [{"apiGroups": [group], "resources": kinds, "verbs": ["*"]} for group, kinds in NAMESPACED.items()]
    return kubeconfig_for(admin, plane, namespace, tmp, rules)


def test_a_user_who_may_not_create_the_policy_is_refused_by_key_before_anything_is_created(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", str(namespace_owner(admin, control_plane, namespace, tmp_path)))
    verdict = admission.check(spec(namespace), Access(), OWNER)
    assert verdict.refused is not None
    assert (
        "minicluster:autoscale.admissionPolicy: the ValidatingAdmissionPolicy is cluster-scoped, and creating it is "
        "refused: validatingadmissionpolicies.admissionregistration.k8s.io is forbidden: User "
        f'"system:serviceaccount:{namespace}:deployer" cannot create resource "validatingadmissionpolicies" in API '
        'group "admissionregistration.k8s.io" at the cluster scope'
    ) in verdict.refused
    assert "ask the cluster's admin for that right, or unset minicluster:autoscale.admissionPolicy" in verdict.refused
    assert client.BatchV1Api(admin).list_namespaced_job(namespace).items == []
    # Cluster-scoped: other tests' policies may exist meanwhile; this MiniCluster's (its namespace is in
    # the name) must not.
    policies: list[Any] = client.AdmissionregistrationV1Api(admin).list_validating_admission_policy().items
    assert admission_policy_name(spec(namespace)) not in [policy.metadata.name for policy in policies]


def test_the_clusters_admin_passes_the_dry_run(
    admin: client.ApiClient, control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    verdict = admission.check(spec(namespace), Access(), OWNER)
    assert verdict.refused is None or "admissionPolicy" not in verdict.refused, verdict.refused
