"""Names and labels of everything a MiniCluster creates: derived from the spec in one place."""

from __future__ import annotations

from typing import Any

from flux_minicluster.config.spec import BROKER_CONTAINER, MiniClusterSpec

__all__ = [
    "AUTOSCALER_CONTAINER", "BROKER_CONTAINER", "INDEX_LABEL", "broker_config_name", "config_secret_name",
    "curve_secret_name", "entrypoint_name", "labels", "object_metadata", "scale_config_name",
]  # fmt: skip

AUTOSCALER_CONTAINER = "autoscaler"
"""The broker pods' native sidecar that runs rank 0's autoscaler: the one container with an API token."""

INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
"""Kubernetes labels each Indexed Job pod with its index (= the broker's rank)."""
KEEPER_CONTAINER = "keeper"
"""The keeper's one container (keeper.enabled)."""
REPLACES = "minicluster.flux-framework.org/replaces"
"""The annotation on a broker pod the keeper made: the name of the lost pod it replaces."""
REVISION = "minicluster.flux-framework.org/revision"
"""The annotation on the Job: a digest of the Job as declared (resources/scheduling.py: revision), by
which the scheduling guard tells the Job it guards from the one a replacement deletes first."""
STOPPED = "minicluster.flux-framework.org/stopped"
"""The annotation the scheduling guard puts on the Job it stops (with activeDeadlineSeconds): why. A
guard that meets a Job so marked knows it for one a replacement deletes first, never its own."""
RERUN = "minicluster.flux-framework.org/rerun"
"""The annotation on the broker pods of a Job run again (`rerun`, when set): its number. The pod
template changes with it, and a Job's pod template cannot change in place: the Job is replaced."""
SKIP_AWAIT = "pulumi.com/skipAwait"
"""pulumi-kubernetes takes the object as ready once created."""
AWAIT_TIMEOUT = "pulumi.com/timeoutSeconds"
"""How long pulumi-kubernetes waits for the object to be ready (10 minutes when not set)."""
OWNER = "minicluster.flux-framework.org/stack"
"""The annotation on every object a MiniCluster names itself (the Job, its Services, the access objects,
...): the Pulumi stack that declares it, `<organization>/<project>/<stack>`. pulumi-kubernetes 4.25
creates by server-side apply, which takes over an object of that name that is already there, and the
stack's `pulumi destroy` would then delete it: the dry run (cluster/admission/dry_run.py) refuses a name
that another stack, or no Pulumi stack, holds."""
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
"""Kubernetes labels each Job's pod with the Job's uid (since 1.27; the floor is 1.29)."""


AUTO_NAMED_KINDS = frozenset({"Secret", "ConfigMap"})
"""The kinds of the objects whose content the MiniCluster holds: pulumi-kubernetes names each anew
(resources/minicluster.py, _content); every other object keeps the name its builder gives it."""

# The Secrets and ConfigMaps below are auto-named by pulumi-kubernetes (`<name>-<8 hex>`, new at each
# replacement): these are the names render.py prints and the Pulumi resources' names. Whatever refers
# to one of them (a volume, an env var, an RBAC rule) takes the created object's name, never these.


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


def object_metadata(spec: MiniClusterSpec, name: Any, component: str, **extra: Any) -> dict[str, Any]:
    """An object's metadata: its name (an Output in the Pulumi program; None for generateName), the
    namespace and the MiniCluster's labels."""
    named = {} if name is None else {"name": name}
    return {**named, "namespace": spec.namespace, "labels": labels(spec, component), **extra}


def with_annotation(manifest: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """The manifest with one more annotation on the object's own metadata: a Job's pod template stays as
    it was (a new one would replace a running Job)."""
    metadata = manifest["metadata"]
    return {**manifest, "metadata": {**metadata, "annotations": {**metadata.get("annotations", {}), key: value}}}


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


def keeper_name(spec: MiniClusterSpec) -> str:
    """The keeper's Deployment, ServiceAccount, Role and RoleBinding (keeper.enabled)."""
    return f"{spec.name}-keeper"


def keeper_scripts_name(spec: MiniClusterSpec) -> str:
    """The keeper's ConfigMap of scripts (auto-named in Pulumi, like every ConfigMap of content)."""
    return f"{spec.name}-keeper-scripts"


def admission_policy_name(spec: MiniClusterSpec) -> str:
    """The autoscaler's ValidatingAdmissionPolicy and its binding (autoscale.admissionPolicy): cluster-
    scoped, so the namespace is in the name."""
    return f"minicluster-autoscaler.{spec.namespace}.{spec.name}"
