"""The keeper (keeper.enabled): a Deployment of one pod that replaces a broker pod lost to a disruption
at once (pod_scripts/keeper.py says when), with its ServiceAccount, the Role that lets it read its Job
and create pods in the namespace, and a ConfigMap of its scripts. Its pod is the only one with that
right, and runs nothing but keeper.py: no Flux, no user code. Pure; the scripts' ConfigMap name is a
parameter (an Output in Pulumi: the engine names it, so a change of the scripts rolls the pod)."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders import pod_security, pod_template
from flux_minicluster.builders.files import script
from flux_minicluster.builders.names import (
    INDEX_LABEL,
    KEEPER_CONTAINER,
    REPLACES,
    keeper_name,
    keeper_scripts_name,
    labels,
    object_metadata,
)
from flux_minicluster.builders.rbac import role_and_binding
from flux_minicluster.config import paths
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]
COMPONENT = "keeper"
SCRIPTS = (paths.KEEPER_SCRIPT, paths.CLUSTER_API_MODULE)
RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}
"""A watch and a request now and then: Python's own memory, with room to spare."""


def rules(spec: MiniClusterSpec) -> list[Manifest]:
    """What the keeper does, and nothing more: read its own Job (the pod template), follow the pods, and
    create one. RBAC cannot pin a create to the pods of one Job: the right covers the namespace."""
    return [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [spec.name], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "create"]},
    ]


def access(spec: MiniClusterSpec) -> list[Manifest]:
    """Its ServiceAccount, Role and RoleBinding; none without keeper.enabled."""
    if not spec.keeper.enabled:
        return []
    metadata = object_metadata(spec, keeper_name(spec), COMPONENT)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}
    return [account, *role_and_binding(metadata, rules(spec), metadata["name"])]


def scripts_config_map(spec: MiniClusterSpec) -> Manifest | None:
    if not spec.keeper.enabled:
        return None
    data = {name: script(name) for name in SCRIPTS}
    metadata = object_metadata(spec, keeper_scripts_name(spec), COMPONENT)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def environment(spec: MiniClusterSpec) -> list[Manifest]:
    """keeper.py's settings: the Job, the contracts it shares with the builders, and whether rank 0 is
    replaced while it stops (a state volume's lock holds its new broker back)."""
    settings = {
        "MC_JOB": spec.name, "MC_INDEX_LABEL": INDEX_LABEL, "MC_REPLACES": REPLACES,
        "MC_RANK0_WHILE_STOPPING": "1" if spec.state_volume is not None else "0",
        "MC_SERVICE_ACCOUNT_DIR": paths.SERVICE_ACCOUNT_DIR,
    }  # fmt: skip
    return [{"name": key, "value": value} for key, value in settings.items()]


def pod_spec(spec: MiniClusterSpec, scripts_config: Any) -> Manifest:
    """One container, python3 running keeper.py from the scripts' ConfigMap, as the keeper's account
    (Kubernetes mounts its token: the pod runs nothing else). It goes where the brokers may go (their
    nodeSelector, tolerations and pull secrets), and satisfies the Pod Security profile they do."""
    container: Manifest = {
        "name": KEEPER_CONTAINER,
        "image": spec.keeper.image or spec.image,
        "command": ["python3", f"{paths.RUN_CONFIG_DIR}/{paths.KEEPER_SCRIPT}"],
        "env": environment(spec),
        "resources": RESOURCES,
        "volumeMounts": [{"name": paths.RUN_CONFIG_VOLUME, "mountPath": paths.RUN_CONFIG_DIR, "readOnly": True}],
    }
    if spec.image_pull_policy is not None:
        container["imagePullPolicy"] = spec.image_pull_policy
    found: Manifest = {
        "serviceAccountName": keeper_name(spec),
        "containers": [container],
        "volumes": [{"name": paths.RUN_CONFIG_VOLUME, "configMap": {"name": scripts_config}}],
    }
    return pod_security.secure(spec, {**found, **pod_template.placement(spec)})


def deployment(spec: MiniClusterSpec, scripts_config: Any) -> Manifest:
    """One replica, and never two at once (Recreate): one keeper decides for the Job. pulumi-kubernetes
    waits for its pod to run, for its own 10 minutes: an image pull may take minutes on a node that lacks
    the image, while one that fails shows its reason in that wait, every 10 s (docs/lost-pods.md)."""
    selector = labels(spec, COMPONENT)
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": object_metadata(spec, keeper_name(spec), COMPONENT),
        "spec": {
            "replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": dict(selector)}, "spec": pod_spec(spec, scripts_config)},
        },
    }  # fmt: skip


def pod(spec: MiniClusterSpec) -> Manifest:
    """The keeper's pod as its Deployment asks for it, for the admission check's dry run."""
    metadata = object_metadata(spec, f"{keeper_name(spec)}-dry-run", COMPONENT)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": pod_spec(spec, keeper_scripts_name(spec))}  # fmt: skip
