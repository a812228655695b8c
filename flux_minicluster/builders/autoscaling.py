"""The Kubernetes API access of the broker pods: none unless the stack asks, and for the autoscaler
(autoscale.enabled) a ServiceAccount whose Role allows exactly what rank 0's autoscaler does: get and
patch this MiniCluster's own Job and scale ConfigMap, and create Events. Pure."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders.names import autoscaler_name, labels, scale_config_name
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
RBAC_API = "rbac.authorization.k8s.io/v1"


def service_account_name(spec: MiniClusterSpec) -> str | None:
    """The pods' service account: the stack's, else the autoscaler's own, else the namespace's default."""
    if spec.pod.service_account_name is not None:
        return spec.pod.service_account_name
    return autoscaler_name(spec) if spec.autoscale.enabled else None


def api_token(spec: MiniClusterSpec) -> bool | None:
    """Flux needs no Kubernetes API: no token in the pods, unless the stack asks for one, names the
    service account they run as (then Kubernetes' default, true, holds), or the autoscaler needs it."""
    pod = spec.pod
    if pod.automount_service_account_token is not None:
        return pod.automount_service_account_token
    if spec.autoscale.enabled:
        return True
    return None if pod.service_account_name is not None else False


def rules(spec: MiniClusterSpec) -> list[Manifest]:
    """What the autoscaler may do, and nothing more: resourceNames pin it to its own Job and ConfigMap
    (Events cannot be pinned: their names are made at creation)."""
    return [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [spec.name], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [scale_config_name(spec)],
         "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]  # fmt: skip


def objects(spec: MiniClusterSpec) -> list[Manifest]:
    """The ServiceAccount (unless the stack names its own, which the Role is then bound to), the Role
    and its RoleBinding; none without autoscale."""
    if not spec.autoscale.enabled:
        return []
    name = autoscaler_name(spec)
    metadata = {"name": name, "namespace": spec.namespace, "labels": labels(spec, "autoscaler")}
    account = service_account_name(spec)
    found: list[Manifest] = []
    if spec.pod.service_account_name is None:
        found.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata})
    found.append({"apiVersion": RBAC_API, "kind": "Role", "metadata": metadata, "rules": rules(spec)})
    found.append({
        "apiVersion": RBAC_API, "kind": "RoleBinding", "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": spec.namespace}],
    })  # fmt: skip
    return found
