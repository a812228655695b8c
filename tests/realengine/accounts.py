"""Users of the real API server other than its admin: a service account of a test's namespace, bound to
a Role of the test's choosing, with a kubeconfig that authenticates as it (a TokenRequest token).

The RBAC authorizer reads Roles and RoleBindings from its own informer cache, so a binding just created
may not count yet: the account is handed out only once the authorizer itself (a SubjectAccessReview)
grants every verb the rules name. Without that wait a test saw `cannot create resource "pods"` from a
Role that allows it, about one run in ten under load."""

from __future__ import annotations

import time
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
    granted(admin, f"system:serviceaccount:{namespace}:deployer", namespace, rules)
    token = (token_dir(admin, tmp / "deployer", namespace, "deployer", plane.ca) / "token").read_text()
    kubeconfig: dict[str, Any] = yaml.safe_load(plane.kubeconfig.read_text())
    kubeconfig["users"] = [{"name": "admin", "user": {"token": token}}]
    path = tmp / "deployer.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    return path


def granted(
    admin: client.ApiClient, user: str, namespace: str, rules: list[dict[str, Any]], timeout: float = 30
) -> None:
    """Wait until the API server's authorizer allows `user` every verb on every resource of `rules`."""
    reviews = client.AuthorizationV1Api(admin)
    asks = [
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]
    deadline = time.monotonic() + timeout
    while asks:
        group, resource, verb = asks[0]
        name, _, sub = resource.partition("/")
        attributes = client.V1ResourceAttributes(
            namespace=namespace, group=group, resource=name, subresource=sub or None, verb=verb
        )
        review = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(user=user, resource_attributes=attributes)
        )
        status = reviews.create_subject_access_review(review).status
        if status is not None and status.allowed:
            asks.pop(0)
            continue
        # The authorizer's cache has no event to watch from outside; it catches up within milliseconds.
        assert time.monotonic() < deadline, f"the authorizer never granted {user} {verb} on {resource}"
        time.sleep(0.05)
