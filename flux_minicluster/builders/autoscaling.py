"""The Kubernetes API access of the broker pods: none unless the stack asks. With autoscale.enabled, a
ServiceAccount whose Role allows exactly what rank 0's autoscaler does (get and patch this
MiniCluster's own Job and scale ConfigMap, create Events), and the autoscaler's own container: the
only one that mounts the account's token, so that no Flux job can read it. Pure; the scale
ConfigMap's name is a parameter (an Output in Pulumi: the engine names it)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders import flux_view
from flux_minicluster.builders.files import autoscaler_env, script_env
from flux_minicluster.builders.names import AUTOSCALER_CONTAINER, autoscaler_name, labels
from flux_minicluster.builders.rbac import role_and_binding
from flux_minicluster.config import paths
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
TOKEN_LIFETIME = 3607
"""Seconds a projected token lives, as Kubernetes' own automount asks (the kubelet renews it in place)."""
CLUSTER_CA = "kube-root-ca.crt"
"""The ConfigMap Kubernetes publishes in every namespace with the cluster's CA."""


def service_account_name(spec: MiniClusterSpec) -> str | None:
    """The pods' service account: the stack's, else the autoscaler's own, else the namespace's default."""
    if spec.pod.service_account_name is not None:
        return spec.pod.service_account_name
    return autoscaler_name(spec) if spec.autoscale.enabled else None


def api_token(spec: MiniClusterSpec) -> bool | None:
    """Whether Kubernetes mounts the account's token in every container. Flux needs no Kubernetes API,
    and the autoscaler's container mounts its own: no, unless the stack asks for one, or names the
    service account its pods run as (then Kubernetes' default, yes, holds)."""
    pod = spec.pod
    if pod.automount_service_account_token is not None:
        return pod.automount_service_account_token
    return None if pod.service_account_name is not None else False


def rules(spec: MiniClusterSpec, scale_config: Any) -> list[Manifest]:
    """What the autoscaler may do, and nothing more: resourceNames pin it to its own Job and scale
    ConfigMap, by the names they have (Events cannot be pinned: their names are made at creation)."""
    return [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [spec.name], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [scale_config], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]


def objects(spec: MiniClusterSpec, scale_config: Any) -> list[Manifest]:
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
    return [*found, *role_and_binding(metadata, rules(spec, scale_config), account)]


def container(spec: MiniClusterSpec, scale_config: Any) -> Manifest:
    """The autoscaler's native sidecar (an init container that keeps running: it starts before the
    broker and is stopped after it). Rank 0's runs autoscaler.py, against its broker's local socket on
    the pod's state volume, as the instance's owner (the pod's user); the others wait to be stopped. It
    alone mounts the account's token."""
    mounts: list[Manifest] = [
        {"name": paths.RUN_CONFIG_VOLUME, "mountPath": paths.RUN_CONFIG_DIR, "readOnly": True},
        {"name": paths.SCALE_VOLUME, "mountPath": paths.SCALE_DIR, "readOnly": True},
        {"name": paths.STATE_VOLUME_OF_POD, "mountPath": paths.STATE_DIR},
        {"name": paths.AUTOSCALER_TOKEN_VOLUME, "mountPath": paths.SERVICE_ACCOUNT_DIR, "readOnly": True},
        *flux_view.mounts(spec),
    ]
    found: Manifest = {
        "name": AUTOSCALER_CONTAINER,
        "image": spec.image,
        "restartPolicy": "Always",
        "command": ["/bin/bash", f"{paths.RUN_CONFIG_DIR}/{paths.AUTOSCALER_ENTRY}"],
        "env": script_env(spec) + autoscaler_env(spec, scale_config),  # no RESTful API credentials
        "volumeMounts": mounts,
    }
    if spec.image_pull_policy is not None:
        found["imagePullPolicy"] = spec.image_pull_policy
    return found


def token_volume() -> Manifest:
    """The account's token, the cluster's CA and the namespace, as Kubernetes' automount projects them."""
    sources = [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_LIFETIME}},
        {"configMap": {"name": CLUSTER_CA, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}},
    ]  # fmt: skip
    return {"name": paths.AUTOSCALER_TOKEN_VOLUME, "projected": {"sources": sources}}
