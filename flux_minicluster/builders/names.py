"""Names and labels of everything a MiniCluster creates: derived from the spec in one place."""

from __future__ import annotations

from flux_minicluster.config.spec import BROKER_CONTAINER, MiniClusterSpec

__all__ = [
    "BROKER_CONTAINER", "INDEX_LABEL", "broker_config_name", "config_secret_name", "curve_secret_name",
    "entrypoint_name", "labels", "scale_config_name",
]  # fmt: skip

INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
"""Kubernetes labels each Indexed Job pod with its index (= the broker's rank)."""


def curve_secret_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-curve"


def config_secret_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-config-secret"


def broker_config_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-broker-config"


def entrypoint_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-entrypoint"


def scale_config_name(spec: MiniClusterSpec) -> str:
    return f"{spec.name}-scale"


def pod_group_name(spec: MiniClusterSpec) -> str:
    """The gang's PodGroup (scheduler.gang): named as the Job, whose pods it holds."""
    return spec.name


def labels(spec: MiniClusterSpec, component: str) -> dict[str, str]:
    """The MiniCluster's own labels; the broker pods' ones are also the Services' selector."""
    return {
        "app.kubernetes.io/name": "minicluster",
        "app.kubernetes.io/instance": spec.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "pulumi",
    }


def autoscaler_name(spec: MiniClusterSpec) -> str:
    """The autoscaler's ServiceAccount, Role and RoleBinding (autoscale.enabled)."""
    return f"{spec.name}-autoscaler"
