"""A Role and its RoleBinding to a service account of the same namespace: the API access that the
autoscaler's container and the keeper's pod are each given (autoscaling.py, keeper.py). Pure."""

from __future__ import annotations

from typing import Any

Manifest = dict[str, Any]
RBAC_API = "rbac.authorization.k8s.io/v1"


def role_and_binding(metadata: Manifest, role_rules: list[Manifest], account: Any) -> list[Manifest]:
    """A Role of `role_rules`, named and labelled by `metadata`, and its binding to the service account
    `account` of the same namespace."""
    return [
        {"apiVersion": RBAC_API, "kind": "Role", "metadata": metadata, "rules": role_rules},
        {"apiVersion": RBAC_API, "kind": "RoleBinding", "metadata": metadata,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": metadata["name"]},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": metadata["namespace"]}]},
    ]  # fmt: skip
