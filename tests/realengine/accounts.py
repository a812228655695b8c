"""Users of the real API server other than its admin: a service account of a test's namespace, bound to
a Role of the test's choosing, with a kubeconfig that authenticates as it (a TokenRequest token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.kubelet.api_reach import token_dir
from tests.realengine.conftest import create


def kubeconfig_for(
    admin: client.ApiClient, plane: ControlPlane, namespace: str, tmp: Path, rules: list[dict[str, Any]]
) -> Path:
    """A kubeconfig for the account `deployer` of `namespace`, which may do what `rules` allow there."""
    metadata = {"name": "deployer", "namespace": namespace}
    for obj in (
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": metadata,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
         "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": namespace}]},
    ):  # fmt: skip
        create(admin, obj)
    token = (token_dir(admin, tmp / "deployer", namespace, "deployer", plane.ca) / "token").read_text()
    kubeconfig: dict[str, Any] = yaml.safe_load(plane.kubeconfig.read_text())
    kubeconfig["users"] = [{"name": "admin", "user": {"token": token}}]
    path = tmp / "deployer.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    return path
